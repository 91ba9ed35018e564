import { decodeJwt } from 'jose';
import { sql } from 'kysely';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { race } from '../helpers/identities.js';
import {
  browse,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';
import { ROUNDS } from './support.js';

// An offline grant being given in the hosted session while a replay of that session's refresh
// token ends it as stolen. The theft is a mark on the session, read through each grant's link on
// every use and by the sweep, so a grant linked on either side of the replay ends with it
// (docs/decisions.md, "A stolen session ends its offline grants").
let f: OidcFixture;

beforeAll(async () => {
  f = await oidcFixture({ RATE_LIMIT_PROVES_A_PASSWORD: '1000000/60', ARGON2_MEMORY_KIB: '1024' }, true);
});
afterAll(async () => {
  await f?.close();
});

const COOKIE = '__Host-identity-session';
const renewByCookie = (value: string) =>
  fetch(`${f.origin}/api/v1/browser-session/renewals`, {
    method: 'POST',
    headers: { cookie: `${COOKIE}=${value}`, origin: f.origin },
  });

describe('an offline grant given while a replay ends the session as stolen', () => {
  it(`no grant of the session outlives the theft, and each one given a code is logged out (${ROUNDS} rounds)`, async () => {
    let linked = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const { person, jar } = await hostedSignIn(f);
      const config = await rpConfig(f, FIRST_PARTY);
      const auth = await startAuthorization(f, config, { scope: 'openid offline_access', prompt: 'consent' });
      // The owner's browser renews; the copy of the cookie it held before is the thief's.
      const copy = jar.cookies.get(COOKIE) as string;
      const renewed = await renewByCookie(copy);
      expect(renewed.status).toBe(201);
      jar.take(renewed);

      // The browser goes through the login prompt; the next request answers the consent prompt,
      // which reads the hosted session and links the grant to it. That request races the replay.
      let consent = new URL(auth.url.href);
      for (let interactions = 0; ; ) {
        if (consent.pathname.startsWith('/oidc/interaction/') && ++interactions === 2) break;
        const hop = await fetch(consent, { redirect: 'manual', headers: { cookie: jar.header() } });
        jar.take(hop);
        consent = new URL(hop.headers.get('location') as string, consent);
      }
      const [landed, replay] = await race(2, async (i) => {
        if (i === 0) return browse(f, consent.href, jar);
        // From round to round the replay comes before, during or after the consent's request.
        await new Promise((r) => setTimeout(r, (round % 10) * 15));
        return renewByCookie(copy);
      });
      expect((replay as Response).status).toBe(401);

      const callback = (landed as Awaited<ReturnType<typeof browse>>).callback;
      if (callback && !callback.searchParams.has('error')) {
        const exchanged = await client
          .authorizationCodeGrant(config, callback, {
            pkceCodeVerifier: auth.verifier,
            expectedState: auth.state,
            expectedNonce: auth.nonce,
          })
          .catch((e: { error?: string }) => e.error ?? 'thrown');
        if (typeof exchanged === 'string') {
          expect(exchanged, `round ${round}`).toBe('invalid_grant');
        } else {
          await expect(
            client.refreshTokenGrant(config, exchanged.refresh_token as string),
          ).rejects.toMatchObject({ error: 'invalid_grant' });
          expect((await client.tokenIntrospection(config, exchanged.access_token)).active).toBe(false);
        }
      }

      await f.t.ctx.oidc.sweep();
      const grants = await sql<{ sid: string | null; ended_reason: string | null }>`
        SELECT sid, ended_reason FROM oidc_grants WHERE identity_id = ${person.identityId}`.execute(
        f.t.ctx.database.db,
      );
      linked += grants.rows.length;
      for (const g of grants.rows) {
        expect(g.ended_reason, `round ${round}`).toBe('session_stolen');
        if (g.sid !== null) {
          expect(
            f.logoutTokens.filter((t) => decodeJwt(t).sid === g.sid),
            `round ${round}`,
          ).toHaveLength(1);
        }
      }
    }
    // Some rounds gave the grant before or while the replay ended the session, not only after.
    expect(linked).toBeGreaterThan(0);
  });
});
