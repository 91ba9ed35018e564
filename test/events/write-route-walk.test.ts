import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import { decodeJwt } from 'jose';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMITTED, type EventType } from '../../src/features/events/catalogue.js';
import { linkGrant } from '../../src/features/oidc/repository.js';
import { ADMIN_KEY } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { SoftAuthenticator } from '../helpers/authenticator.js';
import { startDns, type TestDns } from '../helpers/dns.js';
import { elevate, elevatedPerson } from '../helpers/elevation.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { followToCallback, hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import { ISSUER, idToken, issueNonce, nonceHash, PROVIDER, ProviderSink } from '../providers/support.js';
import { DEFAULT_POLICY, personWithFactor, ticketFor, totp } from '../second-factors/helpers.js';
import { parse, TestIdp } from '../sso/idp.js';
import { handoffOf, postAcs, startFlow } from '../sso/support.js';

/*
 * Issue 44: "A test walks every write route of the OpenAPI document and fails when one changes
 * state without an event." Every POST, PUT, PATCH and DELETE of the public document
 * (GET /openapi.json) and of the admin one has a row here: how to call it successfully (its
 * prerequisites made through other routes, outside the measurement) and the event types that one
 * call appends, or an exemption saying why the route changes nothing an application mirrors. The
 * walk fails when the documents hold a write route the table does not know, when the table names a
 * route the documents no longer hold, when a route's successful call appends other types than its
 * row says (none at all for a route that must emit), and when an exempt route appends one.
 *
 * One app for the walk, every request injected in process, Argon2 at the test environment's size.
 */

const ORIGIN = 'https://id.example';
const RP_ID = 'id.example';
// The POST callback is form_post's, which only the Apple preset answers with: appleid.apple.com is
// a loopback fake (hostMappingFetch), as in test/providers/redirect-presets.test.ts.
const UP = 'apple';
const UP_CALLBACK = `${ORIGIN}/api/v1/providers/${UP}/callback`;
const UP_CLIENT = { clientId: 'walk-service', clientSecret: `walk-secret-${'w'.repeat(32)}` };
const APPLE = {
  teamId: 'TEAM123456',
  keyId: 'KEY1234567',
  keys: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
};
const hosts: Record<string, string> = {};
const outbound = hostMappingFetch(hosts);
const STRONG = 'lantern-orchard-velvet-73';

// The reasons a write route emits nothing. Each names what it changes and why no application
// mirrors that (the audit log records what it must).
const CHALLENGE = 'sends a code: a challenge, nothing exists until the code is confirmed';
const ELEVATION = 'mints an elevation: a five-minute proof bound to the session, no account state';
const OPTIONS = 'a WebAuthn challenge for the next call: a ticket, nothing else';
const RENEWAL = 'rotates the tokens of a session that goes on: no session begins or ends';
const CLIENTS =
  "the OpenID Provider's client registry: no catalogue type (clients are the operator's, audited)";
const WEBHOOKS = 'webhook endpoint management itself (audited): the event plumbing, not a change it reports';
const OPERATORS =
  "the admin listener's own access control (audited): who runs the service, not a change to its people";

let t: TestApp;
let sink: ProviderSink;
let upstream: Upstream;
// A domain verification's TXT lookup asks this loopback DNS server (DNS_RESOLVERS).
let dns: TestDns;

beforeAll(async () => {
  sink = await ProviderSink.start();
  dns = await startDns();
  upstream = await startUpstream({
    issuer: 'https://appleid.apple.com',
    ...UP_CLIENT,
    redirectUris: [UP_CALLBACK],
    appleSecret: { publicKey: APPLE.keys.publicKey, teamId: APPLE.teamId, keyId: APPLE.keyId },
  });
  hosts['appleid.apple.com'] = upstream.origin;
  t = await createTestApp({
    admin: true,
    upstreamFetch: outbound,
    env: {
      PUBLIC_ORIGIN: ORIGIN,
      IDENTITY_PROVIDERS: JSON.stringify([
        { name: PROVIDER, issuer: ISSUER, audience: 'identity-service-client', jwksUri: sink.jwksUri },
        {
          name: UP,
          preset: 'apple',
          clientId: UP_CLIENT.clientId,
          teamId: APPLE.teamId,
          keyId: APPLE.keyId,
          privateKey: APPLE.keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        },
      ]),
      // The sweep ends no grant behind a row's back (the rows that end grants call the route).
      OIDC_SWEEP_SECONDS: '60',
      SIGN_IN_CODES: 'email',
      // The hosted pages a sign-in code's link opens (SIGN_IN_LINKS, on by default).
      ACCOUNT_UI: 'on',
      DNS_RESOLVERS: dns.address,
    },
  });
}, 60_000);
afterAll(async () => {
  await t?.close();
  await sink?.close();
  await upstream?.close();
  await dns?.close();
});

// ---- requests ---------------------------------------------------------------------------------

type Method = 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'GET';

interface Call {
  token?: string;
  elevation?: string;
  payload?: unknown;
  headers?: Record<string, string>;
}

/** A small PNG for the picture upload (PUT /account/picture). */
const PNG = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#808080' } })
  .png()
  .toBuffer();

function api(method: Method, url: string, c: Call = {}): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method,
    url: `/api/v1${url}`,
    headers: {
      origin: ORIGIN,
      ...(c.token ? { authorization: `Bearer ${c.token}` } : {}),
      ...(c.elevation ? { 'x-elevation-token': c.elevation } : {}),
      ...c.headers,
    },
    ...(c.payload === undefined ? {} : { payload: c.payload as object }),
  });
}

