import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE_WINDOW_SECONDS } from '../../src/features/security-notices/service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { SoftAuthenticator } from '../helpers/authenticator.js';
import { CHROME_LINUX, SAFARI_IPHONE, signInFrom } from '../helpers/devices.js';
import { bearer, createPerson, type Grant, type Person } from '../helpers/identities.js';
import { codeIn } from '../helpers/outbox.js';
import { bodyOf, mailCode, type SmtpSink, startSmtpSink } from '../helpers/smtp.js';
import { hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import {
  appEnv,
  handoffOf,
  identifiersOf,
  ORIGIN,
  redirectEntry,
  trip,
  upstreamClient,
} from '../providers/redirect-support.js';
import { AUDIENCE, freshToken, ISSUER, PROVIDER, ProviderSink } from '../providers/support.js';
import {
  CONFIRMATIONS,
  emailForm,
  identifierRow,
  PASSWORD,
  SIGN_UPS,
  uniqueEmail,
} from '../registration/helpers.js';
import { DEFAULT_POLICY, totp } from '../second-factors/helpers.js';

/*
 * A new-sign-in notice must reach the owner however full their address's message windows are.
 * Those windows (RATE_LIMIT_SENDS_A_MESSAGE per destination) can be spent by anyone: POST
 * /password-recoveries for the owner's address answers 201 from any client address until the
 * window is full. Were notices counted in it (and dropped past it), an attacker holding a stolen
 * password would first spend the window from a few client addresses, then sign in from a new
 * device unseen. So each sign-in path below spends the window exactly that way, then signs in
 * from a new device and network, and the notice must still arrive and be recorded on the sign-in.
 * And since neither notices nor the owner's other codes spend the recovery window, recovery
 * answers for an address that signed up and received notices are the same as for an address
 * nobody holds.
 */

/** The production default per client address and per destination (testEnv lifts it for other suites). */
const SEND_MAX = 5;
const SEND_LIMIT = `${SEND_MAX}/900`;

const FIREFOX_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:140.0) Gecko/20100101 Firefox/140.0';

interface Place {
  userAgent: string;
  ip: string;
}
/** Where the owner signs in first: the sign-in every later one is compared with. */
const FIRST: Place = { userAgent: CHROME_LINUX, ip: '203.0.113.7' };
/**
 * The attacker's sign-in: another browser family and OS than FIRST, on another /24, and (in each
 * test) unlike every earlier sign-in of that identity.
 */
const NEW: Place = { userAgent: FIREFOX_WINDOWS, ip: '198.51.100.23' };
const NEW_DEVICE = 'Firefox 140 on Windows 10';

let sink: SmtpSink;
beforeAll(async () => {
  sink = await startSmtpSink();
});
afterAll(async () => {
  await sink?.close();
});

/** What every app here runs with: real mail, both kinds of notices, production's message limit. */
function noticeEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
    SIGN_IN_NOTICES: 'on',
    SECURITY_NOTICES: 'on',
    RATE_LIMIT_SENDS_A_MESSAGE: SEND_LIMIT,
    ...extra,
  };
}

const NEW_SIGN_IN = /^Subject: New sign-in to your account/m;
const SECURITY_CHANGE = /^Subject: A security change to your account/m;
const mailsTo = (to: string, subject: RegExp) =>
  sink.received.filter((m) => m.to.includes(to) && subject.test(m.raw));

