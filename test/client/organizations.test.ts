import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IdentityClient,
  IdentityError,
  memoryStore,
  type SessionEvent,
  SessionManager,
} from '../../packages/client/src/index.js';
import { insertMembership } from '../../src/features/organizations/repository.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { elevate } from '../helpers/elevation.js';
import { createPerson, type Person } from '../helpers/identities.js';
import { freePort } from '../helpers/net.js';
import { messagesTo } from '../helpers/outbox.js';
import { uniqueSlug } from '../organizations/support.js';

/**
 * The client's organization and invitation methods against a real service over real HTTP: every
 * call goes through the package's methods (the step-up for a transfer and the outbox read aside).
 */
let t: TestApp;
let baseUrl: string;
let dns: TestDns;

beforeAll(async () => {
  dns = await startDns();
  t = await createTestApp({ env: { ACCESS_TOKEN_TTL: '60', DNS_RESOLVERS: dns.address } });
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  await t.app.listen({ host: '127.0.0.1', port });
});

afterAll(async () => {
  await t?.close();
  await dns?.close();
});

interface Signed {
  person: Person;
  session: SessionManager;
  client: IdentityClient;
  events: SessionEvent[];
}

async function signedIn(): Promise<Signed> {
  const person = await createPerson(t.ctx);
  const session = new SessionManager({ client: { baseUrl }, store: memoryStore() });
  const events: SessionEvent[] = [];
  session.onChange((e) => events.push(e));
  await session.client.signIn({
    identifierType: 'email',
    identifier: person.email,
    password: person.password,
  });
  return { person, session, client: session.client, events };
}

async function refusal(promise: Promise<unknown>): Promise<{ status: number; code: string }> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(IdentityError);
    const e = error as IdentityError;
    return { status: e.status, code: e.code };
  }
  throw new Error('expected a refusal');
}

function claims(token: string | undefined) {
  const c = decodeJwt(token ?? '') as Record<string, unknown>;
  return { org_id: c.org_id, org_role: c.org_role };
}

