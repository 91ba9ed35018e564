import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { adminEntry, adminRequest } from '../helpers/admin.js';
import { testEnv } from '../helpers/app.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { FIRST_PARTY, type OidcFixture, oidcFixture } from '../helpers/oidc.js';
import {
  type Candidate,
  CONSOLE_ORIGIN,
  consoleAccessToken,
  passwordOnly,
  withAuthenticator,
} from '../helpers/operators.js';
import { DEFAULT_POLICY, enrolVerified } from '../second-factors/helpers.js';

/*
 * Operators who are identities of this service (docs/admin.md, "Operators"): the console's access
 * tokens beside the keys, the second factor they need, their roles from CONSOLE_OPERATORS and the
 * admin API, and the audit actor of what they do. A real authorization code flow with PKCE against
 * the service on a real port, real sign-ins with a real authenticator code.
 */

const OWNER_EMAIL = 'console-owner@example.com';
const AUDITOR_EMAIL = 'console-auditor@example.com';

let f: OidcFixture;
let owner: Candidate;
let ownerToken: string;

const admin = () => {
  if (!f.t.admin) throw new Error('no admin listener');
  return f.t.admin;
};

function asOperator(token: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) {
  return admin().inject({
    method,
    url: `/admin/v1${url}`,
    headers: bearer(token),
    ...(payload ? { payload } : {}),
  });
}

/** A person named by CONSOLE_OPERATORS's address, with an authenticator. */
async function configured(email: string): Promise<Candidate> {
  const person = await createPerson(f.t.ctx, email);
  const grant = await signIn(f.t.app, person);
  const factor = await enrolVerified(f.t, person, grant, DEFAULT_POLICY);
  return { person, factor };
}

beforeAll(async () => {
  f = await oidcFixture({
    CONSOLE_OPERATORS: `owner:${OWNER_EMAIL.toUpperCase()}, auditor:${AUDITOR_EMAIL}`,
  });
  owner = await configured(OWNER_EMAIL);
  ownerToken = await consoleAccessToken(f, owner);
});
afterAll(() => f.close());

describe("the console's access tokens on the admin listener", () => {
  it('an owner named by address acts with their identity as the audit actor, and keys keep working', async () => {
    const target = await createPerson(f.t.ctx);
    const read = await asOperator(ownerToken, 'GET', `/identities/${target.identityId}`);
    expect(read.statusCode, read.body).toBe(200);
    expect(
      (await asOperator(ownerToken, 'POST', `/identities/${target.identityId}/disablements`)).statusCode,
    ).toBe(204);
    const trail = await adminRequest(admin(), 'GET', `/audit-records?identityId=${target.identityId}`);
    const actors = trail.json().data.map((r: { name: string; actor: string }) => `${r.name} ${r.actor}`);
    expect(actors).toContain(`identity.disabled operator:${owner.person.identityId}`);
    expect(actors).toContain(`admin.identity.read operator:${owner.person.identityId}`);
    // The key of automation is untouched.
    expect(
      (await adminRequest(admin(), 'POST', `/identities/${target.identityId}/enablements`)).statusCode,
    ).toBe(204);
  });

  it('refuses with the one 401: a password-only session, another client, no role, a made-up token', async () => {
    // A role, but a session opened without a second factor.
    const single = await passwordOnly(f);
    await f.t.ctx.database.db
      .insertInto('operator_roles')
      .values({
        identity_id: single.person.identityId,
        role: 'owner',
        granted_by: 'test',
        granted_at: new Date(),
      })
      .execute();
    const singleToken = await consoleAccessToken(f, single);
    // An owner's token, but of another (first-party) client.
    const otherClient = await consoleAccessToken(f, owner, FIRST_PARTY.id, FIRST_PARTY.secret);
    // A second factor, but no role.
    const nobody = await withAuthenticator(f);
    const nobodyToken = await consoleAccessToken(f, nobody);
    const tokens = [singleToken, nobodyToken, otherClient, 'x'.repeat(43), ownerToken.slice(0, -1)];
    // Each of them is a live access token of the provider: userinfo answers for them.
    for (const token of [singleToken, nobodyToken, otherClient]) {
      const info = await fetch(`${f.origin}/oidc/userinfo`, { headers: bearer(token) });
      expect(info.status).toBe(200);
    }
    const bodies = new Set<string>();
    for (const token of tokens) {
      const r = await asOperator(token, 'GET', '/identities');
      expect(r.statusCode, token).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Bearer');
      bodies.add(r.body);
    }
    expect(bodies.size).toBe(1);
  });

  it("a token dies with the operator's session: its sessions ended, its identity disabled", async () => {
    const c = await withAuthenticator(f);
    await admin().inject({
      method: 'PUT',
      url: `/admin/v1/operators/${c.person.identityId}`,
      headers: bearer(ownerToken),
      payload: { role: 'support' },
    });
    const token = await consoleAccessToken(f, c);
    expect((await asOperator(token, 'GET', '/identities')).statusCode).toBe(200);
    const ended = await adminRequest(
      admin(),
      'POST',
      `/identities/${c.person.identityId}/session-revocations`,
    );
    expect(ended.statusCode).toBe(204);
    expect((await asOperator(token, 'GET', '/identities')).statusCode).toBe(401);

    const again = await consoleAccessToken(f, c);
    expect((await asOperator(again, 'GET', '/identities')).statusCode).toBe(200);
    expect(
      (await adminRequest(admin(), 'POST', `/identities/${c.person.identityId}/disablements`)).statusCode,
    ).toBe(204);
    expect((await asOperator(again, 'GET', '/identities')).statusCode).toBe(401);
  });
});