/** The text of a message, its quoted-printable soft breaks and escapes undone. */
function textOf(raw: string): string {
  return bodyOf(raw)
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/** The code of the `count`-th message to `to` whose subject matches, once it arrived. */
async function mailCodeOf(to: string, subject: RegExp, count: number): Promise<string> {
  const until = Date.now() + 10_000;
  for (;;) {
    const mine = mailsTo(to, subject);
    if (mine.length >= count) return codeIn(textOf(mine[count - 1].raw));
    if (Date.now() > until) throw new Error(`no message #${count} for ${to}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

let clients = 0;
/**
 * A client address never used before in this file, each in a /24 or /64 of its own, so the
 * per-client-address send limit can never be what answers 429: only the destination's window.
 */
function freshClient(): string {
  clients += 1;
  return clients % 2 === 0 ? `10.${clients >> 8}.${clients & 255}.9` : `2001:db8:${clients.toString(16)}::9`;
}

function recover(t: TestApp, address: string, from: string): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/password-recoveries',
    payload: emailForm(address),
    remoteAddress: from,
  });
}

/**
 * What an attacker does first: recovery starts for the owner's address, each from a fresh client
 * address, until the destination's recovery window answers 429. Only recovery starts spend that
 * window (the owner's own codes do not), so exactly SEND_MAX are 201.
 */
async function spendDestinationWindow(t: TestApp, address: string): Promise<void> {
  const statuses: number[] = [];
  let last: LightMyRequestResponse | undefined;
  for (let i = 0; i <= SEND_MAX && last?.statusCode !== 429; i++) {
    last = await recover(t, address, freshClient());
    statuses.push(last.statusCode);
  }
  expect(statuses, last?.body).toEqual([...Array(SEND_MAX).fill(201), 429]);
  expect(last?.json().code).toBe('rate_limit.exceeded');
  expect(Number(last?.headers['retry-after'])).toBeGreaterThan(0);
}

/** An inject from a place: its user agent and its client address (request.ip). */
function postFrom(
  t: TestApp,
  from: Place,
  url: string,
  payload: object,
  headers: Record<string, string> = {},
) {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1${url}`,
    payload,
    headers: { 'user-agent': from.userAgent, ...headers },
    remoteAddress: from.ip,
  });
}

/** A session just opened (201, kind session); waits for the notice its sign-in started. */
async function opened(t: TestApp, res: LightMyRequestResponse): Promise<Grant> {
  expect(res.statusCode, res.body).toBe(201);
  const grant = res.json().data as Grant;
  expect(grant.kind).toBe('session');
  await t.ctx.notices.idle();
  return grant;
}

/**
 * The owner was told of the sign-in from NEW: exactly one new-sign-in message naming the device and
 * the address, and the history entry of that sign-in (opened by `method`) records it as sent.
 */
async function expectToldOfNewSignIn(t: TestApp, address: string, grant: Grant, method: string) {
  const notices = mailsTo(address, NEW_SIGN_IN);
  // Names the old cause of a missing notice in the failure, to tell it from a mistake in the setup.
  const drops = t.logs().split('new sign-in notice dropped').length - 1;
  expect(notices, `new-sign-in notices to the owner (${drops} dropped in this app's log)`).toHaveLength(1);
  const text = textOf(notices[0].raw);
  expect(text).toContain(NEW_DEVICE);
  expect(text).toContain(NEW.ip);

  const history = await t.app.inject({
    method: 'GET',
    url: '/api/v1/sign-ins/history',
    headers: bearer(grant.accessToken),
  });
  expect(history.statusCode, history.body).toBe(200);
  const entries = history.json().data as {
    method: string;
    outcome: string;
    ipAddress: string | null;
    noticeSentAt: string | null;
  }[];
  const fromNew = entries.filter((e) => e.ipAddress === NEW.ip && e.outcome === 'succeeded');
  expect(fromNew.map((e) => e.method)).toEqual([method]);
  expect(fromNew[0].noticeSentAt).not.toBeNull();
}

/** An elevation through the real step-up routes from FIRST, its code read from the SMTP sink. */
async function elevation(t: TestApp, p: Person, accessToken: string): Promise<Record<string, string>> {
  const before = sink.received.filter((m) => m.to.includes(p.email)).length;
  const start = await postFrom(t, FIRST, '/step-ups', { channel: 'identifier' }, bearer(accessToken));
  expect(start.statusCode, start.body).toBe(201);
  // The code leaves just after the answer.
  const code = await mailCode(sink, p.email, before + 1);
  const confirm = await postFrom(
    t,
    FIRST,
    '/step-ups/confirmations',
    { challengeId: start.json().data.challengeId, code },
    bearer(accessToken),
  );
  expect(confirm.statusCode, confirm.body).toBe(201);
  return { ...bearer(accessToken), 'x-elevation-token': confirm.json().data.elevationToken };
}

describe('new-sign-in notices after the destination’s message window was spent by strangers', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: noticeEnv() });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('password (POST /sign-ins): the notice is still sent at once and recorded', async () => {
    const p = await createPerson(t.ctx);
    await signInFrom(t, p, FIRST.userAgent, FIRST.ip);
    await spendDestinationWindow(t, p.email);

    const grant = await opened(
      t,
      await postFrom(t, NEW, '/sign-ins', { ...emailForm(p.email), password: p.password }),
    );
    await expectToldOfNewSignIn(t, p.email, grant, 'password');
  });

  it('second step (POST /sign-ins/second-factors): the notice is still sent at once and recorded', async () => {
    const p = await createPerson(t.ctx);
    const first = await signInFrom(t, p, FIRST.userAgent, FIRST.ip);
    // A TOTP authenticator enrolled through the routes (an elevation first, by a code sent to the
    // address: it counts in the other codes' window, not the recovery starts').
    const headers = await elevation(t, p, first.accessToken);
    const enrol = await postFrom(t, FIRST, '/second-factors', {}, headers);
    expect(enrol.statusCode, enrol.body).toBe(201);
    const secret = enrol.json().data.secret as string;
    const verify = await postFrom(
      t,
      FIRST,
      '/second-factors/confirmations',
      { code: totp(secret, DEFAULT_POLICY, t.clock.now()) },
      bearer(first.accessToken),
    );
    expect(verify.statusCode, verify.body).toBe(204);
    // The next code computed belongs to a step never used.
    t.clock.advance(DEFAULT_POLICY.period);
    await spendDestinationWindow(t, p.email);

    // The stolen password answers a ticket; the second step opens the session, from NEW as well.
    const ticket = await postFrom(t, NEW, '/sign-ins', { ...emailForm(p.email), password: p.password });
    expect(ticket.statusCode, ticket.body).toBe(201);
    expect(ticket.json().data.kind).toBe('second_factor_required');
    await t.ctx.notices.idle();
    expect(mailsTo(p.email, NEW_SIGN_IN)).toHaveLength(0);
    const grant = await opened(
      t,
      await postFrom(t, NEW, '/sign-ins/second-factors', {
        secondFactorTicket: ticket.json().data.secondFactorTicket,
        code: totp(secret, DEFAULT_POLICY, t.clock.now()),
      }),
    );
    await expectToldOfNewSignIn(t, p.email, grant, 'second_factor');
  });

  it('a security change (POST /password-changes) is still told at once', async () => {
    const p = await createPerson(t.ctx);
    const first = await signInFrom(t, p, FIRST.userAgent, FIRST.ip);
    await spendDestinationWindow(t, p.email);

    const changed = await postFrom(
      t,
      FIRST,
      '/password-changes',
      { currentPassword: p.password, newPassword: 'lantern-orchard-velvet-73' },
      bearer(first.accessToken),
    );
    expect(changed.statusCode, changed.body).toBe(204);
    await t.ctx.securityNotices.idle();
    const notices = mailsTo(p.email, SECURITY_CHANGE);
    expect(notices).toHaveLength(1);
    expect(textOf(notices[0].raw)).toContain('Your password was changed.');
  });
});

