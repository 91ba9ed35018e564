import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { OutboundFetch } from '../../src/features/providers/upstream.js';
import type { TestApp } from '../helpers/app.js';
import { bearer } from '../helpers/identities.js';
import { type CallbackArrival, followToCallback, type UpstreamClient } from '../helpers/upstream.js';

/*
 * Redirect sign-in ("Continue with …", issue 26) through the routes: the page's POST
 * /provider-flows, the browser at the upstream fake (test/helpers/upstream.ts), the provider's
 * callback and the handoff. Our own cookies are kept by `Browser`; the upstream's by the fake's jar.
 */

/** The service's public origin in these tests (loopback: the flow cookie is `__Host-` and Secure). */
export const ORIGIN = 'http://127.0.0.1:4000';
export const CLIENT_ID = 'identity-service';
export const CLIENT_SECRET = `upstream-secret-${'s'.repeat(32)}`;
export const FLOWS = '/api/v1/provider-flows';
export const HANDOFFS = '/api/v1/provider-handoffs';
export const SIGN_IN_PAGE = '/account/#/sign-in';
export const SIGN_UP_PAGE = '/account/#/sign-up';
export const SECURITY_PAGE = '/account/#/security';
export const FLOW_COOKIE = /^__Host-identity-provider-flow-[0-9a-f]{16}$/;

export const callbackOf = (name: string) => `${ORIGIN}/api/v1/providers/${name}/callback`;

/** The upstream's registration of this service: one client, a redirect URI per provider entry. */
export function upstreamClient(...names: string[]): UpstreamClient {
  return { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: names.map(callbackOf) };
}

/** An IDENTITY_PROVIDERS entry offering redirect sign-in. */
export function redirectEntry(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, ...extra };
}

export function appEnv(entries: Record<string, unknown>[], extra: Record<string, string> = {}) {
  return { PUBLIC_ORIGIN: ORIGIN, IDENTITY_PROVIDERS: JSON.stringify(entries), ...extra };
}

/** The Set-Cookie lines of a response. */
export function setCookies(res: LightMyRequestResponse): string[] {
  const raw = res.headers['set-cookie'];
  if (raw === undefined) return [];
  return Array.isArray(raw) ? raw : [String(raw)];
}

/** The cookies a browser keeps for the service (path and expiry aside). */
export class Browser {
  readonly #cookies = new Map<string, string>();