function adm(method: Method, url: string, payload?: unknown, headers: Record<string, string> = {}) {
  return t.admin!.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

/** A prerequisite's call: it must succeed. */
async function ok(res: Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse> {
  const r = await res;
  expect(r.statusCode, `${r.statusCode} ${r.body}`).toBeLessThan(300);
  return r;
}

const email = (label = 'w') => `${label}-${randomBytes(5).toString('hex')}@example.com`;
const slug = () => `walk-${randomBytes(5).toString('hex')}`;

/** A sign-in code's link for a new person, as its message carries it. */
async function signInLink(): Promise<{ signInCodeId: string; token: string }> {
  const p = await createPerson(t.ctx);
  await ok(api('POST', '/sign-ins/codes', { payload: { identifierType: 'email', identifier: p.email } }));
  await waitForCode(t.config.dataDir, p.email, 1);
  const [, signInCodeId, token] =
    messagesTo(t.config.dataDir, p.email)[0].text.match(/#\/sign-in\/link\/([0-9a-f-]{36})\/(\S+)/) ?? [];
  return { signInCodeId, token };
}

async function signedIn(): Promise<{ person: Person; token: string; refreshToken: string }> {
  const person = await createPerson(t.ctx);
  const g = await signIn(t.app, person);
  return { person, token: g.accessToken, refreshToken: g.refreshToken };
}

/** An organization owned by a fresh signed-in person, with a second member. */
async function organization(owner?: { token: string }) {
  const o = owner ?? (await signedIn());
  const made = await ok(
    api('POST', '/organizations', { token: o.token, payload: { name: 'Walk', slug: slug() } }),
  );
  const id = made.json().data.id as string;
  const other = await signedIn();
  await ok(adm('PUT', `/organizations/${id}/members/${other.person.identityId}`, { role: 'member' }));
  return { id, owner: o, other };
}

const domain = () => `walk-${randomBytes(5).toString('hex')}.example.com`;

/** A domain claimed by the organization's owner, with the TXT record it must publish. */
async function claimDomain(org: { id: string; owner: { token: string } }) {
  const r = await ok(
    api('POST', `/organizations/${org.id}/domains`, {
      token: org.owner.token,
      payload: { domain: domain() },
    }),
  );
  return r.json().data as { id: string; txtRecord: { name: string; value: string } };
}

/** A SAML IdP made here, and the metadata of a connection to it. */
const samlIdp = await TestIdp.create(new Date('2026-03-01T12:00:00.000Z'), 'walk-idp');
const samlConnection = (name = 'Walk IdP') => ({
  type: 'saml',
  name,
  saml: { metadataXml: samlIdp.metadata() },
});

/** An organization with a domain an operator verified and an enabled SAML connection. */
async function ssoOrganization() {
  const org = await organization();
  const d = await claimDomain(org);
  await ok(adm('POST', `/organizations/${org.id}/domains/${d.id}/verifications`));
  const c = await ok(
    api('POST', `/organizations/${org.id}/connections`, {
      token: org.owner.token,
      payload: { ...samlConnection(), enabled: true },
    }),
  );
  const data = c.json().data as { id: string; saml: { acsUrl: string; entityId: string } };
  const host = (d as unknown as { domain: string }).domain;
  return { org, connectionId: data.id, acsUrl: data.saml.acsUrl, entityId: data.saml.entityId, domain: host };
}

/** A signed response for a new person of the organization's domain, answering `requestId`. */
function samlResponse(sso: Awaited<ReturnType<typeof ssoOrganization>>, requestId: string) {
  return samlIdp.response({
    acsUrl: sso.acsUrl,
    audience: sso.entityId,
    inResponseTo: requestId,
    now: t.clock.now(),
    nameId: `p-${randomBytes(4).toString('hex')}@${sso.domain}`,
  });
}

/** An organization with a verified domain and a SCIM token (docs/scim.md). */
async function scimTenant() {
  const org = await organization();
  const d = await claimDomain(org);
  await ok(adm('POST', `/organizations/${org.id}/domains/${d.id}/verifications`));
  const domainName = d.txtRecord.name.replace('_identity-service-verification.', '');
  const made = await ok(
    api('POST', `/organizations/${org.id}/scim-tokens`, {
      token: org.owner.token,
      payload: { name: 'Walk' },
    }),
  );
  return { org, domain: domainName, token: made.json().data.token as string };
}

function scimCall(token: string, method: Method, url: string, payload?: unknown) {
  return t.app.inject({
    method,
    url: `/scim/v2${url}`,
    headers: {
      authorization: `Bearer ${token}`,
      ...(payload ? { 'content-type': 'application/scim+json' } : {}),
    },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
}

const scimUser = (domainName: string) => {
  const name = `s${randomBytes(4).toString('hex')}@${domainName}`;
  return {
    userName: name,
    name: { givenName: 'Walk', familyName: 'Er' },
    emails: [{ value: name, primary: true }],
  };
};

async function provisioned(tn: Awaited<ReturnType<typeof scimTenant>>) {
  return (await ok(scimCall(tn.token, 'POST', '/Users', scimUser(tn.domain)))).json() as {
    id: string;
    userName: string;
  };
}

const SCIM_GROUPS =
  'a SCIM group (audited): no catalogue type; a group mapped to a role changes memberships, which emit organization.membership.updated';
const SCIM_TOKENS =
  "an organization's SCIM token (audited): a credential, not a change an application mirrors";

/** The token of the newest invitation message to `to`. */
function invitationToken(to: string): string {
  const mine = messagesTo(t.config.dataDir, to);
  const text = mine[mine.length - 1]?.text ?? '';
  const m = /\/account\/#\/invitations\/([A-Za-z0-9_-]{43})/.exec(text);
  expect(m, text).not.toBeNull();
  return m?.[1] ?? '';
}

/** A grant linked to the caller's session, as the consent page links one (interactions.ts). */
async function grantFor(who: { person: Person; token: string }, clientId: string): Promise<string> {
  const grantId = randomUUID();
  const sessionId = String(decodeJwt(who.token).sid);
  const identity = await t.ctx.database.db
    .selectFrom('identities')
    .select('session_epoch')
    .where('id', '=', who.person.identityId)
    .executeTakeFirstOrThrow();
  await linkGrant(
    t.ctx.database.db,
    {
      grantId,
      identityId: who.person.identityId,
      sessionId,
      clientId,
      epoch: identity.session_epoch,
      offline: false,
      scope: 'openid email',
    },
    t.clock.now(),
  );
  return grantId;
}

async function providerToken(sub: string): Promise<string> {
  const { nonce } = await issueNonce(t.app);
  return idToken(sink, t.clock, { sub, nonce: nonceHash(nonce) });
}

/** A flow with the redirect provider begun and answered: the callback's form, as a form_post would carry it. */
async function atCallback(cookie: { value?: string }) {
  const started = await ok(
    api('POST', '/provider-flows', {
      payload: { provider: UP, intent: 'sign_in', returnTo: '/account/#/sign-in' },
    }),
  );
  cookie.value = cookiesOf(started);
  const arrival = await followToCallback(started.json().data.authorizationUrl, {
    callback: UP_CALLBACK,
    fetch: outbound,
  });
  expect(arrival.method).toBe('POST');
  return arrival.method === 'POST' ? arrival.form : new URLSearchParams();
}

function cookiesOf(res: LightMyRequestResponse): string {
  const raw = res.headers['set-cookie'];
  const lines = raw === undefined ? [] : Array.isArray(raw) ? raw : [String(raw)];
  return lines.map((l) => l.split(';')[0]).join('; ');
}

function postCallback(form: URLSearchParams, cookie: string | undefined) {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/providers/${UP}/callback`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    payload: form.toString(),
  });
}

/** The person the Apple fake signs in next: a new subject. */
function newAppleAccount(): void {
  const sub = `001${randomBytes(4).toString('hex')}.${randomBytes(8).toString('hex')}`;
  upstream.setAccount(sub, { email: email('apple'), email_verified: 'true' });
  upstream.login = sub;
}

async function passkeyHolder() {
  const who = await elevatedPerson(t);
  const auth = new SoftAuthenticator(ORIGIN, RP_ID);
  const opts = await ok(api('POST', '/passkeys/options', { headers: who.headers, payload: {} }));
  await ok(
    api('POST', '/passkeys', {
      headers: who.headers,
      payload: { credential: auth.create(opts.json().data.options), label: 'Walk' },
    }),
  );
  return { who, auth };
}

// ---- the measurement --------------------------------------------------------------------------

/** The one call a row measures: the events appended while it ran, in order. */
type Act = (send: () => Promise<LightMyRequestResponse>) => Promise<LightMyRequestResponse>;

async function lastAppended(): Promise<number> {
  const r = await t.ctx.database.db
    .selectFrom('events')
    .select((eb) => eb.fn.max('appended').as('n'))
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

async function appendedAfter(n: number): Promise<EventType[]> {
  const rows = await t.ctx.database.db
    .selectFrom('events')
    .select('type')
    .where('appended', '>', n)
    .orderBy('appended')
    .execute();
  return rows.map((r) => r.type as EventType);
}

interface Row {
  /** The event types one successful call appends (each at least once, no other). */
  emits?: EventType[];
  /** Why the route changes nothing an application mirrors: it must then append no event. */
  exempt?: string;
  /** Makes the prerequisites, then calls the route once through `act`. */
  run(act: Act): Promise<void>;
}

const ROWS: Record<string, Row> = {
  // ---- sign-up, sign-in, sessions
  'POST /api/v1/sign-ups': {
    exempt: CHALLENGE,
    run: (act) =>
      act(() =>
        api('POST', '/sign-ups', {
          payload: { identifierType: 'email', identifier: email(), password: STRONG },
        }),
      ).then(() => {}),
  },
  'POST /api/v1/sign-ups/confirmations': {
    emits: ['identity.created'],
    async run(act) {
      const body = { identifierType: 'email', identifier: email(), password: STRONG };
      await ok(api('POST', '/sign-ups', { payload: body }));
      const code = await waitForCode(t.config.dataDir, body.identifier, 1);
      await act(() => api('POST', '/sign-ups/confirmations', { payload: { ...body, code } }));
    },
  },
  'POST /api/v1/sign-ins': {
    emits: ['session.created'],
    async run(act) {
      const p = await createPerson(t.ctx);
      await act(() =>
        api('POST', '/sign-ins', {
          payload: { identifierType: 'email', identifier: p.email, password: p.password },
        }),
      );
    },
  },
  'POST /api/v1/sign-ins/codes': {
    exempt: CHALLENGE,
    async run(act) {
      const p = await createPerson(t.ctx);
      await act(() =>
        api('POST', '/sign-ins/codes', { payload: { identifierType: 'email', identifier: p.email } }),
      );
    },
  },
  'POST /api/v1/sign-ins/codes/{id}': {
    emits: ['session.created'],
    async run(act) {
      const p = await createPerson(t.ctx);
      const body = { identifierType: 'email', identifier: p.email };
      const sent = await ok(api('POST', '/sign-ins/codes', { payload: body }));
      const code = await waitForCode(t.config.dataDir, p.email, 1);
      await act(() =>
        api('POST', `/sign-ins/codes/${sent.json().data.signInCodeId}`, { payload: { ...body, code } }),
      );
    },
  },
  'POST /api/v1/sign-ins/links/lookups': {
    exempt: 'reads what a sign-in link shows before Continue: nothing is written',
    async run(act) {
      const link = await signInLink();
      await act(() => api('POST', '/sign-ins/links/lookups', { payload: link }));
    },
  },
  'POST /api/v1/sign-ins/links': {
    emits: ['session.created'],
    async run(act) {
      const link = await signInLink();
      await act(() => api('POST', '/sign-ins/links', { payload: link }));
    },
  },
  'POST /api/v1/sign-ins/renewals': {
    exempt: RENEWAL,
    async run(act) {
      const s = await signedIn();
      await act(() => api('POST', '/sign-ins/renewals', { payload: { refreshToken: s.refreshToken } }));
    },
  },
  'POST /api/v1/sign-outs': {
    emits: ['session.ended'],
    async run(act) {
      const s = await signedIn();
      await act(() => api('POST', '/sign-outs', { token: s.token }));
    },
  },
  'POST /api/v1/sign-outs/everywhere': {
    emits: ['session.ended'],
    async run(act) {
      const s = await signedIn();
      await act(() => api('POST', '/sign-outs/everywhere', { token: s.token }));
    },
  },
  'POST /api/v1/sign-outs/others': {
    emits: ['session.ended'],
    async run(act) {
      const s = await signedIn();
      await signIn(t.app, s.person);
      await act(() => api('POST', '/sign-outs/others', { token: s.token }));
    },
  },
  'POST /api/v1/account/deletions': {
    emits: ['identity.erased', 'session.ended'],
    async run(act) {
      const { person, grant, elevation } = await elevatedPerson(t);
      await act(() =>
        api('POST', '/account/deletions', {
          token: grant.accessToken,
          elevation,
          payload: { identifier: person.email },
        }),
      );
    },
  },
  'POST /api/v1/session/active-organization': {
    exempt:
      'which organization a session acts in: its next access token tells the application; no organization, membership or session begins or ends',
    async run(act) {
      const org = await organization();
      await act(() =>
        api('POST', '/session/active-organization', {
          token: org.owner.token,
          payload: { organizationId: org.id },
        }),
      );
    },
  },
  'POST /api/v1/sessions/{id}/revocations': {
    emits: ['session.ended'],
    async run(act) {
      const s = await signedIn();
      const other = await signIn(t.app, s.person);
      const sid = String(decodeJwt(other.accessToken).sid);
      await act(() => api('POST', `/sessions/${sid}/revocations`, { token: s.token }));
    },
  },
  'POST /api/v1/browser-session': {
    exempt: "hands a session the person already holds to the hosted pages' cookie: no session begins",
    async run(act) {
      const s = await signedIn();
      await act(() => api('POST', '/browser-session', { payload: { refreshToken: s.refreshToken } }));
    },
  },
  'POST /api/v1/browser-session/renewals': {
    exempt: RENEWAL,
    async run(act) {
      const s = await signedIn();
      const handed = await ok(api('POST', '/browser-session', { payload: { refreshToken: s.refreshToken } }));
      await act(() => api('POST', '/browser-session/renewals', { headers: { cookie: cookiesOf(handed) } }));
    },
  },
  'POST /api/v1/browser-session/sign-outs': {
    emits: ['session.ended'],
    async run(act) {
      const s = await signedIn();
      const handed = await ok(api('POST', '/browser-session', { payload: { refreshToken: s.refreshToken } }));
      await act(() => api('POST', '/browser-session/sign-outs', { headers: { cookie: cookiesOf(handed) } }));
    },
  },

  // ---- step-up
  'POST /api/v1/step-ups': {
    exempt: CHALLENGE,
    async run(act) {
      const s = await signedIn();
      await act(() => api('POST', '/step-ups', { token: s.token, payload: { channel: 'identifier' } }));
    },
  },
  'POST /api/v1/step-ups/confirmations': {
    exempt: ELEVATION,
    async run(act) {
      const s = await signedIn();
      const before = messagesTo(t.config.dataDir, s.person.email).length;
      const start = await ok(
        api('POST', '/step-ups', { token: s.token, payload: { channel: 'identifier' } }),
      );
      const code = await waitForCode(t.config.dataDir, s.person.email, before + 1);
      await act(() =>
        api('POST', '/step-ups/confirmations', {
          token: s.token,
          payload: { challengeId: start.json().data.challengeId, code },
        }),
      );
    },
  },

  // ---- second factors
  'POST /api/v1/sign-ins/second-factors': {
    emits: ['session.created'],
    async run(act) {
      const { person, factor } = await personWithFactor(t);
      const ticket = await ticketFor(t.app, person);
      await act(() =>
        api('POST', '/sign-ins/second-factors', {
          payload: { secondFactorTicket: ticket, code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()) },
        }),
      );
    },
  },
  'POST /api/v1/second-factors': {
    exempt: 'an enrolment begun: the factor counts only once its first code is confirmed',
    async run(act) {
      const who = await elevatedPerson(t);
      await act(() => api('POST', '/second-factors', { headers: who.headers, payload: {} }));
    },
  },
  'POST /api/v1/second-factors/confirmations': {
    emits: ['identity.second_factor.added'],
    async run(act) {
      const who = await elevatedPerson(t);
      const made = await ok(api('POST', '/second-factors', { headers: who.headers, payload: {} }));
      const code = totp(made.json().data.secret, DEFAULT_POLICY, t.clock.now());
      await act(() =>
        api('POST', '/second-factors/confirmations', { token: who.grant.accessToken, payload: { code } }),
      );
      t.clock.advance(DEFAULT_POLICY.period);
    },
  },
  'POST /api/v1/second-factors/{id}/removals': {
    emits: ['identity.second_factor.removed'],
    async run(act) {
      const { person, grant, factor } = await personWithFactor(t);
      const elevation = await elevate(t, grant.accessToken, person.email, {
        secret: factor.secret,
        policy: DEFAULT_POLICY,
      });
      await act(() =>
        api('POST', `/second-factors/${factor.id}/removals`, { token: grant.accessToken, elevation }),
      );
    },
  },
  'POST /api/v1/recovery-codes': {
    exempt:
      'new recovery codes for the second factors the identity holds: secrets replaced, no factor added or removed',
    async run(act) {
      const { person, grant, factor } = await personWithFactor(t);
      const elevation = await elevate(t, grant.accessToken, person.email, {
        secret: factor.secret,
        policy: DEFAULT_POLICY,
      });
      await act(() => api('POST', '/recovery-codes', { token: grant.accessToken, elevation }));
    },
  },

  // ---- sign-in methods, passwords
  'POST /api/v1/sign-in-methods': {
    exempt: CHALLENGE,
    async run(act) {
      const who = await elevatedPerson(t);
      await act(() =>
        api('POST', '/sign-in-methods', {
          headers: who.headers,
          payload: { identifierType: 'email', identifier: email() },
        }),
      );
    },
  },
  'POST /api/v1/sign-in-methods/confirmations': {
    emits: ['identity.updated'],
    async run(act) {
      const who = await elevatedPerson(t);
      const address = email('added');
      await ok(
        api('POST', '/sign-in-methods', {
          headers: who.headers,
          payload: { identifierType: 'email', identifier: address },
        }),
      );
      const code = await waitForCode(t.config.dataDir, address, 1);
      await act(() =>
        api('POST', '/sign-in-methods/confirmations', { headers: who.headers, payload: { code } }),
      );
    },
  },
  'POST /api/v1/sign-in-methods/passwords': {
    emits: ['identity.password_changed'],
    async run(act) {
      // A first password: for an identity that has none (a sign-up by code, a provider sign-up).
      const who = await elevatedPerson(t);
      await t.ctx.database.db
        .updateTable('identities')
        .set({ password_hash: null })
        .where('id', '=', who.person.identityId)
        .execute();
      await act(() =>
        api('POST', '/sign-in-methods/passwords', { headers: who.headers, payload: { newPassword: STRONG } }),
      );
    },
  },
  'POST /api/v1/sign-in-methods/{id}/removals': {
    emits: ['identity.updated'],
    async run(act) {
      const who = await elevatedPerson(t);
      const address = email('added');
      await ok(
        api('POST', '/sign-in-methods', {
          headers: who.headers,
          payload: { identifierType: 'email', identifier: address },
        }),
      );
      const code = await waitForCode(t.config.dataDir, address, 1);
      await ok(api('POST', '/sign-in-methods/confirmations', { headers: who.headers, payload: { code } }));
      const list = await ok(api('GET', '/sign-in-methods', { token: who.grant.accessToken }));
      const added = (list.json().data as Array<{ id: string; display: string | null }>).find(
        (m) =>
          m.display !== null &&
          m.display.split('@')[1] === address.split('@')[1] &&
          m.display !== who.person.email,
      );
      expect(added).toBeDefined();
      await act(() => api('POST', `/sign-in-methods/${added?.id}/removals`, { headers: who.headers }));
    },
  },
  'PATCH /api/v1/account': {
    emits: ['identity.updated'],
    async run(act) {
      const s = await signedIn();
      // The language and the name at once: one change, one event.
      await act(() =>
        api('PATCH', '/account', {
          token: s.token,
          payload: { locale: 'fr', givenName: 'Ada', displayName: null },
        }),
      );
    },
  },
  'PUT /api/v1/account/picture': {
    emits: ['identity.updated'],
    async run(act) {
      const s = await signedIn();
      await act(() =>
        api('PUT', '/account/picture', {
          token: s.token,
          headers: { 'content-type': 'image/png' },
          payload: PNG,
        }),
      );
    },
  },
  'DELETE /api/v1/account/picture': {
    emits: ['identity.updated'],
    async run(act) {
      const s = await signedIn();
      await ok(
        api('PUT', '/account/picture', {
          token: s.token,
          headers: { 'content-type': 'image/png' },
          payload: PNG,
        }),
      );
      await act(() => api('DELETE', '/account/picture', { token: s.token }));
    },
  },
  'POST /api/v1/password-changes': {
    emits: ['identity.password_changed'],
    async run(act) {
      const s = await signedIn();
      await act(() =>
        api('POST', '/password-changes', {
          token: s.token,
          payload: { currentPassword: s.person.password, newPassword: STRONG },
        }),
      );
    },
  },
  'POST /api/v1/password-recoveries': {
    exempt: CHALLENGE,
    async run(act) {
      const p = await createPerson(t.ctx);
      await act(() =>
        api('POST', '/password-recoveries', { payload: { identifierType: 'email', identifier: p.email } }),
      );
    },
  },
  'POST /api/v1/password-recoveries/confirmations': {
    emits: ['identity.password_changed'],
    async run(act) {
      const p = await createPerson(t.ctx);
      const body = { identifierType: 'email', identifier: p.email };
      await ok(api('POST', '/password-recoveries', { payload: body }));
      const code = await waitForCode(t.config.dataDir, p.email, 1);
      await act(() =>
        api('POST', '/password-recoveries/confirmations', {
          payload: { ...body, code, newPassword: STRONG },
        }),
      );
    },
  },

  // ---- upstream providers
  'POST /api/v1/provider-nonces': {
    exempt: 'a nonce for an ID token to carry: a ticket the sign-in spends',
    run: (act) => act(() => api('POST', '/provider-nonces')).then(() => {}),
  },
  'POST /api/v1/step-ups/providers': {
    exempt: ELEVATION,
    async run(act) {
      const sub = `walk-${randomUUID()}`;
      const signed = await ok(
        api('POST', '/sign-ins', {
          payload: { identifierType: 'provider', provider: PROVIDER, idToken: await providerToken(sub) },
        }),
      );
      const token = signed.json().data.accessToken as string;
      const idt = await providerToken(sub);
      await act(() =>
        api('POST', '/step-ups/providers', { token, payload: { provider: PROVIDER, idToken: idt } }),
      );
    },
  },
  'POST /api/v1/provider-flows': {
    exempt: "a flow begun: its state waits for the provider's answer",
    async run(act) {
      await act(() =>
        api('POST', '/provider-flows', {
          payload: { provider: UP, intent: 'sign_in', returnTo: '/account/#/sign-in' },
        }),
      );
    },
  },
  'POST /api/v1/providers/{name}/callback': {
    exempt:
      "the provider's answer for a subject already known: a handoff ticket for the page to exchange (the session is opened by the exchange)",
    async run(act) {
      newAppleAccount();
      // The subject's first trip (its sign-up) is a prerequisite; the second is measured.
      const first: { value?: string } = {};
      const form1 = await atCallback(first);
      const back = await postCallback(form1, first.value);
      expect(back.statusCode, back.body).toBe(303);
      const code = new URLSearchParams(String(back.headers.location).split('?')[1]).get('handoff');
      expect(code, String(back.headers.location)).toBeTruthy();
      await ok(
        api('POST', '/provider-handoffs', { payload: { code }, headers: { cookie: first.value ?? '' } }),
      );
      const second: { value?: string } = {};
      const form2 = await atCallback(second);
      await act(async () => {
        const res = await postCallback(form2, second.value);
        expect(String(res.headers.location)).toContain('handoff=');
        // 303 is the callback's success: answered as 2xx for the walk's check.
        return {
          ...res,
          statusCode: res.statusCode === 303 ? 200 : res.statusCode,
        } as LightMyRequestResponse;
      });
    },
  },
  'POST /api/v1/provider-handoffs': {
    emits: ['session.created'],
    async run(act) {
      newAppleAccount();
      const first: { value?: string } = {};
      const back = await postCallback(await atCallback(first), first.value);
      const code = new URLSearchParams(String(back.headers.location).split('?')[1]).get('handoff');
      await ok(
        api('POST', '/provider-handoffs', { payload: { code }, headers: { cookie: first.value ?? '' } }),
      );
      const second: { value?: string } = {};
      const again = await postCallback(await atCallback(second), second.value);
      const code2 = new URLSearchParams(String(again.headers.location).split('?')[1]).get('handoff');
      await act(() =>
        api('POST', '/provider-handoffs', {
          payload: { code: code2 },
          headers: { cookie: second.value ?? '' },
        }),
      );
    },
  },

  // ---- organizations (members' routes)
  'POST /api/v1/organizations': {
    emits: ['organization.created', 'organization.membership.created'],
    async run(act) {
      const s = await signedIn();
      await act(() =>
        api('POST', '/organizations', { token: s.token, payload: { name: 'Walk', slug: slug() } }),
      );
    },
  },
  'PATCH /api/v1/organizations/{organizationId}': {
    emits: ['organization.updated'],
    async run(act) {
      const org = await organization();
      await act(() =>
        api('PATCH', `/organizations/${org.id}`, { token: org.owner.token, payload: { name: 'Walk 2' } }),
      );
    },
  },
  'PUT /api/v1/organizations/{organizationId}/members/{identityId}/role': {
    emits: ['organization.membership.updated'],
    async run(act) {
      const org = await organization();
      await act(() =>
        api('PUT', `/organizations/${org.id}/members/${org.other.person.identityId}/role`, {
          token: org.owner.token,
          payload: { role: 'admin' },
        }),
      );
    },
  },
  'DELETE /api/v1/organizations/{organizationId}/members/{identityId}': {
    emits: ['organization.membership.deleted'],
    async run(act) {
      const org = await organization();
      await act(() =>
        api('DELETE', `/organizations/${org.id}/members/${org.other.person.identityId}`, {
          token: org.owner.token,
        }),
      );
    },
  },
  'POST /api/v1/organizations/{organizationId}/ownership-transfers': {
    emits: ['organization.membership.updated'],
    async run(act) {
      const who = await elevatedPerson(t);
      const org = await organization({ token: who.grant.accessToken });
      await act(() =>
        api('POST', `/organizations/${org.id}/ownership-transfers`, {
          headers: who.headers,
          payload: { identityId: org.other.person.identityId },
        }),
      );
    },
  },
  'POST /api/v1/organizations/{organizationId}/invitations': {
    emits: ['organization.invitation.created'],
    async run(act) {
      const org = await organization();
      await act(() =>
        api('POST', `/organizations/${org.id}/invitations`, {
          token: org.owner.token,
          payload: { identifierType: 'email', identifier: email('inv'), role: 'member' },
        }),
      );
    },
  },
  'DELETE /api/v1/organizations/{organizationId}/invitations/{invitationId}': {
    emits: ['organization.invitation.revoked'],
    async run(act) {
      const org = await organization();
      const sent = await ok(
        api('POST', `/organizations/${org.id}/invitations`, {
          token: org.owner.token,
          payload: { identifierType: 'email', identifier: email('inv'), role: 'member' },
        }),
      );
      await act(() =>
        api('DELETE', `/organizations/${org.id}/invitations/${sent.json().data.id}`, {
          token: org.owner.token,
        }),
      );
    },
  },
  'POST /api/v1/organizations/{organizationId}/domains': {
    emits: ['organization.domain.added'],
    async run(act) {
      const org = await organization();
      await act(() =>
        api('POST', `/organizations/${org.id}/domains`, {
          token: org.owner.token,
          payload: { domain: domain() },
        }),
      );
    },
  },
  'POST /api/v1/organizations/{organizationId}/domains/{domainId}/verifications': {
    emits: ['organization.domain.verified'],
    async run(act) {
      const org = await organization();
      const d = await claimDomain(org);
      dns.set(d.txtRecord.name, d.txtRecord.value);
      await act(() =>
        api('POST', `/organizations/${org.id}/domains/${d.id}/verifications`, { token: org.owner.token }),
      );
    },
  },
  'DELETE /api/v1/organizations/{organizationId}/domains/{domainId}': {
    emits: ['organization.domain.removed'],
    async run(act) {
      const org = await organization();
      const d = await claimDomain(org);
      await act(() => api('DELETE', `/organizations/${org.id}/domains/${d.id}`, { token: org.owner.token }));
    },
  },
  'POST /api/v1/organizations/{organizationId}/connections': {
    emits: ['organization.connection.created'],
    async run(act) {
      const org = await organization();
      await act(() =>
        api('POST', `/organizations/${org.id}/connections`, {
          token: org.owner.token,
          payload: samlConnection(),
        }),
      );
    },
  },
  'PUT /api/v1/organizations/{organizationId}/sso-requirement': {
    emits: ['organization.updated'],
    async run(act) {
      const { org } = await ssoOrganization();
      await act(() =>
        api('PUT', `/organizations/${org.id}/sso-requirement`, {
          token: org.owner.token,
          payload: { requireSso: true },
        }),
      );
    },
  },
  'POST /api/v1/organizations/{organizationId}/scim-tokens': {
    exempt: SCIM_TOKENS,
    async run(act) {
      const org = await organization();
      await act(() =>
        api('POST', `/organizations/${org.id}/scim-tokens`, {
          token: org.owner.token,
          payload: { name: 'x' },
        }),
      );
    },
  },
  'PATCH /api/v1/organizations/{organizationId}/connections/{connectionId}': {
    emits: ['organization.connection.updated'],
    async run(act) {
      const org = await organization();
      const c = await ok(
        api('POST', `/organizations/${org.id}/connections`, {
          token: org.owner.token,
          payload: samlConnection(),
        }),
      );
      await act(() =>
        api('PATCH', `/organizations/${org.id}/connections/${c.json().data.id}`, {
          token: org.owner.token,
          payload: { enabled: true },
        }),
      );
    },
  },
  'DELETE /api/v1/organizations/{organizationId}/scim-tokens/{tokenId}': {
    exempt: SCIM_TOKENS,
    async run(act) {
      const org = await organization();
      const made = await ok(
        api('POST', `/organizations/${org.id}/scim-tokens`, {
          token: org.owner.token,
          payload: { name: 'x' },
        }),
      );
      await act(() =>
        api('DELETE', `/organizations/${org.id}/scim-tokens/${made.json().data.id}`, {
          token: org.owner.token,
        }),
      );
    },
  },
  'DELETE /api/v1/organizations/{organizationId}/connections/{connectionId}': {
    emits: ['organization.connection.deleted'],
    async run(act) {
      const org = await organization();
      const c = await ok(
        api('POST', `/organizations/${org.id}/connections`, {
          token: org.owner.token,
          payload: samlConnection(),
        }),
      );
      await act(() =>
        api('DELETE', `/organizations/${org.id}/connections/${c.json().data.id}`, { token: org.owner.token }),
      );
    },
  },
  'POST /api/v1/sso/saml/{connectionId}/flows': {
    exempt: 'starts a SAML sign-in: a flow record and its cookie; nothing exists until the IdP answers',
    async run(act) {
      const sso = await ssoOrganization();
      await act(() =>
        api('POST', `/sso/saml/${sso.connectionId}/flows`, { payload: { returnTo: '/account/#/sign-in' } }),
      );
    },
  },
  'POST /api/v1/sign-ins/sso': {
    exempt:
      'starts a SAML sign-in found by the address’s domain: a flow record and its cookie, as the start by connection',
    async run(act) {
      const sso = await ssoOrganization();
      await act(() =>
        api('POST', '/sign-ins/sso', {
          payload: { email: `someone@${sso.domain}`, returnTo: '/account/#/sign-in' },
        }),
      );
    },
  },
  'PUT /api/v1/organizations/{organizationId}/scim-group-roles': {
    exempt:
      'the group → role mapping (audited): it changes memberships only as the directory next changes a group',
    async run(act) {
      const org = await organization();
      await act(() =>
        api('PUT', `/organizations/${org.id}/scim-group-roles`, {
          token: org.owner.token,
          payload: { groupKey: 'Admins', role: 'admin' },
        }),
      );
    },
  },
  'POST /api/v1/sso/saml/{connectionId}/acs': {
    // A first sign-in of a person of the domain: the identity is made (JIT) and joins.
    emits: ['identity.created', 'organization.membership.created'],
    async run(act) {
      const sso = await ssoOrganization();
      const flow = await startFlow(t, sso.connectionId);
      await act(async () => {
        const res = await postAcs(t, sso.connectionId, samlResponse(sso, flow.requestId), flow.cookie);
        expect(handoffOf(res), String(res.headers.location)).toBeTruthy();
        // 303 is the ACS's success: answered as 2xx for the walk's check.
        return {
          ...res,
          statusCode: res.statusCode === 303 ? 200 : res.statusCode,
        } as LightMyRequestResponse;
      });
    },
  },
  'POST /api/v1/sso-handoffs': {
    emits: ['session.created'],
    async run(act) {
      const sso = await ssoOrganization();
      const flow = await startFlow(t, sso.connectionId);
      const res = await postAcs(t, sso.connectionId, samlResponse(sso, flow.requestId), flow.cookie);
      const code = handoffOf(res) as string;
      await act(() => api('POST', '/sso-handoffs', { payload: { code }, headers: { cookie: flow.cookie } }));
    },
  },
  'POST /api/v1/sso-handoffs/previews': {
    exempt: 'reads what an IdP-initiated sign-in would sign into before Continue: nothing is written',
    async run(act) {
      const sso = await ssoOrganization();
      const flow = await startFlow(t, sso.connectionId);
      const res = await postAcs(t, sso.connectionId, samlResponse(sso, flow.requestId), flow.cookie);
      const code = handoffOf(res) as string;
      await act(() =>
        api('POST', '/sso-handoffs/previews', { payload: { code }, headers: { cookie: flow.cookie } }),
      );
    },
  },
  'POST /api/v1/organizations/{organizationId}/connections/{connectionId}/tests': {
    exempt:
      'starts a connection test (audited when the IdP answers): a flow record and its cookie; it signs nobody in',
    async run(act) {
      const sso = await ssoOrganization();
      await act(() =>
        api('POST', `/organizations/${sso.org.id}/connections/${sso.connectionId}/tests`, {
          token: sso.org.owner.token,
        }),
      );
    },
  },
  'POST /admin/v1/organizations/{id}/connections/{connectionId}/tests': {
    exempt:
      "starts an operator's connection test (audited when the IdP answers): an unbound flow record and its start URL; it signs nobody in",
    async run(act) {
      const sso = await ssoOrganization();
      await act(() => adm('POST', `/organizations/${sso.org.id}/connections/${sso.connectionId}/tests`));
    },
  },
  'POST /api/v1/sso-tests/results': {
    exempt: 'reads a connection test’s result for the session that started it: nothing is written',
    async run(act) {
      const sso = await ssoOrganization();
      const started = await ok(
        api('POST', `/organizations/${sso.org.id}/connections/${sso.connectionId}/tests`, {
          token: sso.org.owner.token,
        }),
      );
      const cookie = String(started.headers['set-cookie']).split(';')[0] as string;
      const request = new URL(started.json().data.redirectUrl).searchParams.get('SAMLRequest') ?? '';
      const requestId =
        parse(inflateRawSync(Buffer.from(request, 'base64')).toString('utf8')).documentElement?.getAttribute(
          'ID',
        ) ?? '';
      const res = await postAcs(t, sso.connectionId, samlResponse(sso, requestId), cookie);
      const code = new URLSearchParams(String(res.headers.location).split('?')[1] ?? '').get(
        'result',
      ) as string;
      await act(() =>
        api('POST', '/sso-tests/results', {
          token: sso.org.owner.token,
          payload: { code },
          headers: { cookie },
        }),
      );
    },
  },
  'POST /scim/v2/Users': {
    emits: ['identity.created', 'organization.membership.created'],
    async run(act) {
      const tn = await scimTenant();
      await act(() => scimCall(tn.token, 'POST', '/Users', scimUser(tn.domain)));
    },
  },
  'PUT /scim/v2/Users/{id}': {
    emits: ['identity.updated'],
    async run(act) {
      const tn = await scimTenant();
      const u = await provisioned(tn);
      await act(() =>
        scimCall(tn.token, 'PUT', `/Users/${u.id}`, { userName: u.userName, name: { givenName: 'New' } }),
      );
    },
  },
  'PATCH /scim/v2/Users/{id}': {
    emits: ['organization.membership.deleted', 'identity.disabled'],
    async run(act) {
      const tn = await scimTenant();
      const u = await provisioned(tn);
      await act(() =>
        scimCall(tn.token, 'PATCH', `/Users/${u.id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'replace', path: 'active', value: false }],
        }),
      );
    },
  },
  'DELETE /scim/v2/Users/{id}': {
    emits: ['identity.erased'],
    async run(act) {
      const tn = await scimTenant();
      const u = await provisioned(tn);
      await act(() => scimCall(tn.token, 'DELETE', `/Users/${u.id}`));
    },
  },
  'POST /scim/v2/Groups': {
    exempt: SCIM_GROUPS,
    async run(act) {
      const tn = await scimTenant();
      await act(() => scimCall(tn.token, 'POST', '/Groups', { displayName: 'Walkers' }));
    },
  },
  'PUT /scim/v2/Groups/{id}': {
    exempt: SCIM_GROUPS,
    async run(act) {
      const tn = await scimTenant();
      const g = (await ok(scimCall(tn.token, 'POST', '/Groups', { displayName: 'Walkers' }))).json();
      await act(() => scimCall(tn.token, 'PUT', `/Groups/${g.id}`, { displayName: 'Runners' }));
    },
  },
  'PATCH /scim/v2/Groups/{id}': {
    exempt: SCIM_GROUPS,
    async run(act) {
      const tn = await scimTenant();
      const u = await provisioned(tn);
      const g = (await ok(scimCall(tn.token, 'POST', '/Groups', { displayName: 'Walkers' }))).json();
      await act(() =>
        scimCall(tn.token, 'PATCH', `/Groups/${g.id}`, {
          schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
          Operations: [{ op: 'add', path: 'members', value: [{ value: u.id }] }],
        }),
      );
    },
  },
  'DELETE /scim/v2/Groups/{id}': {
    exempt: SCIM_GROUPS,
    async run(act) {
      const tn = await scimTenant();
      const g = (await ok(scimCall(tn.token, 'POST', '/Groups', { displayName: 'Walkers' }))).json();
      await act(() => scimCall(tn.token, 'DELETE', `/Groups/${g.id}`));
    },
  },
  'POST /admin/v1/organizations/{id}/scim-tokens': {
    exempt: SCIM_TOKENS,
    async run(act) {
      const org = await organization();
      await act(() => adm('POST', `/organizations/${org.id}/scim-tokens`, { name: 'x' }));
    },
  },
  'DELETE /admin/v1/organizations/{id}/scim-tokens/{tokenId}': {
    exempt: SCIM_TOKENS,
    async run(act) {
      const org = await organization();
      const made = await ok(adm('POST', `/organizations/${org.id}/scim-tokens`, { name: 'x' }));
      await act(() => adm('DELETE', `/organizations/${org.id}/scim-tokens/${made.json().data.id}`));
    },
  },
  'POST /api/v1/organization-invitations/lookups': {
    exempt: 'reads an invitation by its token (a POST keeps the token out of URLs): changes nothing',
    async run(act) {
      const org = await organization();
      const to = email('inv');
      await ok(
        api('POST', `/organizations/${org.id}/invitations`, {
          token: org.owner.token,
          payload: { identifierType: 'email', identifier: to, role: 'member' },
        }),
      );
      await act(() =>
        api('POST', '/organization-invitations/lookups', { payload: { token: invitationToken(to) } }),
      );
    },
  },
  'POST /api/v1/organization-invitations/acceptances': {
    emits: ['organization.invitation.accepted', 'organization.membership.created'],
    async run(act) {
      const org = await organization();
      const invitee = await signedIn();
      await ok(
        api('POST', `/organizations/${org.id}/invitations`, {
          token: org.owner.token,
          payload: { identifierType: 'email', identifier: invitee.person.email, role: 'member' },
        }),
      );
      await act(() =>
        api('POST', '/organization-invitations/acceptances', {
          token: invitee.token,
          payload: { token: invitationToken(invitee.person.email) },
        }),
      );
    },
  },

  // ---- connected apps, passkeys
  'POST /api/v1/connected-apps/{clientId}/revocations': {
    emits: ['oidc.grant.revoked'],
    async run(act) {
      const s = await signedIn();
      await grantFor(s, 'walk-app');
      await act(() => api('POST', '/connected-apps/walk-app/revocations', { token: s.token }));
    },
  },
  'POST /api/v1/passkeys/options': {
    exempt: OPTIONS,
    async run(act) {
      const who = await elevatedPerson(t);
      await act(() => api('POST', '/passkeys/options', { headers: who.headers, payload: {} }));
    },
  },
  'POST /api/v1/passkeys': {
    emits: ['identity.passkey.added'],
    async run(act) {
      const who = await elevatedPerson(t);
      const auth = new SoftAuthenticator(ORIGIN, RP_ID);
      const opts = await ok(api('POST', '/passkeys/options', { headers: who.headers, payload: {} }));
      await act(() =>
        api('POST', '/passkeys', {
          headers: who.headers,
          payload: { credential: auth.create(opts.json().data.options), label: 'Walk' },
        }),
      );
    },
  },
  'POST /api/v1/sign-ins/passkeys/options': {
    exempt: OPTIONS,
    run: (act) => act(() => api('POST', '/sign-ins/passkeys/options', { payload: {} })).then(() => {}),
  },
  'POST /api/v1/sign-ins/passkeys': {
    emits: ['session.created'],
    async run(act) {
      const { auth } = await passkeyHolder();
      const opts = await ok(api('POST', '/sign-ins/passkeys/options', { payload: {} }));
      await act(() =>
        api('POST', '/sign-ins/passkeys', { payload: { credential: auth.get(opts.json().data.options) } }),
      );
    },
  },
  'POST /api/v1/step-ups/passkeys/options': {
    exempt: OPTIONS,
    async run(act) {
      const s = await signedIn();
      await act(() => api('POST', '/step-ups/passkeys/options', { token: s.token, payload: {} }));
    },
  },
  'POST /api/v1/step-ups/passkeys': {
    exempt: ELEVATION,
    async run(act) {
      const { who, auth } = await passkeyHolder();
      const token = who.grant.accessToken;
      const opts = await ok(api('POST', '/step-ups/passkeys/options', { token, payload: {} }));
      await act(() =>
        api('POST', '/step-ups/passkeys', {
          token,
          payload: { credential: auth.get(opts.json().data.options) },
        }),
      );
    },
  },

  // ---- admin: identities
  'POST /admin/v1/identities/{id}/disablements': {
    emits: ['identity.disabled', 'session.ended'],
    async run(act) {
      const s = await signedIn();
      await act(() => adm('POST', `/identities/${s.person.identityId}/disablements`));
    },
  },
  'POST /admin/v1/imports': {
    emits: ['identity.created'],
    run: (act) =>
      act(() =>
        adm(
          'POST',
          '/imports',
          JSON.stringify({ identifiers: [{ type: 'email', value: email(), verified: true }] }),
          {
            'content-type': 'application/x-ndjson',
          },
        ),
      ).then(() => {}),
  },
  'POST /admin/v1/identities/{id}/enablements': {
    emits: ['identity.enabled'],
    async run(act) {
      const p = await createPerson(t.ctx);
      await ok(adm('POST', `/identities/${p.identityId}/disablements`));
      await act(() => adm('POST', `/identities/${p.identityId}/enablements`));
    },
  },
  'POST /admin/v1/identities/{id}/lock-clearances': {
    emits: ['identity.unlocked'],
    async run(act) {
      const p = await createPerson(t.ctx);
      // Locked as repeated wrong passwords leave it (the lock itself emits identity.locked).
      await t.ctx.database.db
        .updateTable('identities')
        .set({ locked_until: new Date(t.clock.now().getTime() + 3_600_000) })
        .where('id', '=', p.identityId)
        .execute();
      await act(() => adm('POST', `/identities/${p.identityId}/lock-clearances`));
    },
  },
  'POST /admin/v1/identities/{id}/session-revocations': {
    emits: ['session.ended'],
    async run(act) {
      const s = await signedIn();
      await act(() => adm('POST', `/identities/${s.person.identityId}/session-revocations`));
    },
  },
  'POST /admin/v1/identities/{id}/erasures': {
    emits: ['identity.erased', 'session.ended'],
    async run(act) {
      const s = await signedIn();
      await act(() => adm('POST', `/identities/${s.person.identityId}/erasures`));
    },
  },

  // ---- admin: the OpenID Provider's clients
  'POST /admin/v1/oidc-clients': {
    exempt: CLIENTS,
    run: (act) => act(() => adm('POST', '/oidc-clients', newClient())).then(() => {}),
  },
  'PATCH /admin/v1/oidc-clients/{clientId}': {
    exempt: CLIENTS,
    async run(act) {
      const c = newClient();
      const made = await ok(adm('POST', '/oidc-clients', c));
      await act(() =>
        adm(
          'PATCH',
          `/oidc-clients/${c.client_id}`,
          { client_name: 'Walk 2' },
          { 'if-match': String(made.headers.etag) },
        ),
      );
    },
  },
  'DELETE /admin/v1/oidc-clients/{clientId}': {
    // The registry's part is exempt as above; the grants it ends are not.
    emits: ['oidc.grant.revoked'],
    async run(act) {
      const c = newClient();
      await ok(adm('POST', '/oidc-clients', c));
      await grantFor(await signedIn(), c.client_id);
      await act(() => adm('DELETE', `/oidc-clients/${c.client_id}`));
    },
  },
  'POST /admin/v1/oidc-clients/{clientId}/secret-rotations': {
    exempt: CLIENTS,
    async run(act) {
      const c = newClient();
      await ok(adm('POST', '/oidc-clients', c));
      await act(() => adm('POST', `/oidc-clients/${c.client_id}/secret-rotations`));
    },
  },

  // ---- admin: organizations
  'POST /admin/v1/organizations': {
    emits: ['organization.created', 'organization.membership.created'],
    async run(act) {
      const p = await createPerson(t.ctx);
      await act(() =>
        adm('POST', '/organizations', { name: 'Walk', slug: slug(), ownerIdentityId: p.identityId }),
      );
    },
  },
  'POST /admin/v1/organizations/{id}/domains/{domainId}/verifications': {
    emits: ['organization.domain.verified'],
    async run(act) {
      const org = await organization();
      const d = await claimDomain(org);
      await act(() => adm('POST', `/organizations/${org.id}/domains/${d.id}/verifications`));
    },
  },
  'POST /admin/v1/organizations/{id}/connections': {
    emits: ['organization.connection.created'],
    async run(act) {
      const org = await organization();
      await act(() => adm('POST', `/organizations/${org.id}/connections`, samlConnection()));
    },
  },
  'PATCH /admin/v1/organizations/{id}/connections/{connectionId}': {
    emits: ['organization.connection.updated'],
    async run(act) {
      const org = await organization();
      const c = await ok(adm('POST', `/organizations/${org.id}/connections`, samlConnection()));
      await act(() =>
        adm('PATCH', `/organizations/${org.id}/connections/${c.json().data.id}`, {
          saml: { allowIdpInitiated: true },
        }),
      );
    },
  },
  'PATCH /admin/v1/organizations/{id}': {
    emits: ['organization.updated'],
    async run(act) {
      const org = await organization();
      await act(() => adm('PATCH', `/organizations/${org.id}`, { name: 'Renamed by an operator' }));
    },
  },
  'POST /admin/v1/organizations/{id}/invitations': {
    emits: ['organization.invitation.created'],
    async run(act) {
      const org = await organization();
      await act(() =>
        adm('POST', `/organizations/${org.id}/invitations`, {
          identifierType: 'email',
          identifier: email('inv'),
          role: 'member',
        }),
      );
    },
  },
  'DELETE /admin/v1/organizations/{id}/invitations/{invitationId}': {
    emits: ['organization.invitation.revoked'],
    async run(act) {
      const org = await organization();
      const sent = await ok(
        api('POST', `/organizations/${org.id}/invitations`, {
          token: org.owner.token,
          payload: { identifierType: 'email', identifier: email('inv'), role: 'member' },
        }),
      );
      await act(() => adm('DELETE', `/organizations/${org.id}/invitations/${sent.json().data.id}`));
    },
  },
  'PUT /admin/v1/organizations/{id}/sso-requirement': {
    emits: ['organization.updated'],
    async run(act) {
      const { org } = await ssoOrganization();
      await act(() => adm('PUT', `/organizations/${org.id}/sso-requirement`, { requireSso: true }));
    },
  },
  'DELETE /admin/v1/organizations/{id}/connections/{connectionId}': {
    emits: ['organization.connection.deleted'],
    async run(act) {
      const org = await organization();
      const c = await ok(adm('POST', `/organizations/${org.id}/connections`, samlConnection()));
      await act(() => adm('DELETE', `/organizations/${org.id}/connections/${c.json().data.id}`));
    },
  },
  'DELETE /admin/v1/organizations/{id}': {
    emits: ['organization.deleted'],
    async run(act) {
      const org = await organization();
      await act(() => adm('DELETE', `/organizations/${org.id}`));
    },
  },
  'POST /admin/v1/organizations/{id}/disablements': {
    emits: ['organization.updated'],
    async run(act) {
      const org = await organization();
      await act(() => adm('POST', `/organizations/${org.id}/disablements`));
    },
  },
  'DELETE /admin/v1/organizations/{id}/disablements': {
    emits: ['organization.updated'],
    async run(act) {
      const org = await organization();
      await ok(adm('POST', `/organizations/${org.id}/disablements`));
      await act(() => adm('DELETE', `/organizations/${org.id}/disablements`));
    },
  },
  'PUT /admin/v1/organizations/{id}/members/{identityId}': {
    emits: ['organization.membership.created'],
    async run(act) {
      const org = await organization();
      const p = await createPerson(t.ctx);
      await act(() => adm('PUT', `/organizations/${org.id}/members/${p.identityId}`, { role: 'member' }));
    },
  },
  'DELETE /admin/v1/organizations/{id}/members/{identityId}': {
    emits: ['organization.membership.deleted'],
    async run(act) {
      const org = await organization();
      await act(() => adm('DELETE', `/organizations/${org.id}/members/${org.other.person.identityId}`));
    },
  },

  // ---- admin: operators and their roles
  'PUT /admin/v1/operators/{identityId}': {
    exempt: OPERATORS,
    async run(act) {
      const p = await createPerson(t.ctx);
      await act(() => adm('PUT', `/operators/${p.identityId}`, { role: 'support' }));
    },
  },
  'DELETE /admin/v1/operators/{identityId}': {
    exempt: OPERATORS,
    async run(act) {
      const p = await createPerson(t.ctx);
      await ok(adm('PUT', `/operators/${p.identityId}`, { role: 'auditor' }));
      await act(() => adm('DELETE', `/operators/${p.identityId}`));
    },
  },

  // ---- admin: webhook endpoints
  'POST /admin/v1/webhook-endpoints': {
    exempt: WEBHOOKS,
    run: (act) => act(() => adm('POST', '/webhook-endpoints', endpoint())).then(() => {}),
  },
  'PATCH /admin/v1/webhook-endpoints/{id}': {
    exempt: WEBHOOKS,
    async run(act) {
      const id = await endpointId();
      await act(() => adm('PATCH', `/webhook-endpoints/${id}`, { description: 'walk 2' }));
    },
  },
  'DELETE /admin/v1/webhook-endpoints/{id}': {
    exempt: WEBHOOKS,
    async run(act) {
      const id = await endpointId();
      await act(() => adm('DELETE', `/webhook-endpoints/${id}`));
    },
  },
  'POST /admin/v1/webhook-endpoints/{id}/disablements': {
    exempt: WEBHOOKS,
    async run(act) {
      const id = await endpointId();
      await act(() => adm('POST', `/webhook-endpoints/${id}/disablements`));
    },
  },
  'DELETE /admin/v1/webhook-endpoints/{id}/disablements': {
    exempt: WEBHOOKS,
    async run(act) {
      const id = await endpointId();
      await ok(adm('POST', `/webhook-endpoints/${id}/disablements`));
      await act(() => adm('DELETE', `/webhook-endpoints/${id}/disablements`));
    },
  },
  'POST /admin/v1/webhook-endpoints/{id}/secret-rotations': {
    exempt: WEBHOOKS,
    async run(act) {
      const id = await endpointId();
      await act(() => adm('POST', `/webhook-endpoints/${id}/secret-rotations`, {}));
    },
  },
  'POST /admin/v1/webhook-endpoints/{id}/deliveries/{deliveryId}/resends': {
    exempt: WEBHOOKS,
    async run(act) {
      const id = await endpointId();
      // An event for it to deliver: an organization made by an operator.
      await ok(
        adm('POST', '/organizations', {
          name: 'Walk',
          slug: slug(),
          ownerIdentityId: (await createPerson(t.ctx)).identityId,
        }),
      );
      const list = await ok(adm('GET', `/webhook-endpoints/${id}/deliveries`));
      const delivery = list.json().data[0]?.id as string;
      expect(delivery).toBeTypeOf('string');
      await act(() => adm('POST', `/webhook-endpoints/${id}/deliveries/${delivery}/resends`));
    },
  },
  'POST /admin/v1/webhook-endpoints/{id}/recoveries': {
    exempt: WEBHOOKS,
    async run(act) {
      const id = await endpointId();
      await act(() =>
        adm('POST', `/webhook-endpoints/${id}/recoveries`, { since: new Date(0).toISOString() }),
      );
    },
  },
};

