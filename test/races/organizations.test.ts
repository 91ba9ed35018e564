import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { elevate } from '../helpers/elevation.js';
import { race } from '../helpers/identities.js';
import {
  call,
  createOrganization,
  join,
  member,
  ORGS,
  orgClaims,
  remove,
  setRole,
  switchTo,
  uniqueSlug,
} from '../organizations/support.js';
import { DEFAULT_POLICY, enrolVerified, post } from '../second-factors/helpers.js';
import { renew } from '../sessions/support.js';
import { expectRefusals, ROUNDS, raceApp, statuses } from './support.js';

// Organizations under concurrency, on the PostgreSQL server: the last-owner rule holds against two
// demotions at once (the organization row lock), and one slug makes one organization (the index).
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

async function owners(organizationId: string): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM organization_memberships
    WHERE organization_id = ${organizationId} AND role = 'owner'`.execute(t.ctx.database.db);
  return r.rows[0].n;
}

describe('organizations at once', () => {
  it(`two demotions of the last two owners at once: exactly one succeeds, one owner is left (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await member(t);
      const b = await member(t);
      const { id } = await createOrganization(t, a.token);
      await join(t, id, b.person.identityId, 'owner');

      // Each owner demotes themselves: both see two owners unless the count is serialised.
      const answers = await race(2, (i) => {
        const who = i === 0 ? a : b;
        return setRole(t.app, who.token, id, who.person.identityId, 'admin');
      });

      expect(statuses(answers), `round ${round}: ${answers.map((r) => r.body).join(' ')}`).toEqual([
        200, 409,
      ]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 409),
        409,
        'organization.last_owner',
      );
      expect(await owners(id)).toBe(1);
    }
  });

  it(`an owner demoting the other while that one leaves: one owner is always left (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await member(t);
      const b = await member(t);
      const { id } = await createOrganization(t, a.token);
      await join(t, id, b.person.identityId, 'owner');
      const answers = await race(2, (i) =>
        i === 0
          ? setRole(t.app, a.token, id, b.person.identityId, 'member')
          : call(t.app, 'DELETE', `${ORGS}/${id}/members/${a.person.identityId}`, a.token),
      );
      // Demoted first: the leaving last owner is refused. Left first: the demotion's caller is no
      // longer a member. Never both.
      expect(
        [
          [200, 409],
          [204, 404],
        ],
        `round ${round}: ${answers.map((r) => r.body).join(' ')}`,
      ).toContainEqual(statuses(answers));
      expect(await owners(id)).toBe(1);
    }
  });

  it(`a switch and the member's removal at once: no deadlock, and a removed member is never active (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const owner = await member(t);
      const m = await member(t);
      const { id } = await createOrganization(t, owner.token);
      await join(t, id, m.person.identityId, 'admin');
      const answers = await race(2, (i) =>
        i === 0 ? switchTo(t.app, m.token, id) : remove(t.app, owner.token, id, m.person.identityId),
      );
      const [switched, removed] = answers;
      expect(removed.statusCode, `round ${round}: ${removed.body}`).toBe(204);
      // Switched first (then cleared by the removal), or refused because the removal came first.
      expect([200, 404], `round ${round}: ${switched.body}`).toContain(switched.statusCode);
      const r = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM sessions
        WHERE identity_id = ${m.person.identityId} AND active_organization_id IS NOT NULL`.execute(
        t.ctx.database.db,
      );
      expect(r.rows[0].n).toBe(0);
      const renewed = await renew(t.app, m.grant.refreshToken);
      expect(orgClaims(renewed.json().data.accessToken).org_id).toBeUndefined();
    }
  });

  async function activeSessions(identityId: string): Promise<number> {
    const r = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM sessions
      WHERE identity_id = ${identityId} AND active_organization_id IS NOT NULL`.execute(t.ctx.database.db);
    return r.rows[0].n;
  }

  it(`a switch and the removal of the member's last second factor at once: never acting without one (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const owner = await member(t);
      const m = await member(t);
      const { id } = await createOrganization(t, owner.token);
      await join(t, id, m.person.identityId, 'member');
      const factor = await enrolVerified(t, m.person, m.grant, DEFAULT_POLICY);
      expect(
        (await call(t.app, 'PATCH', `${ORGS}/${id}`, owner.token, { requireSecondFactor: true })).statusCode,
      ).toBe(200);
      const elevation = await elevate(t, m.token, m.person.email, {
        secret: factor.secret,
        policy: DEFAULT_POLICY,
      });
      const [switched, removed] = await race(2, (i) =>
        i === 0
          ? switchTo(t.app, m.token, id)
          : post(t.app, `/second-factors/${factor.id}/removals`, { token: m.token, elevation }),
      );
      expect(removed.statusCode, `round ${round}: ${removed.body}`).toBe(204);
      // Switched first (then cleared by the removal), or refused because the removal came first.
      expect([200, 403], `round ${round}: ${switched.body}`).toContain(switched.statusCode);
      expect(await activeSessions(m.person.identityId), `round ${round}`).toBe(0);
      const renewed = await renew(t.app, m.grant.refreshToken);
      expect(orgClaims(renewed.json().data.accessToken).org_id).toBeUndefined();
    }
  });

  it(`a switch and turning the second-factor policy on at once: a member without one is never left acting (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const owner = await member(t);
      const m = await member(t);
      const { id } = await createOrganization(t, owner.token);
      await join(t, id, m.person.identityId, 'member');
      const [switched, patched] = await race(2, (i) =>
        i === 0
          ? switchTo(t.app, m.token, id)
          : call(t.app, 'PATCH', `${ORGS}/${id}`, owner.token, { requireSecondFactor: true }),
      );
      expect(patched.statusCode, `round ${round}: ${patched.body}`).toBe(200);
      expect([200, 403], `round ${round}: ${switched.body}`).toContain(switched.statusCode);
      expect(await activeSessions(m.person.identityId), `round ${round}`).toBe(0);
    }
  });

  it(`two creations of one slug at once: one 201, one 409 (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await member(t);
      const b = await member(t);
      const slug = uniqueSlug('race');
      const answers = await race(2, (i) =>
        call(t.app, 'POST', ORGS, (i === 0 ? a : b).token, { name: `Race ${i}`, slug }),
      );
      expect(statuses(answers), `round ${round}: ${answers.map((r) => r.body).join(' ')}`).toEqual([
        201, 409,
      ]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 409),
        409,
        'organization.slug_taken',
      );
      const r = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM organizations WHERE slug = ${slug}`.execute(t.ctx.database.db);
      expect(r.rows[0].n).toBe(1);
    }
  });
});
