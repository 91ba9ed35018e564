import { randomBytes, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { elevate, elevatedPerson } from '../helpers/elevation.js';
import { bearer, createPerson, type Grant, signIn } from '../helpers/identities.js';
import { lastCode } from '../helpers/outbox.js';
import { hostMappingFetch, startUpstream, type Upstream } from '../helpers/upstream.js';
import { challengesOf, confirm, identifierRow, PASSWORD, signUp } from '../registration/helpers.js';
import { DEFAULT_POLICY, enrolVerified } from '../second-factors/helpers.js';
import { listMethods, removeMethod } from '../sign-in-methods/support.js';
import {
  appEnv,
  atUpstream,
  Browser,
  count,
  deliver,
  exchange,
  expectError,
  footprint,
  handoffOf,
  identifiersOf,
  identityOf,
  linkedTo,
  linksOf,
  redirectEntry,
  SECURITY_PAGE,
  SIGN_UP_PAGE,
  setCookies,
  signInThrough,
  startFlow,
  trip,
  upstreamClient,
} from './redirect-support.js';

/*
 * Issue 26's linking rules through the routes (docs/providers.md, "Linking rules"): a known subject
 * signs its identity in; a verified upstream email meeting a verified local account is linked only
 * when the provider opts in, and is otherwise told account_exists; an unverified upstream email
 * never links and never touches local identifiers; a squatter's unconfirmed registration yields to
 * the person the provider vouches for; sign-up can be closed per provider. Then linking from
 * Security (a link flow) and the last-way-in rule on removal.
 */

let t: TestApp;
let up: Upstream;
const outbound = hostMappingFetch({});

beforeAll(async () => {
  // One upstream, three provider entries with different rules (each its own redirect URI).
  up = await startUpstream({ ...upstreamClient('acme', 'linker', 'closed') });
  t = await createTestApp({
    upstreamFetch: outbound,
    env: appEnv([
      redirectEntry('acme', { issuer: up.issuer }),
      redirectEntry('linker', { issuer: up.issuer, autoLink: 'verified_email' }),
      redirectEntry('closed', { issuer: up.issuer, signUp: false }),
    ]),
  });
});

afterAll(async () => {
  await t?.close();
  await up?.close();
});

function account(claims: Record<string, unknown>): string {
  const sub = `sub-${randomUUID()}`;
  up.setAccount(sub, claims);
  up.login = sub;
  return sub;
}

const email = (label: string) => `${label}-${randomBytes(4).toString('hex')}@example.com`;

async function signedIn(res: LightMyRequestResponse): Promise<{ grant: Grant; identityId: string }> {
  expect(res.statusCode, res.body).toBe(201);
  const grant = res.json().data as Grant;
  expect(grant.kind).toBe('session');
  return { grant, identityId: await identityOf(t, grant.accessToken) };
}

/** The sign-in-methods list as `kind:display`, sorted. */
async function methodsOf(accessToken: string): Promise<string[]> {
  return (await listMethods(t.app, accessToken)).map((m) => `${m.kind}:${m.display}`).sort();
}

describe('a sign-in flow meeting local accounts', () => {
  it('a verified local account and autoLink off: account_exists, nobody signed in, nothing made or linked', async () => {
    const person = await createPerson(t.ctx, email('owner'));
    const sub = account({ email: person.email, email_verified: true });
    const before = await footprint(t);
    const done = await trip(t, { provider: 'acme', returnTo: SIGN_UP_PAGE });
    expectError(done.callback, 'acme', 'account_exists', SIGN_UP_PAGE);
    expect(done.browser.names).toEqual([]);
    expect(await footprint(t)).toEqual(before);
    expect(await linkedTo(t, 'acme', sub)).toEqual([]);
    expect(await linksOf(t, person.identityId)).toEqual([]);
    expect(await identifiersOf(t, person.identityId)).toEqual([`${person.email}:verified`]);
    // The address in another case is the same address.
    const shouted = account({ email: person.email.toUpperCase(), email_verified: true });
    expectError((await trip(t, { provider: 'acme' })).callback, 'acme', 'account_exists');
    expect(await linkedTo(t, 'acme', shouted)).toEqual([]);
    expect(await footprint(t)).toEqual(before);
  });

  it('autoLink verified_email: linked to the existing identity and signed in to it', async () => {
    const person = await createPerson(t.ctx, email('auto'));
    const sub = account({ email: person.email, email_verified: true });
    const identities = await count(t, 'identities');
    const { res } = await signInThrough(t, 'linker');
    const { grant, identityId } = await signedIn(res);
    expect(identityId).toBe(person.identityId);
    expect(await count(t, 'identities')).toBe(identities);
    expect(await linksOf(t, person.identityId)).toEqual([`linker:${sub}`]);
    expect(await methodsOf(grant.accessToken)).toEqual([
      `email:${person.email[0]}***@example.com`,
      'password:null',
      'provider:linker',
    ]);
    expect(await auditCount(t, 'identity.sign_in_method.verified', person.identityId)).toBe(1);
    expect(await auditCount(t, 'identity.provider.registered', person.identityId)).toBe(0);
    // Known now: the next sign-in is the link's.
    up.login = sub;
    expect((await signedIn((await signInThrough(t, 'linker')).res)).identityId).toBe(person.identityId);
    expect(await auditCount(t, 'identity.sign_in_method.verified', person.identityId)).toBe(1);
  });

  it('an unverified upstream email never links, even with autoLink on: a new identity without that address', async () => {
    const person = await createPerson(t.ctx, email('victim'));
    const made: string[] = [];
    // Not asserted, and asserted as the string "true" (not the boolean the generic rule needs).
    for (const claims of [
      { email: person.email },
      { email: person.email, email_verified: false },
      { email: person.email, email_verified: 'true' },
    ]) {
      const sub = account(claims);
      const { res } = await signInThrough(t, 'linker');
      const { identityId } = await signedIn(res);
      expect(identityId).not.toBe(person.identityId);
      expect(await linkedTo(t, 'linker', sub)).toEqual([identityId]);
      expect(await identifiersOf(t, identityId)).toEqual([]);
      made.push(identityId);
    }
    expect(new Set(made).size).toBe(3);
    expect(await linksOf(t, person.identityId)).toEqual([]);
    expect(await identifiersOf(t, person.identityId)).toEqual([`${person.email}:verified`]);
    expect((await signIn(t.app, person)).kind).toBe('session');
  });

  it('an unverified upstream email leaves a pending registration of that address alone', async () => {
    const address = email('pending');
    expect(
      (await signUp(t.app, { identifierType: 'email', identifier: address, password: PASSWORD })).statusCode,
    ).toBe(201);
    const code = lastCode(t.config.dataDir, address);
    const [pending] = await identifierRow(t.ctx.database.db, address);
    account({ email: address, email_verified: false });
    const { identityId } = await signedIn((await signInThrough(t, 'acme')).res);
    expect(identityId).not.toBe(pending.identity_id);
    expect(await identifiersOf(t, identityId)).toEqual([]);
    expect(await identifiersOf(t, pending.identity_id)).toEqual([`${address}:pending`]);
    const confirmed = await confirm(t.app, {
      identifierType: 'email',
      identifier: address,
      password: PASSWORD,
      code,
    });
    expect(confirmed.statusCode, confirmed.body).toBe(204);
  });

  it('a squatter’s unconfirmed registration is not taken over: it dies, and the verified person gets the address', async () => {
    const address = email('squatted');
    // Someone registers the victim's address and never confirms it.
    const squat = await signUp(t.app, { identifierType: 'email', identifier: address, password: PASSWORD });
    expect(squat.statusCode, squat.body).toBe(201);
    const code = lastCode(t.config.dataDir, address);
    const [pending] = await identifierRow(t.ctx.database.db, address);
    const squatter = pending.identity_id;
    expect(pending.verified_at).toBeNull();

    // The victim comes with the address verified upstream.
    const sub = account({ email: address, email_verified: true });
    const { grant, identityId } = await signedIn(
      (await signInThrough(t, 'acme', { returnTo: SIGN_UP_PAGE })).res,
    );
    expect(identityId).not.toBe(squatter);
    expect(await linkedTo(t, 'acme', sub)).toEqual([identityId]);
    expect(await linksOf(t, squatter)).toEqual([]);
    expect(await identifiersOf(t, identityId)).toEqual([`${address}:verified`]);
    expect(await identifiersOf(t, squatter)).toEqual([]);
    expect(await methodsOf(grant.accessToken)).toEqual([
      `email:${address[0]}***@example.com`,
      'provider:acme',
    ]);
    // The squatter's code was revoked: confirming it now is the ordinary refusal.
    const challenges = await challengesOf(t.ctx.database.db, address);
    expect(challenges.length).toBeGreaterThan(0);
    expect(challenges.every((c) => c.revoked_at !== null)).toBe(true);
    const late = await confirm(t.app, {
      identifierType: 'email',
      identifier: address,
      password: PASSWORD,
      code,
    });
    expect(late.statusCode, late.body).toBe(422);
    expect(late.json().code).toBe('identity.verification_refused');
    expect(await identifiersOf(t, identityId)).toEqual([`${address}:verified`]);
    expect(await auditCount(t, 'identity.sign_up.superseded', squatter)).toBe(1);
    // The squatter's password opens nothing.
    const attempt = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: address, password: PASSWORD },
    });
    expect(attempt.statusCode).toBe(401);
  });

  it('signUp off: an unknown subject gets sign_up_closed, while a linked subject still signs in', async () => {
    // The known subject: linked from Security by a signed-in, elevated person.
    const { person, headers } = await elevatedPerson(t);
    const known = account({ email: email('closed-known'), email_verified: true });
    const link = await trip(t, { provider: 'closed', intent: 'link', returnTo: SECURITY_PAGE }, { headers });
    expect(Object.fromEntries(link.back.params)).toEqual({ provider: 'closed', result: 'linked' });
    expect(await linksOf(t, person.identityId)).toEqual([`closed:${known}`]);

    const stranger = account({ email: email('closed-new'), email_verified: true });
    const before = await footprint(t);
    const refused = await trip(t, { provider: 'closed', returnTo: SIGN_UP_PAGE });
    expectError(refused.callback, 'closed', 'sign_up_closed', SIGN_UP_PAGE);
    expect(await footprint(t)).toEqual(before);
    expect(await linkedTo(t, 'closed', stranger)).toEqual([]);

    up.login = known;
    expect((await signedIn((await signInThrough(t, 'closed')).res)).identityId).toBe(person.identityId);
  });
});

