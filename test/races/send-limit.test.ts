import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { createPerson, race } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { emailForm, PASSWORD, uniqueEmail } from '../registration/helpers.js';
import { ROUNDS, raceApp, scalar, statuses, times } from './support.js';

// Issue 27, broken item 7: only sends count against RATE_LIMIT_SENDS_A_MESSAGE per client address,
// so the count is checked and taken in the transaction that decides to send. At the boundary,
// concurrent requests from one address must not all pass the check: exactly MAX of them send.
const MAX = 3;
const AT_ONCE = 10;

let t: TestApp;
beforeAll(async () => {
  t = await raceApp({ RATE_LIMIT_SENDS_A_MESSAGE: `${MAX}/900` });
});
afterAll(async () => {
  await t?.close();
});

const post = (url: string, from: string, payload: object) =>
  t.app.inject({ method: 'POST', url: `/api/v1${url}`, payload, remoteAddress: from });

describe('concurrent sends from one client address at the limit', () => {
  it(`${AT_ONCE} sign-ups at once for ${AT_ONCE} new addresses: exactly ${MAX} send, the rest are 429 and write nothing (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const from = `203.0.113.${round + 1}`;
      const addresses = Array.from({ length: AT_ONCE }, (_, i) => uniqueEmail(`race-send-${round}-${i}`));
      const answers = await race(AT_ONCE, (i) =>
        post('/sign-ups', from, { ...emailForm(addresses[i]), password: PASSWORD }),
      );
      expect(statuses(answers), `round ${round}`).toEqual([...times(MAX, 201), ...times(AT_ONCE - MAX, 429)]);
      for (const r of answers.filter((a) => a.statusCode === 429)) {
        expect(r.json().code).toBe('rate_limit.exceeded');
        expect(Number(r.headers['retry-after'])).toBe(900);
      }
      const sent = addresses.filter((a) => messagesTo(t.config.dataDir, a).length > 0);
      expect(sent, `round ${round}`).toHaveLength(MAX);
      expect(
        await scalar(
          t,
          sql`SELECT count(*)::int AS n FROM identifiers WHERE value IN (${sql.join(addresses)})`,
        ),
      ).toBe(MAX);
    }
  });

  it(`${AT_ONCE} recoveries at once for one known address: exactly ${MAX} answer 201 and ${MAX} codes go (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const from = `2001:db8:${(round + 1).toString(16)}::1`;
      const owner = await createPerson(t.ctx);
      const answers = await race(AT_ONCE, () => post('/password-recoveries', from, emailForm(owner.email)));
      expect(statuses(answers), `round ${round}`).toEqual([...times(MAX, 201), ...times(AT_ONCE - MAX, 429)]);
      await waitForCode(t.config.dataDir, owner.email, MAX);
      expect(
        await scalar(
          t,
          sql`SELECT count(*)::int AS n FROM challenges c JOIN identifiers i ON i.id = c.identifier_id
              WHERE i.value = ${owner.email} AND c.purpose = 'password_recovery'`,
        ),
      ).toBe(MAX);
      // The clock does not move in a round; a fresh person per round keeps destinations apart.
      t.clock.advance(900);
    }
  });
});
