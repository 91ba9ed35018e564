import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { Secret, TOTP } from 'otpauth';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { elevate } from '../helpers/elevation.js';
import { bearer, createPerson, type Grant, type Person, signIn } from '../helpers/identities.js';
import { lastCode, outbox } from '../helpers/outbox.js';

export const API = '/api/v1';

export interface Policy {
  algorithm: 'SHA1' | 'SHA256' | 'SHA512';
  digits: number;
  period: number;
}

export const DEFAULT_POLICY: Policy = { algorithm: 'SHA1', digits: 6, period: 30 };
export const WIDE_POLICY: Policy = { algorithm: 'SHA256', digits: 8, period: 60 };
export const WIDE_ENV = { TOTP_ALGORITHM: 'SHA256', TOTP_DIGITS: '8', TOTP_PERIOD: '60' };

/** The authenticator app: the real TOTP of `secret` at `at`, `offset` steps away. */
export function totp(secret: string, policy: Policy, at: Date, offset = 0): string {
  return new TOTP({ secret: Secret.fromBase32(secret), ...policy }).generate({
    timestamp: at.getTime() + offset * policy.period * 1000,
  });
}

/** A code that is certainly not the factor's within the ±1 window around `at`. */
export function wrongCode(secret: string, policy: Policy, at: Date): string {
  const taken = new Set([-1, 0, 1].map((o) => totp(secret, policy, at, o)));
  for (let n = 0; ; n++) {
    const candidate = String(n).padStart(policy.digits, '0');
    if (!taken.has(candidate)) return candidate;
  }
}

export interface Call {
  token?: string;
  elevation?: string;
  payload?: unknown;
}

export function post(app: FastifyInstance, url: string, call: Call = {}): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {};
  if (call.token) Object.assign(headers, bearer(call.token));
  if (call.elevation) headers['x-elevation-token'] = call.elevation;
  return app.inject({
    method: 'POST',
    url: `${API}${url}`,
    headers,
    ...(call.payload === undefined ? {} : { payload: call.payload as object }),
  });
}

export function get(app: FastifyInstance, url: string, token: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url: `${API}${url}`, headers: bearer(token) });
}

/** The newest code the development outbox holds for `to` (its own whitespace-separated token). */
export const lastOutboxCode = (dataDir: string, to: string): string => lastCode(dataDir, to);

export const outboxCount = (dataDir: string): number => outbox(dataDir).length;

export interface Factor {
  id: string;
  secret: string;
  otpauthUri: string;
}

/**
 * Enrols and confirms a factor, then moves the clock one period on so the next code the test
 * computes belongs to a step that was never used. A person who already holds a factor steps up
 * with it (`held`): the identifier channel is refused to them (contract 3).
 */
export async function enrolVerified(
  t: TestApp,
  person: Person,
  grant: Grant,
  policy: Policy,
  label?: string,
  held?: { factor: Factor; policy: Policy },
) {
  const authenticator = held && { secret: held.factor.secret, policy: held.policy };
  const elevation = await elevate(t, grant.accessToken, person.email, authenticator);
  const res = await post(t.app, '/second-factors', {
    token: grant.accessToken,
    elevation,
    payload: label === undefined ? {} : { label },
  });
  expect(res.statusCode, res.body).toBe(201);
  const factor = res.json().data as Factor;
  const ok = await post(t.app, '/second-factors/confirmations', {
    token: grant.accessToken,
    payload: { code: totp(factor.secret, policy, t.clock.now()) },
  });
  expect(ok.statusCode, ok.body).toBe(204);
  t.clock.advance(policy.period);
  return factor;
}

/** A person holding one verified factor, and a session opened before the factor existed. */
export async function personWithFactor(t: TestApp, policy: Policy = DEFAULT_POLICY) {
  const person = await createPerson(t.ctx);
  const grant = await signIn(t.app, person);
  const factor = await enrolVerified(t, person, grant, policy);
  return { person, grant, factor };
}

export async function ticketFor(
  app: FastifyInstance,
  person: Pick<Person, 'email' | 'password'>,
): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: `${API}/sign-ins`,
    payload: { identifierType: 'email', identifier: person.email, password: person.password },
  });
  expect(res.statusCode, res.body).toBe(201);
  const data = res.json().data;
  expect(data.kind).toBe('second_factor_required');
  return data.secondFactorTicket as string;
}

export function completeSignIn(app: FastifyInstance, body: Record<string, unknown>) {
  return post(app, '/sign-ins/second-factors', { payload: body });
}

/** Every body of one refusal family, compared byte for byte (and by status and media type). */
export function expectIdentical(responses: LightMyRequestResponse[], status: number, code: string) {
  expect(responses.length).toBeGreaterThan(1);
  for (const r of responses) {
    expect(r.statusCode, r.body).toBe(status);
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
  }
  expect(JSON.parse(responses[0].body).code).toBe(code);
  const bodies = new Set(responses.map((r) => r.body));
  expect([...bodies]).toHaveLength(1);
}

/** Read straight from the row: the service itself never asks whether an account is locked. */
export async function isLocked(t: TestApp, identityId: string): Promise<boolean> {
  const r = await sql<{ locked: boolean }>`
    SELECT locked_until IS NOT NULL AND locked_until > ${t.clock.now()} AS locked FROM identities
    WHERE id = ${identityId}`.execute(t.ctx.database.db);
  return r.rows[0]?.locked === true;
}