describe('code sign-in after the destination’s message windows were spent by strangers', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: noticeEnv({ SIGN_IN_CODES: 'email' }) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('code (POST /sign-ins/codes/{id}): the notice is still sent at once and recorded', async () => {
    const p = await createPerson(t.ctx);
    await signInFrom(t, p, FIRST.userAgent, FIRST.ip);
    const SIGN_IN_CODE = /^Subject: Your sign-in code/m;
    const stranger = () =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/sign-ins/codes',
        payload: emailForm(p.email),
        remoteAddress: freshClient(),
      });
    // Strangers spend all but one of the sign-in codes' window; the last code is asked for from
    // NEW (whoever reads the mailbox), and then the window is spent: the next send is 429.
    for (let i = 0; i < SEND_MAX - 1; i++) expect((await stranger()).statusCode).toBe(201);
    await mailCodeOf(p.email, SIGN_IN_CODE, SEND_MAX - 1);
    const sent = await postFrom(t, NEW, '/sign-ins/codes', emailForm(p.email));
    expect(sent.statusCode, sent.body).toBe(201);
    const code = await mailCodeOf(p.email, SIGN_IN_CODE, SEND_MAX);
    expect((await stranger()).statusCode).toBe(429);
    // And the recovery starts' window too.
    await spendDestinationWindow(t, p.email);

    const grant = await opened(
      t,
      await postFrom(t, NEW, `/sign-ins/codes/${sent.json().data.signInCodeId}`, {
        ...emailForm(p.email),
        code,
      }),
    );
    await expectToldOfNewSignIn(t, p.email, grant, 'code');
  });
});

