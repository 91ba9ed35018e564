import { randomBytes, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, ADMIN_KEY_NAME, adminRequest } from '../../helpers/admin.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { auditCount } from '../../helpers/audit.js';
import { signIn } from '../../helpers/identities.js';
import { messagesTo } from '../../helpers/outbox.js';
import { confirm, lastCode, PASSWORD, signUp } from '../../registration/helpers.js';
import { call, createOrganization, expectProblem, join, type Member, member, ORGS } from '../support.js';

// Organization invitations (docs/organizations.md, "Invitations"): sending, the message, the
// per-destination limit, lookups, acceptance and each of its refusals, listing, revoking, export.
let t: TestApp;

const LOOKUPS = '/api/v1/organization-invitations/lookups';
const ACCEPTANCES = '/api/v1/organization-invitations/acceptances';

beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(async () => {
  await t?.close();
});

function address(label = 'p'): string {
  return `${label}-${randomBytes(5).toString('hex')}@example.com`;
}

function invite(
  token: string,
  organizationId: string,
  identifier: string,
  role = 'member',
  app: TestApp = t,
  remoteAddress?: string,
): Promise<LightMyRequestResponse> {
  return app.app.inject({
    method: 'POST',
    url: `${ORGS}/${organizationId}/invitations`,
    headers: { authorization: `Bearer ${token}` },
    payload: { identifierType: 'email', identifier, role },
    ...(remoteAddress ? { remoteAddress } : {}),
  });
}

/** The token of the newest invitation message to `to`, read from its link. */
function tokenFor(to: string, app: TestApp = t): string {
  const mine = messagesTo(app.config.dataDir, to);
  expect(mine.length, `no message to ${to}`).toBeGreaterThan(0);
  const text = mine[mine.length - 1].text;
  const link = text.split('\n').find((l) => l.includes('/account/#/invitations/'));
  expect(link, text).toBeDefined();
  const m = /^(.*)\/account\/#\/invitations\/([A-Za-z0-9_-]{43})$/.exec(link ?? '');
  expect(m?.[1]).toBe(app.config.publicOrigin);
  return m?.[2] ?? '';
}

function lookup(token: string, app: TestApp = t) {
  return app.app.inject({ method: 'POST', url: LOOKUPS, payload: { token } });
}

function accept(bearerToken: string, token: string, app: TestApp = t) {
  return call(app.app, 'POST', ACCEPTANCES, bearerToken, { token });
}

/** An owner with an organization. */
async function withOrganization(
  name = 'Acme',
): Promise<{ owner: Member; org: { id: string; slug: string } }> {
  const owner = await member(t);
  const org = await createOrganization(t, owner.token, name);
  return { owner, org };
}

/** Sends an invitation and returns its token and id. */
async function invited(token: string, organizationId: string, to: string, role = 'member') {
  const res = await invite(token, organizationId, to, role);
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json().data.id as string, token: tokenFor(to) };
}

