import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { elevate, elevated } from '../helpers/elevation.js';
import { createPerson, type Grant, type Person, race, signIn } from '../helpers/identities.js';
import { createOrganization, join } from '../organizations/support.js';
import { ROUNDS, raceApp, scalar } from './support.js';

// The person's own deletion (POST /account/deletions) racing what could leave an organization
// without an owner, or a second deletion of the same account: one outcome each time.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

interface Signed {
  person: Person;
  grant: Grant;
  headers: Record<string, string>;
}

async function signedElevated(person?: Person): Promise<Signed> {
  const p = person ?? (await createPerson(t.ctx));
  const grant = await signIn(t.app, p);
  const elevation = await elevate(t, grant.accessToken, p.email);
  return { person: p, grant, headers: elevated(grant.accessToken, elevation) };
}

const deleteAccount = (s: Signed): Promise<LightMyRequestResponse> =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/account/deletions',
    headers: s.headers,
    payload: { identifier: s.person.email },
  });

const owners = (organizationId: string) =>
  scalar(
    t,
    sql`SELECT count(*)::int AS n FROM organization_memberships WHERE organization_id = ${organizationId} AND role = 'owner'`,
  );
const members = (organizationId: string) =>
  scalar(
    t,
    sql`SELECT count(*)::int AS n FROM organization_memberships WHERE organization_id = ${organizationId}`,
  );
const erased = (identityId: string) =>
  scalar(
    t,
    sql`SELECT count(*)::int AS n FROM identities WHERE id = ${identityId} AND erased_at IS NOT NULL`,
  );

describe('self-deletion races', () => {
  it(`an ownership transfer to the member deleting: one wins, the organization keeps an owner (${ROUNDS} rounds)`, async () => {
    const seen = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const owner = await signedElevated();
      const leaving = await signedElevated();
      const org = await createOrganization(t, owner.grant.accessToken);
      await join(t, org.id, leaving.person.identityId, 'member');
      const [transfer, deletion] = await race(2, (i) =>
        i === 0
          ? t.app.inject({
              method: 'POST',
              url: `/api/v1/organizations/${org.id}/ownership-transfers`,
              headers: owner.headers,
              payload: { identityId: leaving.person.identityId },
            })
          : deleteAccount(leaving),
      );
      const outcome = `${transfer.statusCode}/${deletion.statusCode}`;
      seen.add(outcome);
      if (deletion.statusCode === 204) {
        // The deletion went first: the transfer found no such member; the owner stays the owner.
        expect(transfer.statusCode, transfer.body).toBe(404);
        expect(transfer.json().code).toBe('organization.member_not_found');
        expect(await erased(leaving.person.identityId)).toBe(1);
        expect(await members(org.id)).toBe(1);
      } else {
        // The transfer went first: the new sole owner of an organization with a member is refused.
        expect(transfer.statusCode, transfer.body).toBe(201);
        expect(deletion.statusCode, deletion.body).toBe(409);
        expect(deletion.json().code).toBe('identity.account_deletion_last_owner');
        expect(await erased(leaving.person.identityId)).toBe(0);
        expect(await members(org.id)).toBe(2);
      }
      expect(await owners(org.id)).toBe(1);
    }
    expect([...seen].every((o) => o === '404/204' || o === '201/409')).toBe(true);
  });

  it(`two co-owners deleting at once, with a third member: one goes, the other is refused (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await signedElevated();
      const b = await signedElevated();
      const third = await createPerson(t.ctx);
      const org = await createOrganization(t, a.grant.accessToken);
      await join(t, org.id, b.person.identityId, 'owner');
      await join(t, org.id, third.identityId, 'member');
      const answers = await race(2, (i) => deleteAccount(i === 0 ? a : b));
      const codes = answers.map((r) => r.statusCode).sort();
      expect(codes, answers.map((r) => r.body).join('\n')).toEqual([204, 409]);
      expect(answers.find((r) => r.statusCode === 409)?.json().code).toBe(
        'identity.account_deletion_last_owner',
      );
      expect(await owners(org.id)).toBe(1);
      expect(await members(org.id)).toBe(2);
    }
  });

  it(`a second deletion of the same account from another session: one erasure (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const first = await signedElevated();
      const second = await signedElevated(first.person);
      const answers = await race(2, (i) => deleteAccount(i === 0 ? first : second));
      const codes = answers.map((r) => r.statusCode).sort();
      expect(codes, answers.map((r) => r.body).join('\n')).toEqual([204, 401]);
      expect(answers.find((r) => r.statusCode === 401)?.json().code).toBe('identity.session_required');
      expect(await auditCount(t, 'identity.erased', first.person.identityId)).toBe(1);
      expect(
        await scalar(
          t,
          sql`SELECT count(*)::int AS n FROM events WHERE identity_id = ${first.person.identityId} AND type = 'identity.erased'`,
        ),
      ).toBe(1);
    }
  });
});
