import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OidcFixture, oidcFixture, rpConfig, THIRD_PARTY } from '../helpers/oidc.js';

// Client authentication at the token endpoint draws on the client's guess budget
// (RATE_LIMIT_GUESSES): wrong secrets count, and past the free failures an attempt made before
// its wait answers 429 with Retry-After, right secret or wrong, unchecked.
describe('OpenID Provider: client authentication is budgeted', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture({ RATE_LIMIT_GUESSES: '10/3600' });
  });
  afterAll(async () => {
    await f.close();
  });

  const tokenRequest = (secret: string) =>
    fetch(`${f.origin}/oidc/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${THIRD_PARTY.id}:${secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials' }),
    });

  it('counts wrong secrets and then refuses even the right one until the wait is over', async () => {
    const wrong = await tokenRequest('not-the-secret');
    expect(wrong.status).toBe(401);
    expect((await wrong.json()).error).toBe('invalid_client');
    for (let i = 0; i < 9; i++) expect((await tokenRequest(`wrong-${i}`)).status).toBe(401);
    const early = await tokenRequest(THIRD_PARTY.secret);
    expect(early.status).toBe(429);
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await early.json()).toEqual({
      error: 'invalid_client',
      error_description: 'too many failed client authentications',
    });
    f.t.clock.advance(3600);
    const config = await rpConfig(f, THIRD_PARTY);
    const tokens = await client.clientCredentialsGrant(config);
    expect(tokens.access_token).toBeTruthy();
  });

  it('never stores the secret: only its SHA-256 is compared', async () => {
    const logs = f.t.logs();
    expect(logs).not.toContain(THIRD_PARTY.secret);
  });
});