function newClient() {
  return {
    client_id: `walk-${randomBytes(4).toString('hex')}`,
    client_name: 'Walk',
    redirect_uris: ['https://app.example/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
  };
}

function endpoint() {
  // A closed loopback port: no worker runs in tests (WEBHOOK_POLL_MS=0), a resend fails fast.
  return { url: 'http://127.0.0.1:9/hooks', description: 'walk' };
}

async function endpointId(): Promise<string> {
  return (await ok(adm('POST', '/webhook-endpoints', endpoint()))).json().data.id as string;
}

// ---- the walk ---------------------------------------------------------------------------------

const WRITE = new Set(['post', 'put', 'patch', 'delete']);

function writeRoutes(doc: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.keys(ops)
      .filter((m) => WRITE.has(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
}

async function documented(): Promise<string[]> {
  const pub = await t.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(pub.statusCode).toBe(200);
  const admin = t.admin!.swagger() as unknown as { paths: Record<string, Record<string, unknown>> };
  return [...writeRoutes(pub.json()), ...writeRoutes(admin)].sort();
}

/** Runs a row: exactly one measured call, which must succeed; answers the types it appended. */
async function walk(row: Row): Promise<EventType[]> {
  let measured: EventType[] | undefined;
  await row.run(async (send) => {
    expect(measured, 'a row measures one call').toBeUndefined();
    const before = await lastAppended();
    const res = await send();
    expect(res.statusCode, res.body).toBeGreaterThanOrEqual(200);
    expect(res.statusCode, res.body).toBeLessThan(300);
    measured = await appendedAfter(before);
    return res;
  });
  expect(measured, 'the row called its route').toBeDefined();
  return measured ?? [];
}

const sorted = (types: Iterable<string>) => [...new Set(types)].sort();

describe('every write route of the OpenAPI documents: an event, or a reasoned exemption', () => {
  it('the table holds exactly the write routes the public and admin documents hold', async () => {
    const routes = await documented();
    expect(routes.length).toBeGreaterThan(60);
    const missing = routes.filter((r) => !(r in ROWS));
    expect(missing, 'write routes without a row: say what they emit, or why they are exempt').toEqual([]);
    expect(
      Object.keys(ROWS).filter((r) => !routes.includes(r)),
      'rows of routes no document holds',
    ).toEqual([]);
    for (const [route, row] of Object.entries(ROWS)) {
      // A row either emits (types the catalogue has) or is exempt with its reason, never both.
      expect(Boolean(row.exempt) !== Boolean(row.emits?.length), route).toBe(true);
      for (const type of row.emits ?? []) {
        expect(EMITTED.has(type), `${route}: ${type}`).toBe(true);
      }
    }
  });

  for (const [route, row] of Object.entries(ROWS)) {
    if (row.exempt) {
      it(`${route}: exempt (${row.exempt}); succeeds and appends no event`, async () => {
        expect(await walk(row)).toEqual([]);
      });
    } else {
      it(`${route}: emits ${row.emits?.join(', ')}`, async () => {
        const seen = await walk(row);
        expect(seen.length, `${route} changed state without an event`).toBeGreaterThan(0);
        expect(sorted(seen)).toEqual(sorted(row.emits ?? []));
      });
    }
  }
});