describe('passkey sign-in after the destination’s message window was spent by strangers', () => {
  const RP_ORIGIN = 'https://id.example';
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: noticeEnv({ PUBLIC_ORIGIN: RP_ORIGIN }) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('passkey (POST /sign-ins/passkeys): the notice is still sent at once and recorded', async () => {
    const p = await createPerson(t.ctx);
    const first = await signInFrom(t, p, FIRST.userAgent, FIRST.ip);
    // A passkey registered through the routes by a software authenticator (after an elevation by a
    // sent code).
    const headers = await elevation(t, p, first.accessToken);
    const passkey = new SoftAuthenticator(RP_ORIGIN, 'id.example');
    const creation = await postFrom(t, FIRST, '/passkeys/options', {}, headers);
    expect(creation.statusCode, creation.body).toBe(201);
    const registered = await postFrom(
      t,
      FIRST,
      '/passkeys',
      { credential: passkey.create(creation.json().data.options), label: 'Laptop' },
      headers,
    );
    expect(registered.statusCode, registered.body).toBe(201);
    await spendDestinationWindow(t, p.email);

    // The passkey (its holder's device stolen, or synced elsewhere) used from NEW.
    const request = await postFrom(t, NEW, '/sign-ins/passkeys/options', {});
    expect(request.statusCode, request.body).toBe(201);
    const grant = await opened(
      t,
      await postFrom(t, NEW, '/sign-ins/passkeys', { credential: passkey.get(request.json().data.options) }),
    );
    await expectToldOfNewSignIn(t, p.email, grant, 'passkey');
  });
});

describe('provider sign-in after the destination’s message window was spent by strangers', () => {
  // "Continue with …" against a real OpenID provider on loopback, and an ID-token provider whose
  // keys a loopback JWKS endpoint serves (PROVIDER).
  const REDIRECT = 'upstream';
  let t: TestApp;
  let up: Upstream;
  let keys: ProviderSink;
  beforeAll(async () => {
    up = await startUpstream({ ...upstreamClient(REDIRECT) });
    keys = await ProviderSink.start();
    t = await createTestApp({
      upstreamFetch: hostMappingFetch({}),
      env: noticeEnv(
        appEnv([
          redirectEntry(REDIRECT, { issuer: up.issuer }),
          { name: PROVIDER, issuer: ISSUER, audience: AUDIENCE, jwksUri: keys.jwksUri },
        ]),
      ),
    });
  });
  afterAll(async () => {
    await t?.close();
    await up?.close();
    await keys?.close();
  });

  /** A whole redirect sign-in by a browser at `from`: the handoff, which opens the session, from there. */
  async function redirectSignInFrom(from: Place): Promise<Grant> {
    const done = await trip(t, { provider: REDIRECT }, { headers: { 'user-agent': from.userAgent } });
    const res = await postFrom(
      t,
      from,
      '/provider-handoffs',
      { code: handoffOf(done) },
      { origin: ORIGIN, cookie: done.browser.header() ?? '' },
    );
    return opened(t, res);
  }

  async function tokenSignInFrom(from: Place, sub: string): Promise<Grant> {
    const idToken = await freshToken(t.app, keys, t.clock, { sub });
    return opened(
      t,
      await postFrom(t, from, '/sign-ins', { identifierType: 'provider', provider: PROVIDER, idToken }),
    );
  }

  it('redirect (POST /provider-handoffs): the notice is still sent at once and recorded', async () => {
    // A new upstream account with a verified address: its first sign-in makes the identity, with
    // that address verified, from FIRST; the notice goes to that address.
    const address = uniqueEmail('upstream');
    const sub = `sub-${randomUUID()}`;
    up.setAccount(sub, { email: address, email_verified: true });
    up.login = sub;
    await redirectSignInFrom(FIRST);
    const [identifier] = await identifierRow(t.ctx.database.db, address);
    expect(await identifiersOf(t, identifier.identity_id)).toEqual([`${address}:verified`]);
    expect(mailsTo(address, NEW_SIGN_IN)).toHaveLength(0);
    await spendDestinationWindow(t, address);

    const grant = await redirectSignInFrom(NEW);
    await expectToldOfNewSignIn(t, address, grant, 'provider');
  });

  it('ID token (POST /sign-ins, identifierType provider): the notice is still sent at once and recorded', async () => {
    // The upstream subject linked to a person with a verified address (written straight to the
    // database, as createPerson writes the person: linking itself is tested in test/providers/).
    const p = await createPerson(t.ctx);
    const sub = `sub-${randomUUID()}`;
    await sql`INSERT INTO provider_links (id, identity_id, provider, subject, created_at)
              VALUES (${randomUUID()}, ${p.identityId}, ${PROVIDER}, ${sub}, ${t.clock.now()})`.execute(
      t.ctx.database.db,
    );
    await tokenSignInFrom(FIRST, sub);
    expect(mailsTo(p.email, NEW_SIGN_IN)).toHaveLength(0);
    await spendDestinationWindow(t, p.email);

    const grant = await tokenSignInFrom(NEW, sub);
    await expectToldOfNewSignIn(t, p.email, grant, 'provider');
  });
});