describe('sending', () => {
  it('answers 201 with the masked address, and the message holds the link with a high-entropy token', async () => {
    const { owner, org } = await withOrganization('Northwind');
    const to = address('ada');
    const res = await invite(owner.token, org.id, to.toUpperCase(), 'admin');
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data).toEqual({
      id: expect.any(String),
      identifierType: 'email',
      identifier: 'a***@example.com',
      role: 'admin',
      expiresAt: new Date(t.clock.now().getTime() + 604800_000).toISOString(),
      delivery: { status: 'DELIVERED', resendable: false },
    });
    // Normalised as sign-up normalises: the message went to the lower-cased address.
    const [message] = messagesTo(t.config.dataDir, to);
    expect(message.subject).toContain('Northwind');
    expect(message.text).toContain('"Northwind"');
    expect(message.text).toContain('as admin');
    const token = tokenFor(to);
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    // Stored only as a keyed hash.
    const rows = await sql<{ token_hash: string }>`
      SELECT token_hash FROM organization_invitations WHERE id = ${data.id}`.execute(t.ctx.database.db);
    expect(rows.rows[0].token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows.rows[0].token_hash).not.toContain(token);
    expect(await auditCount(t, 'organization.invitation.sent', data.id)).toBe(1);
  });

  it('answers the same bytes apart from id and expiry for a known, an unknown and a member’s address', async () => {
    const { owner, org } = await withOrganization();
    const known = await member(t);
    const inside = await member(t);
    await join(t, org.id, inside.person.identityId, 'member');
    const unknown = address('p');
    const answers = [];
    for (const to of [known.person.email, unknown, inside.person.email]) {
      const res = await invite(owner.token, org.id, to);
      expect(res.statusCode, res.body).toBe(201);
      answers.push(
        res.body.replace(/"id":"[^"]+"/, '"id":"X"').replace(/"expiresAt":"[^"]+"/, '"expiresAt":"X"'),
      );
    }
    expect(new Set(answers).size, answers.join('\n')).toBe(1);
    // Each address got the same message but for its token.
    const texts = [known.person.email, unknown, inside.person.email].map((to) =>
      messagesTo(t.config.dataDir, to)[0].text.replace(/[A-Za-z0-9_-]{43}$/m, 'T'),
    );
    expect(new Set(texts).size).toBe(1);
  });

  it('invites a phone number normalised as sign-up normalises it (E.164), masked in the answer', async () => {
    const { owner, org } = await withOrganization();
    const res = await call(t.app, 'POST', `${ORGS}/${org.id}/invitations`, owner.token, {
      identifierType: 'phone',
      identifier: '06 12 34 56 78',
      country: 'FR',
      role: 'member',
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.identifier).toBe('+33******78');
    const stored = await sql<{ identifier: string }>`
      SELECT identifier FROM organization_invitations WHERE id = ${res.json().data.id}`.execute(
      t.ctx.database.db,
    );
    expect(stored.rows[0].identifier).toBe('+33612345678');
    expect(tokenFor('+33612345678')).toHaveLength(43);
  });

  it('replaces a pending invitation to the same address (the old token is revoked)', async () => {
    const { owner, org } = await withOrganization();
    const to = address();
    const first = await invited(owner.token, org.id, to);
    const second = await invited(owner.token, org.id, to, 'admin');
    expectProblem(await lookup(first.token), 410, 'organization.invitation_revoked');
    expect((await lookup(second.token)).json().data.role).toBe('admin');
    const list = await call(t.app, 'GET', `${ORGS}/${org.id}/invitations`, owner.token);
    expect(list.json().data.map((i: { id: string }) => i.id)).toEqual([second.id]);
  });

  it('needs members:invite, and only an owner invites an owner; unknown roles and bodies are refused', async () => {
    const { owner, org } = await withOrganization();
    const admin = await member(t);
    const plain = await member(t);
    const stranger = await member(t);
    await join(t, org.id, admin.person.identityId, 'admin');
    await join(t, org.id, plain.person.identityId, 'member');
    const to = address();
    expectProblem(await invite(plain.token, org.id, to), 403, 'organization.permission_denied');
    expectProblem(await invite(stranger.token, org.id, to), 404, 'organization.not_found');
    expectProblem(await invite(admin.token, org.id, to, 'owner'), 403, 'organization.permission_denied');
    expectProblem(await invite(owner.token, org.id, to, 'nobody'), 422, 'organization.role_unknown');
    expect(messagesTo(t.config.dataDir, to)).toHaveLength(0);
    expect((await invite(admin.token, org.id, to, 'admin')).statusCode).toBe(201);
    expect((await invite(owner.token, org.id, to, 'owner')).statusCode).toBe(201);
    const strict = await call(t.app, 'POST', `${ORGS}/${org.id}/invitations`, owner.token, {
      identifierType: 'email',
      identifier: to,
      role: 'member',
      extra: true,
    });
    expectProblem(strict, 400, 'validation.failed');
    expectProblem(await invite(owner.token, org.id, 'not an address'), 422, 'identity.identifier_unusable');
  });
});

