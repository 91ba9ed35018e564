import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { race } from '../helpers/identities.js';
import { call, createOrganization, member, ORGS } from '../organizations/support.js';
import { expectRefusals, ROUNDS, raceApp, statuses } from './support.js';

// Verified domains under concurrency, on the PostgreSQL server: two organizations that both
// published their TXT record verify one domain at once. Each locks only its own organization row,
// so nothing in the code serialises them: the partial unique index on verified domains does, and
// exactly one wins.
let t: TestApp;
let dns: TestDns;

beforeAll(async () => {
  dns = await startDns();
  t = await raceApp({ DNS_RESOLVERS: dns.address });
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
});

async function claimed(domain: string) {
  const owner = await member(t);
  const org = await createOrganization(t, owner.token);
  const res = await call(t.app, 'POST', `${ORGS}/${org.id}/domains`, owner.token, { domain });
  expect(res.statusCode, res.body).toBe(201);
  const d = res.json().data as { id: string; txtRecord: { name: string; value: string } };
  return { owner, org, d };
}

describe('domains at once', () => {
  it(`two organizations verify one domain at once: exactly one wins, one verified row (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const domain = `race-${round}-${Date.now().toString(36)}.example.com`;
      const a = await claimed(domain);
      const b = await claimed(domain);
      // Both records are published: each organization proves control, only one may hold the domain.
      dns.set(a.d.txtRecord.name, a.d.txtRecord.value, b.d.txtRecord.value);

      const answers = await race(2, (i) => {
        const who = i === 0 ? a : b;
        return call(
          t.app,
          'POST',
          `${ORGS}/${who.org.id}/domains/${who.d.id}/verifications`,
          who.owner.token,
        );
      });

      expect(statuses(answers), `round ${round}: ${answers.map((r) => r.body).join(' ')}`).toEqual([
        200, 409,
      ]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 409),
        409,
        'organization.domain_taken',
      );
      const r = await sql<{ n: number; events: number }>`
        SELECT
          (SELECT count(*)::int FROM organization_domains WHERE domain = ${domain} AND verified_at IS NOT NULL) AS n,
          (SELECT count(*)::int FROM events WHERE type = 'organization.domain.verified'
             AND organization_id IN (${a.org.id}, ${b.org.id})) AS events`.execute(t.ctx.database.db);
      expect(r.rows[0]).toEqual({ n: 1, events: 1 });
    }
  }, 120_000);
});