describe('recovery answers after new-sign-in notices', () => {
  // The window outlasts the notices' own 15-minute bound, so the owner's sign-up code and two
  // notices (a bound apart, each sent at once) fall in one window with the recovery starts.
  const WINDOW = 3600;
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: noticeEnv({ RATE_LIMIT_SENDS_A_MESSAGE: `${SEND_MAX}/${WINDOW}` }) });
  });
  afterAll(async () => {
    await t?.close();
  });

  function signUp(address: string): Promise<LightMyRequestResponse> {
    return t.app.inject({
      method: 'POST',
      url: SIGN_UPS,
      payload: { ...emailForm(address), password: PASSWORD },
      remoteAddress: freshClient(),
    });
  }

  /** The answer's bytes but for the request id, should one be in it. */
  const bytesOf = (res: LightMyRequestResponse) => res.body.replace(/"(requestId|instance)":"[^"]*",?/g, '');

  it('are the same for an address that signed up and received notices and for one nobody holds', async () => {
    const known = uniqueEmail('owner');
    const unknown = uniqueEmail('nobody');
    // The owner signs up: a code goes to the address, which an address nobody holds never gets.
    expect((await signUp(known)).statusCode).toBe(201);
    const confirmed = await t.app.inject({
      method: 'POST',
      url: CONFIRMATIONS,
      payload: { ...emailForm(known), password: PASSWORD, code: await mailCode(sink, known, 1) },
      remoteAddress: freshClient(),
    });
    expect(confirmed.statusCode, confirmed.body).toBe(204);
    const [row] = await identifierRow(t.ctx.database.db, known);
    const owner: Person = { identityId: row.identity_id, email: known, password: PASSWORD };

    // The first sign-in has nothing to compare with; the two after it are from new places, a
    // notice bound apart so that each is sent at once.
    await signInFrom(t, owner, FIRST.userAgent, FIRST.ip);
    await signInFrom(t, owner, NEW.userAgent, NEW.ip);
    t.clock.advance(NOTICE_WINDOW_SECONDS + 60);
    await signInFrom(t, owner, SAFARI_IPHONE, '2001:db8:77:1::5');
    expect(mailsTo(known, NEW_SIGN_IN)).toHaveLength(2);
    expect(sink.received.filter((m) => m.to.includes(unknown))).toHaveLength(0);

    // Recovery starts for each address in turn, each from a fresh client address, until both 429.
    const answers: Record<'known' | 'unknown', LightMyRequestResponse[]> = { known: [], unknown: [] };
    const done = (side: 'known' | 'unknown') => answers[side].at(-1)?.statusCode === 429;
    for (let round = 0; round <= SEND_MAX && !(done('known') && done('unknown')); round++) {
      if (!done('known')) answers.known.push(await recover(t, known, freshClient()));
      if (!done('unknown')) answers.unknown.push(await recover(t, unknown, freshClient()));
    }
    const statuses = (side: 'known' | 'unknown') => answers[side].map((r) => r.statusCode);
    expect(statuses('unknown')).toEqual([...Array(SEND_MAX).fill(201), 429]);
    expect(statuses('known')).toEqual(statuses('unknown'));

    const all = [...answers.known, ...answers.unknown];
    const accepted = all.filter((r) => r.statusCode === 201);
    expect(new Set(accepted.map(bytesOf)).size).toBe(1);
    expect(new Set(accepted.map((r) => r.headers['content-type'])).size).toBe(1);
    const refused = all.filter((r) => r.statusCode === 429);
    expect(refused).toHaveLength(2);
    expect(bytesOf(refused[0])).toBe(bytesOf(refused[1]));
    expect(refused[0].json().code).toBe('rate_limit.exceeded');
    expect(refused[0].headers['retry-after']).toBe(refused[1].headers['retry-after']);
    expect(refused[0].headers['content-type']).toBe(refused[1].headers['content-type']);
  });
});
