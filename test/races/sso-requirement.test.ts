import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Grant, race } from '../helpers/identities.js';
import { call, ORGS } from '../organizations/support.js';
import { context, signInRaw } from '../sessions/support.js';
import { TestIdp } from '../sso/idp.js';
import { ORIGIN, type SsoSetup, setUp } from '../sso/support.js';
import { ROUNDS } from './support.js';

// "Require SSO" turned on while password sign-ins of the domain's people are completing (docs/sso.md,
// "Require SSO"): the sign-in reads the epoch before its proof and the requirement after it; turning
// it on moves the epoch. Whatever the interleaving, no session opened by a password survives.
let t: TestApp;
let s: SsoSetup;

beforeAll(async () => {
  t = await createTestApp({
    server: true,
    admin: true,
    env: {
      PUBLIC_ORIGIN: ORIGIN,
      ARGON2_MEMORY_KIB: '1024',
      RATE_LIMIT_SENDS_A_MESSAGE: '1000000/60',
      RATE_LIMIT_ANSWERS_A_CHALLENGE: '1000000/60',
      RATE_LIMIT_PROVES_A_PASSWORD: '1000000/60',
    },
  });
  s = await setUp(t, await TestIdp.create(t.clock.now()));
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const SIGN_INS = 8;

describe('require SSO racing password sign-ins in flight', () => {
  it(`no password session of the domain is live once it is on (${ROUNDS} rounds)`, async () => {
    let granted = 0;
    let refused = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const person = await createPerson(t.ctx, `r${round}-${randomUUID().slice(0, 6)}@${s.domain}`);
      const answers = await race(SIGN_INS + 1, (i) =>
        i < SIGN_INS
          ? signInRaw(t.app, person.email, person.password)
          : call(t.app, 'PUT', `${ORGS}/${s.orgId}/sso-requirement`, s.ownerToken, { requireSso: true }),
      );
      const turnedOn = answers[SIGN_INS];
      expect(turnedOn.statusCode, turnedOn.body).toBe(200);
      for (const r of answers.slice(0, SIGN_INS)) {
        // Refused by the address's domain (read after the commit), or where the sign-in completes
        // (the domain read before it, the identity after: the wrong-password answer).
        if (r.statusCode === 403 || r.statusCode === 401) {
          expect(r.json().code).toBe(
            r.statusCode === 403 ? 'identity.sso_required' : 'identity.sign_in_refused',
          );
          refused++;
          continue;
        }
        expect(r.statusCode, r.body).toBe(201);
        granted++;
        // Opened before the requirement was read as on: its epoch is the one turning it on moved past.
        const seen = await context(t.app, (r.json().data as Grant).accessToken);
        expect(seen.statusCode, seen.body).toBe(401);
      }
      const off = await call(t.app, 'PUT', `${ORGS}/${s.orgId}/sso-requirement`, s.ownerToken, {
        requireSso: false,
      });
      expect(off.statusCode, off.body).toBe(200);
    }
    // Both sides of the race happened at least once over the rounds.
    expect(granted + refused).toBe(ROUNDS * SIGN_INS);
    console.info(`require SSO race: ${granted} sessions dead on arrival, ${refused} refused`);
  });
});
