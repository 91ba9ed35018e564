import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPerson } from '../helpers/identities.js';
import {
  browse,
  CookieJar,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  signInOnPage,
  startAuthorization,
} from '../helpers/oidc.js';

/*
 * prompt=login and max_age (docs/oidc.md, "Sign-in and consent"): met by a sign-in made for the
 * interaction, told apart from the session the browser came with by the session itself, not by
 * the second it was opened in. The service's clock stands still between reaching the sign-in page
 * and signing in, as it may for a password manager's autofill.
 */
describe('OpenID Provider: a fresh sign-in asked for by the app', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture();
  });
  afterAll(async () => {
    await f.close();
  });

  const second = (d: Date) => Math.floor(d.getTime() / 1000);

  /** An authorization request that lands on the hosted sign-in page: the request and its interaction. */
  async function reachSignInPage(
    jar: CookieJar,
    config: client.Configuration,
    params: Record<string, string>,
  ) {
    const auth = await startAuthorization(f, config, params);
    const landed = await browse(f, auth.url.href, jar);
    expect(landed.page?.location).toMatch(/\/account\/#\/authorize\/[\w-]+$/);
    return { auth, uid: (landed.page?.location ?? '').split('/').pop() as string };
  }

  /** Where the hosted page sends the browser once the person has signed in. */
  const carryOn = (jar: CookieJar, uid: string) => browse(f, `/oidc/interaction/${uid}/continue`, jar);

  async function tokensOf(
    config: client.Configuration,
    auth: Awaited<ReturnType<typeof startAuthorization>>,
    callback: URL | undefined,
  ) {
    expect(callback?.searchParams.get('code')).toBeTruthy();
    return client.authorizationCodeGrant(config, callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
  }

  it('completes prompt=login when the person signs in the instant they reach the page', async () => {
    const person = await createPerson(f.t.ctx);
    const jar = new CookieJar();
    const config = await rpConfig(f, FIRST_PARTY);
    const { auth, uid } = await reachSignInPage(jar, config, { prompt: 'login' });
    await signInOnPage(f, jar, person);
    const done = await carryOn(jar, uid);
    expect(done.page).toBeUndefined();
    const claims = (await tokensOf(config, auth, done.callback)).claims();
    expect(claims?.sub).toBe(person.identityId);
    expect(claims?.auth_time).toBe(second(f.t.clock.now()));
    expect(claims?.amr).toEqual(['pwd']);
  });

  it('asks a browser already signed in to sign in again, and takes the new sign-in only', async () => {
    // Signed in at the hosted pages a minute ago, and to the app once since.
    f.t.clock.advance(-60);
    const { person, jar } = await hostedSignIn(f);
    const before = second(f.t.clock.now());
    f.t.clock.advance(60);
    const config = await rpConfig(f, FIRST_PARTY);
    const first = await browse(f, (await startAuthorization(f, config)).url.href, jar);
    expect(first.callback?.searchParams.get('code')).toBeTruthy();

    const { auth, uid } = await reachSignInPage(jar, config, { prompt: 'login' });
    // Carrying on without signing in: the session the browser came with does not do.
    const without = await carryOn(jar, uid);
    expect(without.page?.location).toBe(`${f.origin}/account/#/authorize/${uid}`);
    await signInOnPage(f, jar, person);
    const done = await carryOn(jar, uid);
    expect(done.page).toBeUndefined();
    const tokens = await tokensOf(config, auth, done.callback);
    expect(tokens.claims()?.auth_time).toBe(second(f.t.clock.now()));
    expect(tokens.claims()?.auth_time).not.toBe(before);
    // The grant is the new session's: it serves userinfo and refreshes.
    const info = await client.fetchUserInfo(config, tokens.access_token, person.identityId);
    expect(info.email).toBe(person.email);
    expect(
      (await client.refreshTokenGrant(config, tokens.refresh_token as string)).access_token,
    ).toBeTruthy();
  });

  it('never takes the session the browser held when the page was shown, even one opened that instant', async () => {
    const { jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    for (const params of [{ prompt: 'login' }, { max_age: '0' }] as Record<string, string>[]) {
      const { uid } = await reachSignInPage(jar, config, params);
      const again = await carryOn(jar, uid);
      expect(again.page?.location).toBe(`${f.origin}/account/#/authorize/${uid}`);
    }
  });

  it('meets max_age=0 with a sign-in made on the page the instant it was reached', async () => {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const { auth, uid } = await reachSignInPage(jar, config, { max_age: '0' });
    await signInOnPage(f, jar, person);
    const done = await carryOn(jar, uid);
    expect(done.page).toBeUndefined();
    const claims = (await tokensOf(config, auth, done.callback)).claims();
    expect(claims?.sub).toBe(person.identityId);
    expect(claims?.auth_time).toBe(second(f.t.clock.now()));
  });

  it('takes the provider session for its own hosted session only, not another opened in the same second', async () => {
    const { person, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const firstAuth = await startAuthorization(f, config);
    const first = await browse(f, firstAuth.url.href, jar);
    const firstSid = (await tokensOf(config, firstAuth, first.callback)).claims()?.sid;
    // Signed in again in this browser, in the same second (the handover ends the first session).
    await signInOnPage(f, jar, person);
    const nextAuth = await startAuthorization(f, config);
    const next = await browse(f, nextAuth.url.href, jar);
    const nextSid = (await tokensOf(config, nextAuth, next.callback)).claims()?.sid;
    expect(nextSid).toBeTypeOf('string');
    expect(nextSid).not.toBe(firstSid);
  });

  it('forgets the sign-in pages once their interactions can no longer finish', async () => {
    const db = f.t.ctx.database.db;
    const pages = async () =>
      (
        await db
          .selectFrom('oidc_sign_in_pages')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n;
    expect(Number(await pages())).toBeGreaterThan(0);
    f.t.clock.advance(3601);
    await f.t.ctx.oidc.sweep();
    expect(Number(await pages())).toBe(0);
  });
});