describe('roles through the admin API', () => {
  it('an owner grants support; support reads, unlocks, ends sessions and nothing else; revoking ends it', async () => {
    const c = await withAuthenticator(f);
    const granted = await asOperator(ownerToken, 'PUT', `/operators/${c.person.identityId}`, {
      role: 'support',
    });
    expect(granted.statusCode, granted.body).toBe(200);
    expect(granted.json().data).toMatchObject({
      identityId: c.person.identityId,
      role: 'support',
      source: 'api',
      grantedBy: `operator:${owner.person.identityId}`,
    });
    const token = await consoleAccessToken(f, c);
    const target = await createPerson(f.t.ctx);
    expect((await asOperator(token, 'GET', `/identities/${target.identityId}`)).statusCode).toBe(200);
    expect(
      (await asOperator(token, 'POST', `/identities/${target.identityId}/lock-clearances`)).statusCode,
    ).toBe(204);
    expect(
      (await asOperator(token, 'POST', `/identities/${target.identityId}/session-revocations`)).statusCode,
    ).toBe(204);
    for (const act of ['erasures', 'disablements', 'enablements']) {
      const r = await asOperator(token, 'POST', `/identities/${target.identityId}/${act}`);
      expect(r.statusCode, act).toBe(403);
      expect(r.json().code).toBe('admin.forbidden');
    }
    // Not erased: the refusal came before the act.
    const detail = await adminRequest(admin(), 'GET', `/identities/${target.identityId}`);
    expect(detail.json().data.erasedAt ?? null).toBeNull();
    // A support operator cannot raise their own role, nor anyone's.
    const raise = await asOperator(token, 'PUT', `/operators/${c.person.identityId}`, { role: 'owner' });
    expect(raise.statusCode).toBe(403);
    expect(raise.json().code).toBe('admin.forbidden');
    expect((await asOperator(token, 'GET', '/operators')).statusCode).toBe(200);
    // Taken away: the same token is a stranger's at once.
    expect((await asOperator(ownerToken, 'DELETE', `/operators/${c.person.identityId}`)).statusCode).toBe(
      204,
    );
    expect((await asOperator(token, 'GET', '/identities')).statusCode).toBe(401);
    const trail = await adminRequest(admin(), 'GET', `/audit-records?identityId=${c.person.identityId}`);
    const names = trail.json().data.map((r: { name: string; details: object }) => r.name);
    expect(names).toContain('operator.role_granted');
    expect(names).toContain('operator.role_revoked');
  });

  it('no operator changes their own role; a configured one changes only in configuration', async () => {
    const own = await asOperator(ownerToken, 'PUT', `/operators/${owner.person.identityId}`, {
      role: 'support',
    });
    expect(own.statusCode).toBe(403);
    expect(own.json().code).toBe('admin.operator_own_role');
    expect(
      (await asOperator(ownerToken, 'DELETE', `/operators/${owner.person.identityId}`)).json().code,
    ).toBe('admin.operator_own_role');
    // Through a key, the configured owner's role is still configuration's.
    const viaKey = await admin().inject({
      method: 'PUT',
      url: `/admin/v1/operators/${owner.person.identityId}`,
      headers: bearer('adm_test-operator-key-0123456789abcdefghijklmnopqrs'),
      payload: { role: 'auditor' },
    });
    expect(viaKey.statusCode).toBe(409);
    expect(viaKey.json().code).toBe('admin.operator_configured');
    const unknown = await asOperator(ownerToken, 'PUT', '/operators/00000000-0000-4000-8000-000000000000', {
      role: 'support',
    });
    expect(unknown.statusCode).toBe(404);
    expect(
      (await asOperator(ownerToken, 'DELETE', '/operators/00000000-0000-4000-8000-000000000000')).json().code,
    ).toBe('admin.operator_not_found');
    const bad = await asOperator(ownerToken, 'PUT', `/operators/${owner.person.identityId}`, {
      role: 'root',
    });
    expect(bad.statusCode).toBe(400);
    const list = (await asOperator(ownerToken, 'GET', '/operators')).json().data;
    expect(list.slice(0, 2)).toEqual([
      {
        identityId: null,
        email: OWNER_EMAIL,
        identifier: null,
        role: 'owner',
        source: 'setting',
        grantedBy: null,
        grantedAt: null,
      },
      {
        identityId: null,
        email: AUDITOR_EMAIL,
        identifier: null,
        role: 'auditor',
        source: 'setting',
        grantedBy: null,
        grantedAt: null,
      },
    ]);
  });

  it('the list names each granted operator by their first verified identifier, an audited read', async () => {
    const c = await withAuthenticator(f);
    const put = await asOperator(ownerToken, 'PUT', `/operators/${c.person.identityId}`, { role: 'auditor' });
    expect(put.statusCode, put.body).toBe(200);
    // The grant's own answer names nobody: it is not a read.
    expect(put.json().data.identifier).toBeUndefined();
    const list = await asOperator(ownerToken, 'GET', '/operators');
    expect(list.statusCode).toBe(200);
    const entries = list.json().data as { identityId: string | null; identifier: unknown; role: string }[];
    expect(entries.find((o) => o.identityId === c.person.identityId)).toMatchObject({
      identifier: { type: 'email', value: c.person.email },
      role: 'auditor',
      source: 'api',
    });
    // One admin.identity.read per identity named, by the operator who read the list.
    const trail = await adminRequest(admin(), 'GET', `/audit-records?identityId=${c.person.identityId}`);
    const reads = trail
      .json()
      .data.filter((r: { name: string; details: { view?: string } }) => r.name === 'admin.identity.read');
    expect(reads).toHaveLength(1);
    expect(reads[0]).toMatchObject({
      actor: `operator:${owner.person.identityId}`,
      target: c.person.identityId,
      details: { view: 'operators' },
    });
    // A support operator reads the list too (operators:read), still without a single write.
    const support = await withAuthenticator(f);
    await asOperator(ownerToken, 'PUT', `/operators/${support.person.identityId}`, { role: 'support' });
    const supportToken = await consoleAccessToken(f, support);
    expect((await asOperator(supportToken, 'GET', '/operators')).statusCode).toBe(200);
    const own = await asOperator(supportToken, 'PUT', `/operators/${support.person.identityId}`, {
      role: 'owner',
    });
    expect(own.statusCode).toBe(403);
    expect(own.json().code).toBe('admin.forbidden');
    await asOperator(ownerToken, 'DELETE', `/operators/${c.person.identityId}`);
    await asOperator(ownerToken, 'DELETE', `/operators/${support.person.identityId}`);
  });

  it('an auditor reads the audit trail and nothing else', async () => {
    const auditor = await configured(AUDITOR_EMAIL);
    const token = await consoleAccessToken(f, auditor);
    expect((await asOperator(token, 'GET', '/audit-records')).statusCode).toBe(200);
    expect((await asOperator(token, 'GET', '/audit-records/stream')).statusCode).toBe(200);
    for (const url of ['/identities', '/operators', '/events', '/oidc-clients']) {
      const r = await asOperator(token, 'GET', url);
      expect(r.statusCode, url).toBe(403);
    }
  });
});