describe('the per-destination limit', () => {
  it('past RATE_LIMIT_SENDS_A_MESSAGE for one destination: 429, nothing written, nothing sent', async () => {
    const limited = await createTestApp({ env: { RATE_LIMIT_SENDS_A_MESSAGE: '2/60' } });
    try {
      const owner = await member(limited);
      const org = await createOrganization(limited, owner.token);
      const to = address();
      // Three client addresses, so only the destination's window can trip.
      expect((await invite(owner.token, org.id, to, 'member', limited, '10.0.0.1')).statusCode).toBe(201);
      expect((await invite(owner.token, org.id, to, 'member', limited, '10.0.0.2')).statusCode).toBe(201);
      const before = tokenFor(to, limited);
      const refused = await invite(owner.token, org.id, to, 'admin', limited, '10.0.0.3');
      expectProblem(refused, 429, 'rate_limit.exceeded');
      expect(refused.headers['retry-after']).toBeDefined();
      expect(messagesTo(limited.config.dataDir, to)).toHaveLength(2);
      // The refused send rolled back: the second invitation is still the pending one.
      expect((await lookup(before, limited)).json().data.role).toBe('member');
      const rows = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM organization_invitations WHERE organization_id = ${org.id}`.execute(
        limited.ctx.database.db,
      );
      expect(rows.rows[0].n).toBe(2);
    } finally {
      await limited.close();
    }
  });
});

describe('lookup and acceptance', () => {
  it('looks up without a session, then the holder of the verified address accepts and becomes a member', async () => {
    const { owner, org } = await withOrganization('Globex');
    const invitee = await member(t);
    const { token } = await invited(owner.token, org.id, invitee.person.email, 'admin');
    const seen = await lookup(token);
    expect(seen.statusCode, seen.body).toBe(200);
    // The invited address whole (the token went there), and who invited: their address, no name yet.
    expect(seen.json().data).toEqual({
      organization: { name: 'Globex', slug: org.slug },
      role: 'admin',
      roleDisplayName: {},
      identifierType: 'email',
      identifier: invitee.person.email,
      invitedBy: { name: null, identifier: owner.person.email },
      expiresAt: expect.any(String),
    });
    await t.ctx.database.db
      .updateTable('identities')
      .set({ given_name: 'Ada', family_name: 'Lovelace' })
      .where('id', '=', owner.person.identityId)
      .execute();
    expect((await lookup(token)).json().data.invitedBy).toEqual({
      name: 'Ada Lovelace',
      identifier: owner.person.email,
    });
    const res = await accept(invitee.token, token);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data).toEqual({
      organization: { id: org.id, name: 'Globex', slug: org.slug, role: 'admin' },
    });
    const read = await call(t.app, 'GET', `${ORGS}/${org.id}`, invitee.token);
    expect(read.json().data.role).toBe('admin');
    expect(await auditCount(t, 'organization.invitation.accepted', invitee.person.identityId)).toBe(1);
    // Accepted: gone from the pending list, and the token now answers 409 to anyone.
    const list = await call(t.app, 'GET', `${ORGS}/${org.id}/invitations`, owner.token);
    expect(list.json().data).toEqual([]);
    expectProblem(await lookup(token), 409, 'organization.invitation_accepted');
    expectProblem(await accept(invitee.token, token), 409, 'organization.invitation_accepted');
    expectProblem(await accept((await member(t)).token, token), 409, 'organization.invitation_accepted');
  });

  it('a sign-up of the invited address, confirmed, then accepts', async () => {
    const { owner, org } = await withOrganization();
    const to = address('new');
    const { token } = await invited(owner.token, org.id, to);
    const form = { identifierType: 'email' as const, identifier: to };
    expect((await signUp(t.app, { ...form, password: PASSWORD })).statusCode).toBe(201);
    const code = lastCode(t.config.dataDir, to);
    expect((await confirm(t.app, { ...form, password: PASSWORD, code })).statusCode).toBe(204);
    const grant = await signIn(t.app, { email: to, password: PASSWORD });
    const res = await accept(grant.accessToken, token);
    expect(res.statusCode, res.body).toBe(201);
  });

  it('refuses another identity, and one holding the address unverified; the invitation stays pending', async () => {
    const { owner, org } = await withOrganization();
    const to = address();
    const { token } = await invited(owner.token, org.id, to);
    const other = await member(t);
    expectProblem(await accept(other.token, token), 403, 'organization.invitation_wrong_identity');
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at)
              VALUES (${randomUUID()}, ${other.person.identityId}, 'email', ${to}, ${t.clock.now()})`.execute(
      t.ctx.database.db,
    );
    expectProblem(await accept(other.token, token), 403, 'organization.invitation_wrong_identity');
    expect((await lookup(token)).statusCode).toBe(200);
    expect(await auditCount(t, 'organization.invitation.accepted', other.person.identityId)).toBe(0);
  });

  it('refuses a member with 409 organization.already_member, leaving the invitation pending', async () => {
    const { owner, org } = await withOrganization();
    const inside = await member(t);
    await join(t, org.id, inside.person.identityId, 'member');
    const { token } = await invited(owner.token, org.id, inside.person.email, 'admin');
    expectProblem(await accept(inside.token, token), 409, 'organization.already_member');
    expect((await lookup(token)).statusCode).toBe(200);
    expect((await call(t.app, 'GET', `${ORGS}/${org.id}`, inside.token)).json().data.role).toBe('member');
  });

  it('an expired invitation answers 410 organization.invitation_expired', async () => {
    const { owner, org } = await withOrganization();
    const invitee = await member(t);
    const { token } = await invited(owner.token, org.id, invitee.person.email);
    t.clock.advance(604800 - 1);
    expect((await lookup(token)).statusCode).toBe(200);
    t.clock.advance(1);
    expectProblem(await lookup(token), 410, 'organization.invitation_expired');
    // A week on, the access tokens have long expired: sign in again.
    const fresh = await signIn(t.app, invitee.person);
    expectProblem(await accept(fresh.accessToken, token), 410, 'organization.invitation_expired');
    const ownerNow = await signIn(t.app, owner.person);
    expect(
      (await call(t.app, 'GET', `${ORGS}/${org.id}/invitations`, ownerNow.accessToken)).json().data,
    ).toEqual([]);
  });

  it('unknown and malformed tokens', async () => {
    const me = await member(t);
    const unknown = randomBytes(32).toString('base64url');
    expectProblem(await lookup(unknown), 404, 'organization.invitation_not_found');
    expectProblem(await accept(me.token, unknown), 404, 'organization.invitation_not_found');
    expectProblem(await lookup('short'), 400, 'validation.failed');
    const noSession = await t.app.inject({ method: 'POST', url: ACCEPTANCES, payload: { token: unknown } });
    expect(noSession.statusCode).toBe(401);
  });
});

describe('listing and revoking', () => {
  it('lists pending invitations by their address, unmasked (members:invite), revokes one (204, audited), then 404', async () => {
    const { owner, org } = await withOrganization();
    const plain = await member(t);
    await join(t, org.id, plain.person.identityId, 'member');
    const a = await invited(owner.token, org.id, address('amy'));
    t.clock.advance(1);
    const bob = address('bob');
    const b = await invited(owner.token, org.id, bob, 'admin');
    const list = await call(t.app, 'GET', `${ORGS}/${org.id}/invitations?limit=1`, owner.token);
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().data).toEqual([
      {
        id: b.id,
        identifierType: 'email',
        // Only those who invite see the list: the address as invited, to know who is who.
        identifier: bob,
        role: 'admin',
        invitedBy: owner.person.identityId,
        createdAt: expect.any(String),
        expiresAt: expect.any(String),
      },
    ]);
    expect(list.json().meta.pageInfo.hasNextPage).toBe(true);
    expectProblem(
      await call(t.app, 'GET', `${ORGS}/${org.id}/invitations`, plain.token),
      403,
      'organization.permission_denied',
    );
    expectProblem(
      await call(t.app, 'DELETE', `${ORGS}/${org.id}/invitations/${a.id}`, plain.token),
      403,
      'organization.permission_denied',
    );
    const del = await call(t.app, 'DELETE', `${ORGS}/${org.id}/invitations/${a.id}`, owner.token);
    expect(del.statusCode, del.body).toBe(204);
    expect(await auditCount(t, 'organization.invitation.revoked', a.id)).toBe(1);
    expectProblem(await lookup(a.token), 410, 'organization.invitation_revoked');
    expectProblem(
      await call(t.app, 'DELETE', `${ORGS}/${org.id}/invitations/${a.id}`, owner.token),
      404,
      'organization.invitation_not_found',
    );
    expectProblem(
      await call(t.app, 'DELETE', `${ORGS}/${org.id}/invitations/${randomUUID()}`, owner.token),
      404,
      'organization.invitation_not_found',
    );
    const rest = await call(t.app, 'GET', `${ORGS}/${org.id}/invitations`, owner.token);
    expect(rest.json().data.map((i: { id: string }) => i.id)).toEqual([b.id]);
  });
});