describe('a known subject of a disabled identity', () => {
  it('is refused at the callback: no handoff, nothing made', async () => {
    const sub = account({ email: email('disabled'), email_verified: true });
    const { identityId } = await signedIn((await signInThrough(t, 'acme')).res);
    await sql`UPDATE identities SET disabled_at = ${t.clock.now()} WHERE id = ${identityId}`.execute(
      t.ctx.database.db,
    );
    up.login = sub;
    const before = await footprint(t);
    const done = await trip(t, { provider: 'acme' });
    expectError(done.callback, 'acme', 'refused');
    expect(await footprint(t)).toEqual(before);
    expect(await linkedTo(t, 'acme', sub)).toEqual([identityId]);
  });
});

describe('linking from Security (a link flow)', () => {
  it('links the provider to the signed-in, elevated identity; the provider then signs it in', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const sub = account({ email: email('linked'), email_verified: true });
    const identities = await count(t, 'identities');
    const done = await trip(t, { provider: 'acme', intent: 'link', returnTo: SECURITY_PAGE }, { headers });
    expect(done.back.page).toBe(SECURITY_PAGE);
    expect(Object.fromEntries(done.back.params)).toEqual({ provider: 'acme', result: 'linked' });
    expect(setCookies(done.callback)).toHaveLength(1);
    expect(done.browser.names).toEqual([]);
    expect(await count(t, 'identities')).toBe(identities);
    expect(await linkedTo(t, 'acme', sub)).toEqual([person.identityId]);
    expect(await methodsOf(grant.accessToken)).toEqual([
      `email:${person.email[0]}***@example.com`,
      'password:null',
      'provider:acme',
    ]);
    expect(await auditCount(t, 'identity.sign_in_method.verified', person.identityId)).toBe(1);
    // The linked provider's email is not taken as an identifier.
    expect(await identifiersOf(t, person.identityId)).toEqual([`${person.email}:verified`]);
    up.login = sub;
    expect((await signedIn((await signInThrough(t, 'acme')).res)).identityId).toBe(person.identityId);
  });

  it('a subject already linked to another identity answers already_linked and links nothing', async () => {
    const sub = account({ email: email('taken'), email_verified: true });
    const { identityId: owner } = await signedIn((await signInThrough(t, 'acme')).res);
    const { person, grant, headers } = await elevatedPerson(t);
    up.login = sub;
    const done = await trip(t, { provider: 'acme', intent: 'link', returnTo: SECURITY_PAGE }, { headers });
    expectError(done.callback, 'acme', 'already_linked', SECURITY_PAGE);
    expect(done.browser.names).toEqual([]);
    expect(await linkedTo(t, 'acme', sub)).toEqual([owner]);
    expect(await linksOf(t, person.identityId)).toEqual([]);
    expect(await methodsOf(grant.accessToken)).not.toContain('provider:acme');
  });

  it('a link whose session ended before the callback is refused', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const sub = account({ email: email('ended'), email_verified: true });
    const browser = new Browser();
    const started = await startFlow(
      t,
      browser,
      { provider: 'acme', intent: 'link', returnTo: SECURITY_PAGE },
      headers,
    );
    const arrival = await atUpstream(started, 'acme');
    const out = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-outs',
      headers: bearer(grant.accessToken),
    });
    expect(out.statusCode, out.body).toBe(204);
    const before = await footprint(t);
    expectError(await deliver(t, arrival, browser), 'acme', 'refused', SECURITY_PAGE);
    expect(await footprint(t)).toEqual(before);
    expect(await linkedTo(t, 'acme', sub)).toEqual([]);
    expect(await linksOf(t, person.identityId)).toEqual([]);
  });

  it('a link flow’s callback makes no handoff: there is nothing to exchange', async () => {
    const { headers } = await elevatedPerson(t);
    account({ email: email('no-handoff'), email_verified: true });
    const handoffs = (await footprint(t)).handoffs;
    const done = await trip(t, { provider: 'acme', intent: 'link', returnTo: SECURITY_PAGE }, { headers });
    expect(done.back.params.get('result')).toBe('linked');
    expect(done.back.params.has('handoff')).toBe(false);
    expect((await footprint(t)).handoffs).toBe(handoffs);
  });
});