  take(res: LightMyRequestResponse): void {
    for (const line of setCookies(res)) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq < 1) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /max-age=0\b/i.test(line)) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }

  get names(): string[] {
    return [...this.#cookies.keys()];
  }

  header(): string | undefined {
    if (this.#cookies.size === 0) return undefined;
    return [...this.#cookies].map(([n, v]) => `${n}=${v}`).join('; ');
  }
}

function cookieHeaders(browser: Browser | string | undefined): Record<string, string> {
  const cookie = typeof browser === 'string' ? browser : browser?.header();
  return cookie ? { cookie } : {};
}

export interface FlowBody {
  provider: string;
  intent?: 'sign_in' | 'link' | 'step_up';
  returnTo?: string;
}

/** POST /provider-flows from the service's own page; the browser keeps the flow cookie. */
export async function startFlow(
  t: TestApp,
  browser: Browser,
  body: FlowBody,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  const res = await t.app.inject({
    method: 'POST',
    url: FLOWS,
    headers: { origin: ORIGIN, ...headers },
    payload: { intent: 'sign_in', returnTo: SIGN_IN_PAGE, ...body },
  });
  browser.take(res);
  return res;
}

/** The browser at the upstream: from the authorization URL back to the service's callback. */
export function atUpstream(
  started: LightMyRequestResponse,
  provider: string,
  fetch?: OutboundFetch,
): Promise<CallbackArrival> {
  expect(started.statusCode, started.body).toBe(201);
  const url = started.json().data.authorizationUrl as string;
  return followToCallback(url, { callback: callbackOf(provider), ...(fetch ? { fetch } : {}) });
}

/** The callback as the browser delivers it (GET, or form POST for form_post), with its cookies. */
export async function deliver(
  t: TestApp,
  arrival: CallbackArrival,
  browser?: Browser | string,
): Promise<LightMyRequestResponse> {
  const url = new URL(arrival.url);
  expect(url.origin).toBe(ORIGIN);
  const path = `${url.pathname}${url.search}`;
  const res =
    arrival.method === 'GET'
      ? await t.app.inject({ method: 'GET', url: path, headers: cookieHeaders(browser) })
      : await t.app.inject({
          method: 'POST',
          url: path,
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...cookieHeaders(browser) },
          payload: arrival.form.toString(),
        });
  if (browser instanceof Browser) browser.take(res);
  return res;
}

/** Where a callback sent the browser: the hosted page, and the parameters in its fragment. */
export function returned(res: LightMyRequestResponse): { page: string; params: URLSearchParams } {
  expect(res.statusCode, res.body).toBe(303);
  const location = String(res.headers.location);
  expect(location.startsWith(`${ORIGIN}/account/#/`), location).toBe(true);
  const at = location.indexOf('?');
  const page = at < 0 ? location : location.slice(0, at);
  return {
    page: page.slice(ORIGIN.length),
    params: new URLSearchParams(at < 0 ? '' : location.slice(at + 1)),
  };
}

/** The parameters a failed callback answered: exactly provider and error. */
export function expectError(
  res: LightMyRequestResponse,
  provider: string,
  error: string,
  page = SIGN_IN_PAGE,
) {
  const back = returned(res);
  expect({ page: back.page, params: Object.fromEntries(back.params) }).toEqual({
    page,
    params: { provider, error },
  });
}

/** POST /provider-handoffs from the service's own page. */
export async function exchange(
  t: TestApp,
  code: string,
  browser?: Browser | string,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  const res = await t.app.inject({
    method: 'POST',
    url: HANDOFFS,
    headers: { origin: ORIGIN, ...cookieHeaders(browser), ...headers },
    payload: { code },
  });
  if (browser instanceof Browser) browser.take(res);
  return res;
}

export interface Trip {
  browser: Browser;
  started: LightMyRequestResponse;
  arrival: CallbackArrival;
  callback: LightMyRequestResponse;
  back: { page: string; params: URLSearchParams };
}

/** Start, the upstream, and the callback: one browser's whole trip to the provider and back. */
export async function trip(
  t: TestApp,
  body: FlowBody,
  opts: { browser?: Browser; fetch?: OutboundFetch; headers?: Record<string, string> } = {},
): Promise<Trip> {
  const browser = opts.browser ?? new Browser();
  const started = await startFlow(t, browser, body, opts.headers);
  const arrival = await atUpstream(started, body.provider, opts.fetch);
  const callback = await deliver(t, arrival, browser);
  return { browser, started, arrival, callback, back: returned(callback) };
}

/** The handoff code of a successful sign-in trip. */
export function handoffOf(trip: Trip): string {
  const code = trip.back.params.get('handoff');
  expect(code, `no handoff: ${trip.back.params}`).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect([...trip.back.params.keys()].sort()).toEqual(['handoff', 'provider']);
  return code as string;
}

/** A whole sign-in through the provider: trip, then the handoff exchanged by the same browser. */
export async function signInThrough(
  t: TestApp,
  provider: string,
  opts: { fetch?: OutboundFetch; returnTo?: string } = {},
): Promise<{ trip: Trip; res: LightMyRequestResponse }> {
  const done = await trip(t, { provider, ...(opts.returnTo ? { returnTo: opts.returnTo } : {}) }, opts);
  const res = await exchange(t, handoffOf(done), done.browser);
  return { trip: done, res };
}

export async function identityOf(t: TestApp, accessToken: string): Promise<string> {
  const res = await t.app.inject({
    method: 'GET',
    url: '/api/v1/session/context',
    headers: bearer(accessToken),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.identityId as string;
}

/** The identities a provider's subject is linked to (live links). */
export async function linkedTo(t: TestApp, provider: string, subject: string): Promise<string[]> {
  const r = await sql<{ identity_id: string }>`
    SELECT identity_id FROM provider_links
    WHERE provider = ${provider} AND subject = ${subject} AND removed_at IS NULL`.execute(t.ctx.database.db);
  return r.rows.map((row) => row.identity_id);
}

/** The live links of an identity, as `provider:subject`. */
export async function linksOf(t: TestApp, identityId: string): Promise<string[]> {
  const r = await sql<{ provider: string; subject: string }>`
    SELECT provider, subject FROM provider_links
    WHERE identity_id = ${identityId} AND removed_at IS NULL ORDER BY created_at, id`.execute(
    t.ctx.database.db,
  );
  return r.rows.map((row) => `${row.provider}:${row.subject}`);
}

/** The identity's live identifiers as `value:verified|pending`. */
export async function identifiersOf(t: TestApp, identityId: string): Promise<string[]> {
  const r = await sql<{ value: string; verified: boolean }>`
    SELECT value, verified_at IS NOT NULL AS verified FROM identifiers
    WHERE identity_id = ${identityId} AND removed_at IS NULL ORDER BY value`.execute(t.ctx.database.db);
  return r.rows.map((row) => `${row.value}:${row.verified ? 'verified' : 'pending'}`);
}

export async function count(
  t: TestApp,
  table: 'identities' | 'provider_links' | 'provider_handoffs' | 'sessions',
) {
  const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)}`.execute(
    t.ctx.database.db,
  );
  return r.rows[0].n;
}

/**
 * What a refusal left behind: nothing, compared before and after. Handoffs are counted while they
 * live: each new flow prunes expired ones.
 */
export async function footprint(t: TestApp) {
  const live = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM provider_handoffs WHERE expires_at > ${t.clock.now()}`.execute(
    t.ctx.database.db,
  );
  return {
    identities: await count(t, 'identities'),
    links: await count(t, 'provider_links'),
    handoffs: live.rows[0].n,
    sessions: await count(t, 'sessions'),
  };
}

/** POST /token requests the upstream fake has answered so far. */
export const tokenRequests = (requests: readonly string[]) =>
  requests.filter((r) => r.startsWith('POST /token')).length;

/** The identity's name (migration 0029) as its columns hold it. */
export async function namesOf(t: TestApp, identityId: string) {
  return t.ctx.database.db
    .selectFrom('identities')
    .select(['given_name as givenName', 'family_name as familyName', 'display_name as displayName'])
    .where('id', '=', identityId)
    .executeTakeFirstOrThrow();
}
