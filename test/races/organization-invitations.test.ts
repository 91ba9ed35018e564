import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, adminEnv } from '../helpers/admin.js';
import type { TestApp } from '../helpers/app.js';
import { race, signIn } from '../helpers/identities.js';
import { messagesTo } from '../helpers/outbox.js';
import { call, createOrganization, member, ORGS } from '../organizations/support.js';
import { expectRefusals, ROUNDS, raceApp, statuses } from './support.js';

// Invitations under concurrency, on the PostgreSQL server: one invitation makes one member, however
// many acceptances of it run at once (one conditional UPDATE under the organization's row lock, in
// the transaction of the membership insert).
let t: TestApp;

beforeAll(async () => {
  t = await raceApp(adminEnv());
});
afterAll(async () => {
  await t?.close();
});

const ACCEPTANCES = '/api/v1/organization-invitations/acceptances';

async function invitation(): Promise<{
  organizationId: string;
  token: string;
  invitee: Awaited<ReturnType<typeof member>>;
}> {
  const owner = await member(t);
  const invitee = await member(t);
  const { id } = await createOrganization(t, owner.token);
  const res = await call(t.app, 'POST', `${ORGS}/${id}/invitations`, owner.token, {
    identifierType: 'email',
    identifier: invitee.person.email,
    role: 'admin',
  });
  expect(res.statusCode, res.body).toBe(201);
  const [message] = messagesTo(t.config.dataDir, invitee.person.email);
  const token = /\/account\/#\/invitations\/([A-Za-z0-9_-]{43})$/m.exec(message.text)?.[1];
  if (!token) throw new Error('no token in the message');
  return { organizationId: id, token, invitee };
}

async function memberships(organizationId: string, identityId: string): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM organization_memberships
    WHERE organization_id = ${organizationId} AND identity_id = ${identityId}`.execute(t.ctx.database.db);
  return r.rows[0].n;
}

async function acceptedAudits(identityId: string): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM audit_records
    WHERE name = 'organization.invitation.accepted' AND actor = ${identityId}`.execute(t.ctx.database.db);
  return r.rows[0].n;
}

describe('invitations at once', () => {
  it(`an operator and an owner inviting one address at once: both 201, one pending (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const owner = await member(t);
      const { id } = await createOrganization(t, owner.token);
      const identifier = `both-${round}-${Date.now()}@example.com`;
      const body = { identifierType: 'email', identifier, role: 'member' };
      const answers = await race(2, (i) =>
        i === 0
          ? t.admin!.inject({
              method: 'POST',
              url: `/admin/v1/organizations/${id}/invitations`,
              headers: { authorization: `Bearer ${ADMIN_KEY}` },
              payload: body,
            })
          : call(t.app, 'POST', `${ORGS}/${id}/invitations`, owner.token, body),
      );
      expect(statuses(answers), `round ${round}: ${answers.map((r) => r.body).join(' ')}`).toEqual([
        201, 201,
      ]);
      const pending = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM organization_invitations
        WHERE organization_id = ${id} AND identifier = ${identifier}
          AND accepted_at IS NULL AND revoked_at IS NULL`.execute(t.ctx.database.db);
      expect(pending.rows[0].n).toBe(1);
      const events = await sql<{ type: string; n: number }>`
        SELECT type, count(*)::int AS n FROM events
        WHERE organization_id = ${id} AND data->>'identifier' = ${identifier}
        GROUP BY type ORDER BY type`.execute(t.ctx.database.db);
      expect(events.rows).toEqual([
        { type: 'organization.invitation.created', n: 2 },
        { type: 'organization.invitation.revoked', n: 1 },
      ]);
    }
  });

  it(`one session accepting one invitation twice at once: one 201, one 409 (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { organizationId, token, invitee } = await invitation();
      const answers = await race(2, () => call(t.app, 'POST', ACCEPTANCES, invitee.token, { token }));
      expect(statuses(answers), `round ${round}: ${answers.map((r) => r.body).join(' ')}`).toEqual([
        201, 409,
      ]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 409),
        409,
        'organization.invitation_accepted',
      );
      expect(await memberships(organizationId, invitee.person.identityId)).toBe(1);
      expect(await acceptedAudits(invitee.person.identityId)).toBe(1);
    }
  });

  it(`two sessions of the invited identity accepting at once: one 201, one 409 (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { organizationId, token, invitee } = await invitation();
      const second = await signIn(t.app, invitee.person);
      const tokens = [invitee.token, second.accessToken];
      const answers = await race(2, (i) => call(t.app, 'POST', ACCEPTANCES, tokens[i], { token }));
      expect(statuses(answers), `round ${round}: ${answers.map((r) => r.body).join(' ')}`).toEqual([
        201, 409,
      ]);
      expectRefusals(
        answers.filter((r) => r.statusCode === 409),
        409,
        'organization.invitation_accepted',
      );
      expect(await memberships(organizationId, invitee.person.identityId)).toBe(1);
    }
  });

  it('five acceptances at once: exactly one 201', async () => {
    const { organizationId, token, invitee } = await invitation();
    const answers = await race(5, () => call(t.app, 'POST', ACCEPTANCES, invitee.token, { token }));
    expect(statuses(answers)).toEqual([201, 409, 409, 409, 409]);
    expect(await memberships(organizationId, invitee.person.identityId)).toBe(1);
  });
});
