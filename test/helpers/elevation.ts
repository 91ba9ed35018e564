import type { TestApp } from './app.js';
import { bearer, createPerson, type Grant, type Person, signIn } from './identities.js';
import { messagesTo, waitForCode } from './outbox.js';

/**
 * An elevation through the real step-up routes: channel `identifier` sends a code to the identity's
 * first verified identifier (the development outbox), which is read back and confirmed.
 */
export async function elevate(t: TestApp, accessToken: string, firstIdentifier: string): Promise<string> {
  const before = messagesTo(t.config.dataDir, firstIdentifier).length;
  const start = await t.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups',
    headers: bearer(accessToken),
    payload: { channel: 'identifier' },
  });
  if (start.statusCode !== 201) throw new Error(`step-up start failed: ${start.statusCode} ${start.body}`);
  const code = await waitForCode(t.config.dataDir, firstIdentifier, before + 1);
  const confirm = await t.app.inject({
    method: 'POST',
    url: '/api/v1/step-ups/confirmations',
    headers: bearer(accessToken),
    payload: { challengeId: start.json().data.challengeId, code },
  });
  if (confirm.statusCode !== 201)
    throw new Error(`step-up confirm failed: ${confirm.statusCode} ${confirm.body}`);
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