describe('removing a provider link (the last-way-in rule)', () => {
  it('an identity whose only way in is the provider cannot remove it', async () => {
    const address = email('only-way');
    const sub = account({ email: address, email_verified: true });
    const { grant, identityId } = await signedIn((await signInThrough(t, 'acme')).res);
    // The address is no way in without a password: the provider is the last one.
    const elevation = await elevate(t, grant.accessToken, address);
    const link = (await listMethods(t.app, grant.accessToken)).find((m) => m.kind === 'provider');
    expect(link?.display).toBe('acme');
    const res = await removeMethod(
      t.app,
      { ...bearer(grant.accessToken), 'x-elevation-token': elevation },
      link?.id as string,
    );
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().code).toBe('identity.last_sign_in_method');
    expect(await linkedTo(t, 'acme', sub)).toEqual([identityId]);
  });

  it('an identity with a password and an address can remove the link, and the subject is then unknown', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const sub = account({ email: email('removable'), email_verified: true });
    await trip(t, { provider: 'acme', intent: 'link', returnTo: SECURITY_PAGE }, { headers });
    const link = (await listMethods(t.app, grant.accessToken)).find((m) => m.kind === 'provider');
    const res = await removeMethod(t.app, headers, link?.id as string);
    expect(res.statusCode, res.body).toBe(204);
    expect(await linksOf(t, person.identityId)).toEqual([]);
    // The subject signs up anew: nothing of the old link remains.
    up.login = sub;
    const { identityId } = await signedIn((await signInThrough(t, 'acme')).res);
    expect(identityId).not.toBe(person.identityId);
  });
});

