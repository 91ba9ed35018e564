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

// One authorization code, and one refresh token, presented at once: the consume is a
// compare-and-set, so exactly one exchange succeeds, and the losing reuse ends the grant: once,
// with exactly one oidc.grant.revoked however many reuses race to end it.
const ROUNDS = 10;
let f: OidcFixture;

beforeAll(async () => {
  f = await oidcFixture({ RATE_LIMIT_PROVES_A_PASSWORD: '1000000/60' }, true);
});
afterAll(async () => {
  await f?.close();
});

async function codeFor() {
  const { jar, person } = await hostedSignIn(f);
  const config = await rpConfig(f, FIRST_PARTY);
  const auth = await startAuthorization(f, config);
  const landed = await browse(f, auth.url.href, jar);
  return { config, auth, callback: landed.callback as URL, identityId: person.identityId };
}

/** The grant events of one identity, by type. */
async function grantEvents(identityId: string): Promise<string[]> {
  const rows = await f.t.ctx.database.db
    .selectFrom('events')
    .select('type')
    .where('identity_id', '=', identityId)
    .where('type', 'in', ['oidc.grant.created', 'oidc.grant.revoked'])
    .execute();
  return rows.map((r) => r.type).sort();
}

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { error?: string }) => e.error ?? 'thrown',
  );

describe('one code exchanged at once by 5 requests', () => {
  it(`exactly one gets tokens, the others invalid_grant (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { config, auth, callback, identityId } = await codeFor();
      const answers = await race(5, () =>
        outcome(
          client.authorizationCodeGrant(config, callback, {
            pkceCodeVerifier: auth.verifier,
            expectedState: auth.state,
            expectedNonce: auth.nonce,
          }),
        ),
      );
      expect(answers.sort(), `round ${round}`).toEqual([
        'invalid_grant',
        'invalid_grant',
        'invalid_grant',
        'invalid_grant',
        'ok',
      ]);
      expect(await grantEvents(identityId), `round ${round}`).toEqual([
        'oidc.grant.created',
        'oidc.grant.revoked',
      ]);
    }
  });
});

describe('one refresh token presented at once by 5 requests', () => {
  it(`exactly one rotation, and the grant ends (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const { config, auth, callback, identityId } = await codeFor();
      const tokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: auth.verifier,
        expectedState: auth.state,
        expectedNonce: auth.nonce,
      });
      const results: { refresh_token?: string }[] = [];
      const answers = await race(5, () =>
        outcome(
          client.refreshTokenGrant(config, tokens.refresh_token as string).then((r) => {
            results.push(r);
          }),
        ),
      );
      expect(answers.sort(), `round ${round}`).toEqual([
        'invalid_grant',
        'invalid_grant',
        'invalid_grant',
        'invalid_grant',
        'ok',
      ]);
      // The reuse ended the grant: the winner's new refresh token is refused too.
      await expect(
        client.refreshTokenGrant(config, results[0].refresh_token as string),
      ).rejects.toMatchObject({
        error: 'invalid_grant',
      });
      expect(await grantEvents(identityId), `round ${round}`).toEqual([
        'oidc.grant.created',
        'oidc.grant.revoked',
      ]);
    }
  });
});
