import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '../../src/platform/audit/audit.js';
import { deriveKey } from '../../src/platform/crypto/keys.js';
import { adminEnv } from '../helpers/admin.js';
import type { TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import { randomSuffix } from '../helpers/oidc.js';
import { adminCall } from '../oidc/support.js';
import { expectRefusals, ROUNDS, raceApp, scalar, statuses } from './support.js';

// The operators' client registry (docs/admin.md, "OpenID Provider clients"): two creations of one
// client id race on the primary key; two changes sent with the same If-Match race on the
// compare-and-set of updated_at. Exactly one of each wins, and the loser writes nothing.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp(adminEnv());
});
afterAll(async () => {
  await t?.close();
});

const CONTENDERS = 2;

const clientBody = (clientId: string, name: string) => ({
  client_id: clientId,
  client_name: name,
  redirect_uris: ['https://race.example/callback'],
  grant_types: ['authorization_code', 'client_credentials'],
});

describe('two creations of one client id', () => {
  it(`exactly one answers 201, the other 409; one row, one record (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const clientId = `race-${round}-${randomSuffix()}`;
      const answers = await race(CONTENDERS, (i) =>
        adminCall(t.admin!, 'POST', '/oidc-clients', { payload: clientBody(clientId, `Contender ${i}`) }),
      );
      expect(statuses(answers), answers.map((r) => r.body).join('\n')).toEqual([201, 409]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 409),
        409,
        'admin.oidc_client_exists',
      );
      const winner = answers.find((r) => r.statusCode === 201)!.json().data;
      const row = await sql<{ metadata: { client_name: string }; secret_hash: string }>`
        SELECT metadata, secret_hash FROM oidc_clients WHERE client_id = ${clientId}`.execute(
        t.ctx.database.db,
      );
      expect(row.rows).toHaveLength(1);
      // The row is the winner's, and only the winner's secret works.
      expect(row.rows[0].metadata.client_name).toBe(winner.client_name);
      const records = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM audit_records
            WHERE name = 'admin.oidc_client.created' AND target = ${`oidc-client:${clientId}`}`,
      );
      expect(records).toBe(1);
    }
  });
});

describe('two changes with the same If-Match', () => {
  it(`exactly one answers 200, the other 412; the row holds the winner's change (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const clientId = `patch-${round}-${randomSuffix()}`;
      const created = await adminCall(t.admin!, 'POST', '/oidc-clients', {
        payload: clientBody(clientId, 'Original'),
      });
      expect(created.statusCode, created.body).toBe(201);
      const etag = String(created.headers.etag);
      const answers = await race(CONTENDERS, (i) =>
        adminCall(t.admin!, 'PATCH', `/oidc-clients/${clientId}`, {
          payload: { client_name: `Winner ${i}` },
          headers: { 'if-match': etag },
        }),
      );
      expect(statuses(answers), answers.map((r) => r.body).join('\n')).toEqual([200, 412]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 412),
        412,
        'precondition.failed',
      );
      const winner = answers.find((r) => r.statusCode === 200)!;
      const read = await adminCall(t.admin!, 'GET', `/oidc-clients/${clientId}`);
      expect(read.json().data.client_name).toBe(winner.json().data.client_name);
      expect(read.headers.etag).toBe(winner.headers.etag);
      const records = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM audit_records
            WHERE name = 'admin.oidc_client.updated' AND target = ${`oidc-client:${clientId}`}`,
      );
      expect(records).toBe(1);
    }
    const result = await verifyChain(t.ctx.database.db, deriveKey(t.config.secretsKey, 'audit-seal'));
    expect(result).toMatchObject({ ok: true });
  });
});