describe("an operator's erasure", () => {
  it('needs the identifier typed again and a sign-in with a second factor within ELEVATION_TTL', async () => {
    const c = await withAuthenticator(f);
    await asOperator(ownerToken, 'PUT', `/operators/${c.person.identityId}`, { role: 'owner' });
    const token = await consoleAccessToken(f, c);
    const target = await createPerson(f.t.ctx);
    const erase = (body?: object) =>
      asOperator(token, 'POST', `/identities/${target.identityId}/erasures`, body);
    for (const body of [undefined, { identifier: 'someone-else@example.com' }, { identifier: 'DELETE' }]) {
      const r = await erase(body);
      expect(r.statusCode, JSON.stringify(body)).toBe(422);
      expect(r.json().code).toBe('admin.erasure_not_confirmed');
    }
    expect(
      (await adminRequest(admin(), 'GET', `/identities/${target.identityId}`)).json().data.erasedAt,
    ).toBeNull();
    // As the person wrote it: case and spaces do not matter.
    expect((await erase({ identifier: ` ${target.email.toUpperCase()} ` })).statusCode).toBe(204);

    // The same operator once ELEVATION_TTL (300 s) has passed since that sign-in: sign in again.
    const later = await createPerson(f.t.ctx);
    f.t.clock.advance(301);
    const stale = await asOperator(token, 'POST', `/identities/${later.identityId}/erasures`, {
      identifier: later.email,
    });
    expect(stale.statusCode).toBe(403);
    expect(stale.json().code).toBe('admin.step_up_required');
    const fresh = await consoleAccessToken(f, c);
    const again = await asOperator(fresh, 'POST', `/identities/${later.identityId}/erasures`, {
      identifier: later.email,
    });
    expect(again.statusCode, again.body).toBe(204);
    const trail = await adminRequest(admin(), 'GET', `/audit-records?identityId=${later.identityId}`);
    expect(trail.json().data.map((r: { name: string; actor: string }) => `${r.name} ${r.actor}`)).toContain(
      `identity.erased operator:${c.person.identityId}`,
    );
  });
});

