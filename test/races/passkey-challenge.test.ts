import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { SoftAuthenticator } from '../helpers/authenticator.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { race } from '../helpers/identities.js';
import { ROUNDS, raceApp, scalar, statuses, times } from './support.js';

// Issue 13: one passkey sign-in challenge answered by several assertions at once opens one
// session at most (the challenge is spent by compare-and-set in the transaction that opens it).
const ORIGIN = 'https://id.example';
let t: TestApp;

beforeAll(async () => {
  t = await raceApp({ PUBLIC_ORIGIN: ORIGIN });
});
afterAll(async () => t?.close());

describe('one passkey challenge, many assertions', () => {
  it(`exactly one of 8 simultaneous assertions signs in (${ROUNDS} rounds)`, async () => {
    const who = await elevatedPerson(t);
    const auth = new SoftAuthenticator(ORIGIN, 'id.example');
    const post = (url: string, payload: object, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'POST', url: `/api/v1${url}`, payload, headers });
    const creation = (await post('/passkeys/options', {}, who.headers)).json().data.options;
    expect((await post('/passkeys', { credential: auth.create(creation) }, who.headers)).statusCode).toBe(
      201,
    );
    const sessions = () =>
      scalar(t, sql`SELECT count(*)::int AS n FROM sessions WHERE identity_id = ${who.person.identityId}`);

    for (let round = 0; round < ROUNDS; round++) {
      const before = await sessions();
      const options = (await post('/sign-ins/passkeys/options', {})).json().data.options;
      // Signed one after another (rising counters), sent together.
      const assertions = Array.from({ length: 8 }, () => auth.get(options));
      const answers = await race(8, (i) => post('/sign-ins/passkeys', { credential: assertions[i] }));
      expect(statuses(answers).sort()).toEqual([201, ...times(7, 401)]);
      expect(await sessions()).toBe(before + 1);
    }
  });
});
