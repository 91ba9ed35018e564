import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { type Grant, race } from '../helpers/identities.js';
import {
  freshToken,
  idToken,
  issueNonce,
  nonceHash,
  ProviderSink,
  providerSignIn,
  providerStepUp,
  SIGN_IN_REFUSED,
  STEP_UP_REFUSED,
} from '../providers/support.js';
import { context, sidOf } from '../sessions/support.js';
import { ROUNDS, raceApp, scalar } from './support.js';

// Race 8 (interface 3, 4.3): one provider nonce presented on sign-in and provider step-up at once.
let t: TestApp;
let sink: ProviderSink;

beforeAll(async () => {
  // The provider's key endpoint on loopback; the service fetches its keys from there.
  sink = await ProviderSink.start();
  t = await raceApp(sink.env());
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

describe('one nonce on two routes at once', () => {
  it(`exactly one of sign-in and provider step-up wins, and the nonce is spent once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = `race8-${randomUUID()}`;
      const first = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }));
      expect(first.statusCode, first.body).toBe(201);
      const grant = first.json().data as Grant;
      const identityId = (await context(t.app, grant.accessToken)).json().data.identityId as string;
      const count = (table: 'sessions' | 'elevations') =>
        scalar(t, sql`SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE identity_id = ${identityId}`);
      const refused = () =>
        scalar(
          t,
          sql`SELECT count(*)::int AS n FROM sign_in_attempts
              WHERE identity_id = ${identityId} AND outcome = 'refused'`,
        );
      expect(await count('sessions')).toBe(1);
      expect(await count('elevations')).toBe(0);

      const { nonce } = await issueNonce(t.app);
      const token = await idToken(sink, t.clock, { sub, nonce: nonceHash(nonce) });

      const [signIn, stepUp] = await race(2, (i) =>
        i === 0 ? providerSignIn(t.app, token) : providerStepUp(t.app, grant.accessToken, token),
      );

      expect(
        [
          [201, 403],
          [401, 201],
        ],
        `round ${round}: ${signIn.body} ${stepUp.body}`,
      ).toContainEqual([signIn.statusCode, stepUp.statusCode]);
      const signInWon = signIn.statusCode === 201;
      if (signInWon) {
        expect(stepUp.json()).toEqual(STEP_UP_REFUSED);
        const won = signIn.json().data as Grant;
        expect(won.kind).toBe('session');
        expect(sidOf(won.accessToken)).not.toBe(sidOf(grant.accessToken));
        expect((await context(t.app, won.accessToken)).json().data.identityId).toBe(identityId);
      } else {
        expect(signIn.json()).toEqual(SIGN_IN_REFUSED);
        expect(typeof stepUp.json().data.elevationToken).toBe('string');
      }

      // The nonce row: spent, once. Exactly one act happened, the loser's route left no trace
      // but the refused attempt a lost sign-in records for a known subject.
      const rows = await sql<{ spent: boolean }>`
        SELECT spent_at IS NOT NULL AS spent FROM provider_nonces WHERE hash = ${nonceHash(nonce)}`.execute(
        t.ctx.database.db,
      );
      expect(rows.rows).toEqual([{ spent: true }]);
      expect(await count('sessions')).toBe(signInWon ? 2 : 1);
      expect(await count('elevations')).toBe(signInWon ? 0 : 1);
      expect(await refused()).toBe(signInWon ? 0 : 1);
      expect(await scalar(t, sql`SELECT count(*)::int AS n FROM provider_links WHERE subject = ${sub}`)).toBe(
        1,
      );

      // Spent on both routes afterwards.
      const again = await idToken(sink, t.clock, { sub, nonce: nonceHash(nonce), iatOffset: -1 });
      expect((await providerSignIn(t.app, again)).json()).toEqual(SIGN_IN_REFUSED);
      expect((await providerStepUp(t.app, grant.accessToken, again)).json()).toEqual(STEP_UP_REFUSED);
    }
  });
});