describe('handoffs of a linked identity', () => {
  it('a handoff made before the link was removed opens no live session', async () => {
    const { person, grant, headers } = await elevatedPerson(t);
    const sub = account({ email: email('epoch'), email_verified: true });
    await trip(t, { provider: 'acme', intent: 'link', returnTo: SECURITY_PAGE }, { headers });
    up.login = sub;
    const pending = await trip(t, { provider: 'acme' });
    const link = (await listMethods(t.app, grant.accessToken)).find((m) => m.kind === 'provider');
    expect((await removeMethod(t.app, headers, link?.id as string)).statusCode).toBe(204);
    const res = await exchange(t, handoffOf(pending), pending.browser);
    // Either refused at once, or a session dead on arrival: never a live session.
    if (res.statusCode === 201) {
      const context = await t.app.inject({
        method: 'GET',
        url: '/api/v1/session/context',
        headers: bearer(res.json().data.accessToken),
      });
      expect(context.statusCode).toBe(401);
    } else {
      expect(res.statusCode).toBe(401);
    }
    const live = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM sessions s JOIN identities i ON i.id = s.identity_id
      WHERE s.identity_id = ${person.identityId} AND s.revoked_at IS NULL AND s.epoch = i.session_epoch`.execute(
      t.ctx.database.db,
    );
    // Only the caller's own session (moved to the new epoch by the removal) is live.
    expect(live.rows[0].n).toBe(1);
  });
});

describe('a step-up with a provider (intent step_up)', () => {
  /** An identity whose only way in is the provider: no address (the upstream email is unverified). */
  async function providerOnly(): Promise<{ sub: string; grant: Grant; identityId: string }> {
    const sub = account({ email: email('only'), email_verified: false });
    const { grant, identityId } = await signedIn((await signInThrough(t, 'acme')).res);
    expect(await identifiersOf(t, identityId)).toEqual([]);
    up.login = sub;
    return { sub, grant, identityId };
  }
  const stepUp = { provider: 'acme', intent: 'step_up' as const, returnTo: SECURITY_PAGE };

  it('mints an elevation for the session that started it, which then serves an elevated act', async () => {
    const { grant } = await providerOnly();
    const done = await trip(t, stepUp, { headers: bearer(grant.accessToken) });
    expect(done.back.page).toBe(SECURITY_PAGE);
    const res = await exchange(t, handoffOf(done), done.browser, bearer(grant.accessToken));
    expect(res.statusCode, res.body).toBe(201);
    const elevation = res.json().data;
    expect(Object.keys(elevation).sort()).toEqual(['elevationExpiresAt', 'elevationToken']);
    // The elevation is accepted where one is required: a link flow.
    const elevated = { ...bearer(grant.accessToken), 'x-elevation-token': elevation.elevationToken };
    const link = await startFlow(
      t,
      new Browser(),
      { provider: 'acme', intent: 'link', returnTo: SECURITY_PAGE },
      elevated,
    );
    expect(link.statusCode, link.body).toBe(201);
  });

  it('starts only with a session', async () => {
    const res = await startFlow(t, new Browser(), stepUp);
    expect(res.statusCode, res.body).toBe(401);
    expect(res.json().code).toBe('identity.session_required');
  });

  it('a step-up handoff without the bearer, or with another session’s, is the identical sign-in refusal', async () => {
    const other = await providerOnly();
    const { grant } = await providerOnly();
    const wrong = await exchange(t, 'x'.repeat(43), new Browser());
    for (const headers of [{}, bearer(other.grant.accessToken)]) {
      const done = await trip(t, stepUp, { headers: bearer(grant.accessToken) });
      const res = await exchange(t, handoffOf(done), done.browser, headers);
      expect(res.statusCode, res.body).toBe(401);
      expect(res.body).toBe(wrong.body);
      // The code was spent by the refused attempt: the rightful session cannot use it either.
      const again = await exchange(t, handoffOf(done), done.browser, bearer(grant.accessToken));
      expect(again.statusCode).toBe(401);
    }
  });

  it('an upstream account not linked to the identity comes back refused, with no handoff', async () => {
    const { grant } = await providerOnly();
    // Someone else's upstream account signs in at the provider.
    account({ email: email('stranger'), email_verified: false });
    const done = await trip(t, stepUp, { headers: bearer(grant.accessToken) });
    expectError(done.callback, 'acme', 'refused', SECURITY_PAGE);
  });

  it('an identity holding an authenticator is refused 422 identity.step_up_unavailable, the code spent', async () => {
    const address = email('factor');
    const sub = account({ email: address, email_verified: true });
    const { grant, identityId } = await signedIn((await signInThrough(t, 'acme')).res);
    const factor = await enrolVerified(
      t,
      { identityId, email: address, password: '' },
      grant,
      DEFAULT_POLICY,
    );
    expect(factor.secret).toBeTruthy();
    up.login = sub;
    const done = await trip(t, stepUp, { headers: bearer(grant.accessToken) });
    const code = handoffOf(done);
    const res = await exchange(t, code, done.browser, bearer(grant.accessToken));
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().code).toBe('identity.step_up_unavailable');
    expect((await exchange(t, code, done.browser, bearer(grant.accessToken))).statusCode).toBe(401);
  });
});