/** The invitation token of the newest message to `to` (its link's fragment). */
async function invitationToken(to: string, count: number): Promise<string> {
  const until = Date.now() + 3000;
  for (;;) {
    const mine = messagesTo(t.config.dataDir, to);
    if (mine.length >= count) {
      const m = /\/account\/#\/invitations\/([^\s/]+)/.exec(mine[count - 1].text);
      if (!m) throw new Error('no invitation link in the message');
      return m[1];
    }
    if (Date.now() > until) throw new Error(`no message #${count} for ${to}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('organization methods', () => {
  it('create, list, get, update, members, roles, removal, leaving, transfer', async () => {
    const owner = await signedIn();
    const other = await signedIn();
    const third = await signedIn();
    const slug = uniqueSlug('cli');
    const created = await owner.client.createOrganization({ name: 'Client Co', slug });
    expect(created).toMatchObject({ name: 'Client Co', slug, role: 'owner', requireSecondFactor: false });
    expect(created.permissions).toContain('members:manage');
    expect(await refusal(owner.client.createOrganization({ name: 'Again', slug }))).toEqual({
      status: 409,
      code: 'organization.slug_taken',
    });

    const list = await owner.client.listOrganizations({ limit: 10 });
    expect(list.items).toEqual([
      {
        id: created.id,
        name: 'Client Co',
        slug,
        role: 'owner',
        roleDisplayName: {},
        requireSecondFactor: false,
        active: false,
      },
    ]);
    expect(list.pageInfo).toEqual({ hasNextPage: false, nextCursor: null });
    expect((await owner.client.getOrganization(created.id)).id).toBe(created.id);
    expect(await refusal(other.client.getOrganization(created.id))).toEqual({
      status: 404,
      code: 'organization.not_found',
    });

    const updated = await owner.client.updateOrganization(created.id, { name: 'Client Company' });
    expect(updated.name).toBe('Client Company');
    expect(updated.updatedAt).not.toBe(created.updatedAt);

    // Members come in through the phase-1 path the tests use (invitations have their own test below).
    for (const m of [other, third]) {
      t.clock.advance(1);
      await insertMembership(t.ctx.database.db, {
        organizationId: created.id,
        identityId: m.person.identityId,
        role: 'member',
        now: t.clock.now(),
      });
    }
    const members = await owner.client.listMembers(created.id, { limit: 2 });
    expect(members.items.map((m) => m.identityId)).toEqual([
      third.person.identityId,
      other.person.identityId,
    ]);
    // The owner manages members: each address as it is (a plain member would see it masked).
    expect(members.items[0]).toMatchObject({ display: third.person.email, masked: false });
    expect(members.pageInfo.hasNextPage).toBe(true);
    const rest = await owner.client.listMembers(created.id, { after: members.pageInfo.nextCursor ?? '' });
    expect(rest.items.map((m) => m.identityId)).toEqual([owner.person.identityId]);

    expect(await owner.client.setMemberRole(created.id, other.person.identityId, 'admin')).toEqual({
      identityId: other.person.identityId,
      role: 'admin',
    });
    expect(await refusal(owner.client.setMemberRole(created.id, owner.person.identityId, 'member'))).toEqual({
      status: 409,
      code: 'organization.last_owner',
    });
    expect(await refusal(third.client.removeMember(created.id, other.person.identityId))).toEqual({
      status: 403,
      code: 'organization.permission_denied',
    });

    // The admin removes the third member; the owner cannot leave as the last owner; the admin leaves.
    await other.client.removeMember(created.id, third.person.identityId);
    expect(await refusal(third.client.getOrganization(created.id))).toMatchObject({ status: 404 });
    expect(await refusal(owner.client.leaveOrganization(created.id))).toEqual({
      status: 409,
      code: 'organization.last_owner',
    });

    // Ownership handed over (elevated), then the former owner, now admin, may leave.
    const access = (await owner.session.grant())?.accessToken ?? '';
    const elevation = await elevate(t, access, owner.person.email);
    expect(await owner.client.transferOwnership(elevation, created.id, other.person.identityId)).toEqual({
      identityId: other.person.identityId,
      role: 'owner',
    });
    expect((await owner.client.getOrganization(created.id)).role).toBe('admin');
    await owner.client.leaveOrganization(created.id);
    expect((await owner.client.listOrganizations()).items).toEqual([]);
    expect((await other.client.listMembers(created.id)).items.map((m) => m.identityId)).toEqual([
      other.person.identityId,
    ]);
  });

  it('switchOrganization replaces the session’s access token, keeps its refresh token; renewals carry it', async () => {
    const me = await signedIn();
    const org = await me.client.createOrganization({ name: 'Switch Co', slug: uniqueSlug('sw') });
    const before = await me.session.grant();
    expect(claims(before?.accessToken)).toEqual({ org_id: undefined, org_role: undefined });

    const switched = await me.client.switchOrganization(org.id);
    expect(claims(switched.accessToken)).toEqual({ org_id: org.id, org_role: 'owner' });
    const stored = await me.session.grant();
    expect(stored?.accessToken).toBe(switched.accessToken);
    expect(stored?.refreshToken).toBe(before?.refreshToken);
    expect(me.events.at(-1)).toMatchObject({ status: 'signed-in', reason: 'organization' });
    expect((await me.client.listOrganizations()).items[0].active).toBe(true);
    expect((await me.client.context()).organizations).toEqual([
      { id: org.id, name: 'Switch Co', slug: org.slug, role: 'owner', groups: [], active: true },
    ]);

    // The kept refresh token renews, and the renewal carries the active organization.
    const renewed = await me.session.renew();
    expect(claims(renewed?.accessToken).org_id).toBe(org.id);

    // None again.
    const none = await me.client.switchOrganization(null);
    expect(claims(none.accessToken).org_id).toBeUndefined();
    expect((await me.session.grant())?.accessToken).toBe(none.accessToken);

    // With an explicit token the attached session is left alone.
    const current = (await me.session.grant())?.accessToken ?? '';
    const explicit = await me.client.switchOrganization(org.id, { accessToken: current });
    expect(claims(explicit.accessToken).org_id).toBe(org.id);
    expect((await me.session.grant())?.accessToken).toBe(current);

    // A grant that changed since the switch began (another tab renewed) is not overwritten.
    const held = await me.session.grant();
    const late = await me.client.switchOrganization(null, { accessToken: held?.accessToken });
    await me.session.accessTokenReplaced(late, 'a token the store no longer holds');
    expect((await me.session.grant())?.accessToken).toBe(held?.accessToken);

    // A stranger cannot switch to it.
    const stranger = await signedIn();
    expect(await refusal(stranger.client.switchOrganization(org.id))).toEqual({
      status: 404,
      code: 'organization.not_found',
    });
  });
});

describe('invitation methods', () => {
  it('invite, list, look up, accept; revoke; each refusal by its code', async () => {
    const owner = await signedIn();
    const invitee = await signedIn();
    const org = await owner.client.createOrganization({ name: 'Invite Co', slug: uniqueSlug('inv') });

    const before = messagesTo(t.config.dataDir, invitee.person.email).length;
    const sent = await owner.client.inviteMember(org.id, {
      identifierType: 'email',
      identifier: invitee.person.email,
      role: 'admin',
    });
    expect(sent).toMatchObject({ identifierType: 'email', role: 'admin' });
    expect(sent.identifier).not.toBe(invitee.person.email);
    const token = await invitationToken(invitee.person.email, before + 1);

    const pending = await owner.client.listInvitations(org.id);
    expect(pending.items.map((i) => i.id)).toEqual([sent.id]);

    // No session needed to look one up.
    const anonymous = new IdentityClient({ baseUrl });
    const looked = await anonymous.lookUpInvitation(token);
    expect(looked).toMatchObject({ organization: { name: 'Invite Co', slug: org.slug }, role: 'admin' });
    expect(await refusal(anonymous.lookUpInvitation('x'.repeat(43)))).toMatchObject({
      code: 'organization.invitation_not_found',
    });

    // Only the invited identifier's holder may accept.
    const someone = await signedIn();
    expect(await refusal(someone.client.acceptInvitation(token))).toEqual({
      status: 403,
      code: 'organization.invitation_wrong_identity',
    });
    const accepted = await invitee.client.acceptInvitation(token);
    expect(accepted.organization).toEqual({ id: org.id, name: 'Invite Co', slug: org.slug, role: 'admin' });
    expect((await invitee.client.getOrganization(org.id)).role).toBe('admin');
    expect(await refusal(invitee.client.acceptInvitation(token))).toEqual({
      status: 409,
      code: 'organization.invitation_accepted',
    });

    // A revoked invitation: listed no more, and its token says so.
    const second = await signedIn();
    const count = messagesTo(t.config.dataDir, second.person.email).length;
    const again = await owner.client.inviteMember(org.id, {
      identifierType: 'email',
      identifier: second.person.email,
      role: 'member',
    });
    const secondToken = await invitationToken(second.person.email, count + 1);
    await owner.client.revokeInvitation(org.id, again.id);
    expect((await owner.client.listInvitations(org.id)).items).toEqual([]);
    expect(await refusal(anonymous.lookUpInvitation(secondToken))).toEqual({
      status: 410,
      code: 'organization.invitation_revoked',
    });
    expect(await refusal(owner.client.revokeInvitation(org.id, again.id))).toMatchObject({ status: 404 });
    // A plain member may not invite.
    const plain = await signedIn();
    await insertMembership(t.ctx.database.db, {
      organizationId: org.id,
      identityId: plain.person.identityId,
      role: 'member',
      now: t.clock.now(),
    });
    expect(
      await refusal(
        plain.client.inviteMember(org.id, {
          identifierType: 'email',
          identifier: 'x@example.com',
          role: 'member',
        }),
      ),
    ).toEqual({ status: 403, code: 'organization.permission_denied' });
  });
});

describe('domain methods', () => {
  it('add, list, verify by DNS (refused until the record is published), remove', async () => {
    const owner = await signedIn();
    const org = await owner.client.createOrganization({ name: 'Domain Co', slug: uniqueSlug('dom') });
    const domain = `${uniqueSlug('client')}.example.com`;
    const d = await owner.client.addDomain(org.id, domain.toUpperCase());
    expect(d).toMatchObject({ domain, verifiedAt: null, verifiedBy: null });
    expect((await owner.client.listDomains(org.id)).items.map((x) => x.id)).toEqual([d.id]);

    expect(await refusal(owner.client.verifyDomain(org.id, d.id))).toEqual({
      status: 422,
      code: 'organization.domain_unverified',
    });
    dns.set(d.txtRecord.name, d.txtRecord.value);
    expect(await owner.client.verifyDomain(org.id, d.id)).toMatchObject({ id: d.id, verifiedBy: 'dns' });

    expect(await refusal(owner.client.addDomain(org.id, '10.0.0.1'))).toEqual({
      status: 422,
      code: 'organization.domain_invalid',
    });
    await owner.client.removeDomain(org.id, d.id);
    expect((await owner.client.listDomains(org.id)).items).toEqual([]);
  });
});

describe('SCIM token methods', () => {
  it('create (the token once), list (never the token), revoke', async () => {
    const owner = await signedIn();
    const org = await owner.client.createOrganization({ name: 'Scim Co', slug: uniqueSlug('scim') });
    const created = await owner.client.createScimToken(org.id, 'Okta');
    expect(created).toMatchObject({ name: 'Okta', revokedAt: null, lastUsedAt: null });
    expect(created.token).toMatch(/^scim_/);
    const listed = (await owner.client.listScimTokens(org.id)).items;
    expect(listed.map((x) => x.id)).toEqual([created.id]);
    expect(listed[0]).not.toHaveProperty('token');
    await owner.client.revokeScimToken(org.id, created.id);
    expect((await owner.client.listScimTokens(org.id)).items[0]?.revokedAt).not.toBeNull();
  });
});