describe('the console settings', () => {
  const env = (extra: Record<string, string>) =>
    testEnv({ ADMIN_PORT: '3999', ADMIN_API_KEYS: adminEntry('ops', 'k'.repeat(40)), ...extra });

  it('CONSOLE_OPERATORS takes role:id and role:address entries, each identity once', () => {
    const id = '0b5e6a52-59a3-4e5d-9a4c-3d1f6b2a7c11';
    const config = loadConfig(env({ CONSOLE_OPERATORS: `support:${id.toUpperCase()},owner:A@Example.com` }));
    expect(config.admin.console.operators).toEqual([
      { role: 'support', identityId: id },
      { role: 'owner', email: 'a@example.com' },
    ]);
    expect(config.admin.console.origin).toBe(CONSOLE_ORIGIN);
    for (const bad of [
      'root:a@example.com',
      'owner',
      'owner:',
      'owner:nobody',
      `owner:${id},support:${id}`,
    ]) {
      expect(() => loadConfig(env({ CONSOLE_OPERATORS: bad })), bad).toThrow(ConfigError);
    }
  });

  it("the console's client id is the built-in client's while the admin listener is on", () => {
    const clients = JSON.stringify([
      { client_id: 'console', redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none' },
    ]);
    expect(() => loadConfig(env({ OIDC_CLIENTS: clients }))).toThrow(/OIDC_CLIENTS/);
    expect(() => loadConfig(testEnv({ OIDC_CLIENTS: clients }))).not.toThrow();
    expect(loadConfig(env({ CONSOLE_ORIGIN: 'https://ops.example' })).admin.console.origin).toBe(
      'https://ops.example',
    );
    expect(() => loadConfig(env({ CONSOLE_ORIGIN: 'https://ops.example/console' }))).toThrow(ConfigError);
  });
});
