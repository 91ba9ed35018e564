import { Secret, TOTP, URI } from 'otpauth';
import type { TestApp } from './app.js';
import { bearer, createPerson, type Grant, type Person, signIn } from './identities.js';
import { messagesTo, waitForCode } from './outbox.js';

export interface Authenticator {
  secret: string;
  policy: { algorithm: string; digits: number; period: number };
}

/**
 * An elevation through the real step-up routes. Without an authenticator, channel `identifier`
 * sends a code to the identity's first verified identifier (the development outbox), which is read
 * back and confirmed. An identity holding a verified factor must prove it (contract 3): pass its
 * `authenticator`; the clock then moves one period on, so the next code computed is unused.
 */
export async function elevate(
  t: TestApp,
  accessToken: string,
  firstIdentifier: string,
  authenticator?: Authenticator,
): Promise<string> {
  const before = messagesTo(t.config.dataDir, firstIdentifier).length;
  const start = await t.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups',
    headers: bearer(accessToken),
    payload: { channel: authenticator ? 'second_factor' : 'identifier' },
  });
  if (start.statusCode !== 201) throw new Error(`step-up start failed: ${start.statusCode} ${start.body}`);
  const code = authenticator
    ? new TOTP({ secret: Secret.fromBase32(authenticator.secret), ...authenticator.policy }).generate({
        timestamp: t.clock.now().getTime(),
      })
    : await waitForCode(t.config.dataDir, firstIdentifier, before + 1);
  const confirm = await t.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups/confirmations',
    headers: bearer(accessToken),
    payload: { challengeId: start.json().data.challengeId, code },
  });
  if (confirm.statusCode !== 201)
    throw new Error(`step-up confirm failed: ${confirm.statusCode} ${confirm.body}`);
  if (authenticator) t.clock.advance(authenticator.policy.period);
  return confirm.json().data.elevationToken;
}

/** Bearer plus x-elevation-token, for the routes that need both. */
export function elevated(accessToken: string, elevationToken: string): Record<string, string> {
  return { ...bearer(accessToken), 'x-elevation-token': elevationToken };
}

export interface ElevatedPerson {
  person: Person;
  grant: Grant;
  elevation: string;
  headers: Record<string, string>;
}

/** A fresh verified person, signed in, with a live elevation minted through the real step-up routes. */
export async function elevatedPerson(t: TestApp): Promise<ElevatedPerson> {
  const person = await createPerson(t.ctx);
  const grant = await signIn(t.app, person);
  const elevation = await elevate(t, grant.accessToken, person.email);
  return { person, grant, elevation, headers: elevated(grant.accessToken, elevation) };
}

/**
 * An authenticator added to `person` through the service's routes: a step-up by code (its code
 * read by `stepUpCode`, called once the code was asked for), the enrolment and its confirmation with
 * a code at `t.clock`'s time. Answers the generator; move the clock one period on before the next code.
 */
export async function addAuthenticator(
  t: TestApp,
  person: Person,
  stepUpCode: () => Promise<string>,
): Promise<TOTP> {
  const grant = await signIn(t.app, person);
  const start = await t.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups',
    headers: bearer(grant.accessToken),
    payload: { channel: 'identifier' },
  });
  if (start.statusCode !== 201) throw new Error(`step-up start failed: ${start.statusCode} ${start.body}`);
  const confirm = await t.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups/confirmations',
    headers: bearer(grant.accessToken),
    payload: { challengeId: start.json().data.challengeId, code: await stepUpCode() },
  });
  if (confirm.statusCode !== 201)
    throw new Error(`step-up confirm failed: ${confirm.statusCode} ${confirm.body}`);
  const headers = elevated(grant.accessToken, confirm.json().data.elevationToken);
  const enrol = await t.app.inject({ method: 'POST', url: '/api/v1/second-factors', headers, payload: {} });
  if (enrol.statusCode !== 201) throw new Error(`enrolment failed: ${enrol.statusCode} ${enrol.body}`);
  const totp = URI.parse(enrol.json().data.otpauthUri) as TOTP;
  const confirmed = await t.app.inject({
    method: 'POST',
    url: '/api/v1/second-factors/confirmations',
    headers: bearer(grant.accessToken),
    payload: { code: totp.generate({ timestamp: t.clock.now().getTime() }) },
  });
  if (confirmed.statusCode !== 204)
    throw new Error(`enrolment confirmation failed: ${confirmed.statusCode} ${confirmed.body}`);
  return totp;
}