describe('operators (admin API)', () => {
  const adminCall = (method: 'GET' | 'DELETE', url: string) =>
    t.admin!.inject({ method, url: `/admin/v1${url}`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });

  it('lists an organization’s pending invitations and revokes one: 204, event and audit with the operator, then 404', async () => {
    const { owner, org } = await withOrganization('Operated');
    const a = await invited(owner.token, org.id, address('ann'));
    t.clock.advance(1);
    const carl = address('carl');
    const c = await invited(owner.token, org.id, carl, 'admin');
    const list = await adminCall('GET', `/organizations/${org.id}/invitations?limit=1`);
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().data).toEqual([
      {
        id: c.id,
        identifierType: 'email',
        identifier: carl,
        role: 'admin',
        invitedBy: owner.person.identityId,
        createdAt: expect.any(String),
        expiresAt: expect.any(String),
      },
    ]);
    expect(list.json().meta.pageInfo.hasNextPage).toBe(true);

    const del = await adminCall('DELETE', `/organizations/${org.id}/invitations/${a.id}`);
    expect(del.statusCode, del.body).toBe(204);
    const { rows } = await sql<{ actor: string; details: Record<string, unknown> }>`
      SELECT actor, details FROM audit_records
      WHERE name = 'organization.invitation.revoked' AND target = ${a.id}`.execute(t.ctx.database.db);
    expect(rows).toEqual([
      { actor: `admin:${ADMIN_KEY_NAME}`, details: { organizationId: org.id, byOperator: true } },
    ]);
    const events = await sql<{ actor: string }>`
      SELECT actor FROM events WHERE type = 'organization.invitation.revoked' AND data->>'id' = ${a.id}`.execute(
      t.ctx.database.db,
    );
    expect(events.rows).toEqual([{ actor: `admin:${ADMIN_KEY_NAME}` }]);
    expectProblem(await lookup(a.token), 410, 'organization.invitation_revoked');
    expectProblem(
      await adminCall('DELETE', `/organizations/${org.id}/invitations/${a.id}`),
      404,
      'organization.invitation_not_found',
    );
    // Another organization's invitation is not this one's.
    const other = await withOrganization('Other');
    expectProblem(
      await adminCall('DELETE', `/organizations/${other.org.id}/invitations/${c.id}`),
      404,
      'organization.invitation_not_found',
    );
    const rest = await adminCall('GET', `/organizations/${org.id}/invitations`);
    expect(rest.json().data.map((i: { id: string }) => i.id)).toEqual([c.id]);
    const unknown = randomUUID();
    expectProblem(
      await adminCall('GET', `/organizations/${unknown}/invitations`),
      404,
      'admin.organization_not_found',
    );
    expectProblem(
      await adminCall('DELETE', `/organizations/${unknown}/invitations/${c.id}`),
      404,
      'admin.organization_not_found',
    );
    expect((await adminCall('GET', `/organizations/not-a-uuid/invitations`)).statusCode).toBe(400);
  });

  const adminInvite = (organizationId: string, body: Record<string, unknown>, headers = {}) =>
    t.admin!.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${organizationId}/invitations`,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, ...headers },
      payload: body,
    });

  it('an operator invites into any role: 201, the message and link, no inviter named, event and audit with the operator', async () => {
    const { owner, org } = await withOrganization('Invited by ops');
    const invitee = await member(t);
    const to = invitee.person.email;
    // A pending invitation of a member to the same address is replaced.
    const before = await invited(owner.token, org.id, to);
    const res = await adminInvite(org.id, {
      identifierType: 'email',
      identifier: to.toUpperCase(),
      role: 'owner',
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data).toEqual({
      id: expect.any(String),
      identifierType: 'email',
      identifier: expect.stringMatching(/^[a-z]\*\*\*@example\.com$/),
      role: 'owner',
      expiresAt: expect.any(String),
      delivery: { status: 'DELIVERED', resendable: false },
    });
    const id = res.json().data.id as string;
    const token = tokenFor(to);
    expect(token).not.toBe(before.token);
    expectProblem(await lookup(before.token), 410, 'organization.invitation_revoked');

    const list = await adminCall('GET', `/organizations/${org.id}/invitations`);
    expect(list.json().data).toEqual([
      {
        id,
        identifierType: 'email',
        identifier: to,
        role: 'owner',
        invitedBy: null,
        createdAt: expect.any(String),
        expiresAt: expect.any(String),
      },
    ]);
    const { rows } = await sql<{ actor: string; details: Record<string, unknown> }>`
      SELECT actor, details FROM audit_records
      WHERE name = 'organization.invitation.sent' AND target = ${id}`.execute(t.ctx.database.db);
    expect(rows).toEqual([
      {
        actor: `admin:${ADMIN_KEY_NAME}`,
        details: {
          organizationId: org.id,
          identifierType: 'email',
          role: 'owner',
          replaced: 1,
          byOperator: true,
        },
      },
    ]);
    const events = await sql<{ type: string; actor: string; invitedBy: string | null }>`
      SELECT type, actor, data->>'invitedBy' AS "invitedBy" FROM events
      WHERE type LIKE 'organization.invitation.%' AND data->>'id' IN (${id}, ${before.id})
        AND actor LIKE 'admin:%' ORDER BY appended`.execute(t.ctx.database.db);
    expect(events.rows).toEqual([
      {
        type: 'organization.invitation.revoked',
        actor: `admin:${ADMIN_KEY_NAME}`,
        invitedBy: owner.person.identityId,
      },
      { type: 'organization.invitation.created', actor: `admin:${ADMIN_KEY_NAME}`, invitedBy: null },
    ]);

    // The invitee is told they are invited, by nobody in particular, and accepts into the role.
    const seen = await lookup(token);
    expect(seen.json().data.invitedBy).toBeNull();
    expect(seen.json().data.role).toBe('owner');
    const accepted = await accept(invitee.token, token);
    expect(accepted.statusCode, accepted.body).toBe(201);
    expect(accepted.json().data.organization.role).toBe('owner');
  });

  it('refuses an unknown or disabled organization, an unknown role, a malformed body, and no key', async () => {
    const { org } = await withOrganization('Refusals');
    const body = { identifierType: 'email', identifier: address('r'), role: 'member' };
    expectProblem(await adminInvite(randomUUID(), body), 404, 'admin.organization_not_found');
    expectProblem(await adminInvite(org.id, { ...body, role: 'overlord' }), 422, 'organization.role_unknown');
    expect((await adminInvite(org.id, { ...body, extra: 1 })).statusCode).toBe(400);
    expect((await adminInvite(org.id, { ...body, identifier: 'not an address' })).statusCode).toBe(422);
    const anonymous = await t.admin!.inject({
      method: 'POST',
      url: `/admin/v1/organizations/${org.id}/invitations`,
      payload: body,
    });
    expect(anonymous.statusCode).toBe(401);
    const off = await adminRequest(t.admin!, 'POST', `/organizations/${org.id}/disablements`);
    expect(off.statusCode, off.body).toBeLessThan(300);
    expectProblem(await adminInvite(org.id, body), 409, 'admin.organization_disabled');
    const list = await adminCall('GET', `/organizations/${org.id}/invitations`);
    expect(list.json().data).toEqual([]);
    expect(messagesTo(t.config.dataDir, body.identifier)).toEqual([]);
  });
});

describe('export and erasure', () => {
  it('the inviter’s export lists the invitations sent, masked, with their state, never the token', async () => {
    const { owner, org } = await withOrganization();
    const invitee = await member(t);
    const pending = await invited(owner.token, org.id, address('pat'));
    t.clock.advance(1);
    const taken = await invited(owner.token, org.id, invitee.person.email, 'admin');
    expect((await accept(invitee.token, taken.token)).statusCode).toBe(201);
    const res = await call(t.app, 'GET', '/api/v1/account/export', owner.token);
    expect(res.statusCode, res.body).toBe(200);
    const sent = res.json().data.invitationsSent as Array<Record<string, unknown>>;
    expect(sent.map((i) => [i.id, i.organizationId, i.identifier, i.role, i.state])).toEqual([
      [pending.id, org.id, 'p***@example.com', 'member', 'pending'],
      [taken.id, org.id, 'p***@example.com', 'admin', 'accepted'],
    ]);
    expect(sent[1].acceptedAt).toEqual(expect.any(String));
    expect(res.body).not.toContain(pending.token);
    expect(res.body).not.toContain(taken.token);
    const hashes = await sql<{ token_hash: string }>`
      SELECT token_hash FROM organization_invitations WHERE invited_by = ${owner.person.identityId}`.execute(
      t.ctx.database.db,
    );
    for (const h of hashes.rows) expect(res.body).not.toContain(h.token_hash);
  });

  it('an erased inviter’s invitations stay with the organization and stay acceptable', async () => {
    const { owner, org } = await withOrganization();
    const admin = await member(t);
    await join(t, org.id, admin.person.identityId, 'owner');
    const invitee = await member(t);
    const { id, token } = await invited(admin.token, org.id, invitee.person.email);
    if (!t.admin) throw new Error('no admin listener');
    const res = await adminRequest(t.admin, 'POST', `/identities/${admin.person.identityId}/erasures`);
    expect(res.statusCode, res.body).toBe(204);
    const list = await call(t.app, 'GET', `${ORGS}/${org.id}/invitations`, owner.token);
    expect(list.json().data.map((i: { id: string; invitedBy: string }) => [i.id, i.invitedBy])).toEqual([
      [id, admin.person.identityId],
    ]);
    expect((await accept(invitee.token, token)).statusCode).toBe(201);
  });
});
