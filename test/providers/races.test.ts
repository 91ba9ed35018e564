import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import {
  freshToken,
  idToken,
  issueNonce,
  nonceHash,
  ProviderSink,
  providerSignIn,
  providerStepUp,
} from './support.js';

// Real PostgreSQL whatever the pass: the database, not the process, must decide these races.
let t: TestApp;
let sink: ProviderSink;
const ROUNDS = 15;

beforeAll(async () => {
  sink = await ProviderSink.start();
  t = await createTestApp({ env: sink.env(), server: true });
});
afterAll(async () => {
  await t.close();
  await sink.close();
});

describe('provider races on PostgreSQL', () => {
  it('concurrent first visits of one subject create exactly one identity', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const sub = `first-${randomUUID()}`;
      const tokens = await Promise.all([0, 1, 2].map(() => freshToken(t.app, sink, t.clock, { sub })));
      const results = await race(3, (i) => providerSignIn(t.app, tokens[i]));
      expect(results.map((r) => r.statusCode)).toEqual([201, 201, 201]);
      const ids = new Set<string>();
      for (const r of results) {
        const ctx = await t.app.inject({
          method: 'GET',
          url: '/api/v1/session/context',
          headers: { authorization: `Bearer ${r.json().data.accessToken}` },
        });
        ids.add(ctx.json().data.identityId);
      }
      expect(ids.size).toBe(1);
      const links = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM provider_links WHERE subject = ${sub}`.execute(t.ctx.database.db);
      expect(links.rows[0].n).toBe(1);
    }
    // No orphan identity is left behind by a lost race.
    const orphans = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM identities i
      WHERE NOT EXISTS (SELECT 1 FROM provider_links l WHERE l.identity_id = i.id)
        AND NOT EXISTS (SELECT 1 FROM identifiers f WHERE f.identity_id = i.id)`.execute(t.ctx.database.db);
    expect(orphans.rows[0].n).toBe(0);
  });

  it('one nonce raced by a sign-in and a provider step-up is spent exactly once', async () => {
    const sub = `raced-${randomUUID()}`;
    const grant = (await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }))).json().data;
    const wins = { signIn: 0, stepUp: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const { nonce } = await issueNonce(t.app);
      const a = await idToken(sink, t.clock, { sub, nonce: nonceHash(nonce) });
      const b = await idToken(sink, t.clock, { sub, nonce: nonceHash(nonce) });
      const [signIn, stepUp] = await race(2, (i) =>
        i === 0 ? providerSignIn(t.app, a) : providerStepUp(t.app, grant.accessToken, b),
      );
      const outcome = [signIn.statusCode, stepUp.statusCode];
      expect([
        [201, 403],
        [401, 201],
      ]).toContainEqual(outcome);
      if (signIn.statusCode === 201) wins.signIn++;
      else wins.stepUp++;
      expect(signIn.statusCode === 201 ? stepUp.json().code : signIn.json().code).toBe(
        signIn.statusCode === 201 ? 'identity.step_up_confirmation_refused' : 'identity.sign_in_refused',
      );
    }
    expect(wins.signIn + wins.stepUp).toBe(ROUNDS);
  });
});
