import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer } from '../helpers/identities.js';
import {
  AUDIENCE,
  freshToken,
  ISSUER,
  idToken,
  issueNonce,
  nonceHash,
  PROVIDER,
  ProviderSink,
  providerSignIn,
  SIGN_IN_REFUSED,
  shape,
} from '../providers/support.js';

let t: TestApp;
let sink: ProviderSink;
// A second provider configured with an inline key set (no fetch at all).
let inlineKey: Awaited<ReturnType<typeof generateKeyPair>>;

beforeAll(async () => {
  sink = await ProviderSink.start();
  inlineKey = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(inlineKey.publicKey)), kid: 'inline-1', alg: 'ES256' };
  t = await createTestApp({
    env: sink.env([
      { name: 'inline', issuer: 'https://inline.example.test', audience: 'svc', jwks: { keys: [jwk] } },
    ]),
  });
});

afterAll(async () => {
  await t.close();
  await sink.close();
});

async function contextOf(accessToken: string) {
  const res = await t.app.inject({
    method: 'GET',
    url: '/api/v1/session/context',
    headers: bearer(accessToken),
  });
  expect(res.statusCode).toBe(200);
  return res.json().data as { identityId: string; methods: string[]; identifiers: unknown[] };
}

async function identitiesLinkedTo(subject: string): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM provider_links WHERE provider = ${PROVIDER} AND subject = ${subject}`.execute(
    t.ctx.database.db,
  );
  return r.rows[0].n;
}

describe('POST /provider-nonces', () => {
  it('issues a nonce shown once, expiring in ten minutes, and stores only its SHA-256', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/provider-nonces' });
    expect(res.statusCode).toBe(201);
    const { data } = res.json();
    expect(Object.keys(data).sort()).toEqual(['expiresAt', 'nonce']);
    expect(data.nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(data.expiresAt).toBe(new Date(t.clock.now().getTime() + 600_000).toISOString());
    const rows = await sql<{ hash: string }>`SELECT hash FROM provider_nonces`.execute(t.ctx.database.db);
    const hashes = rows.rows.map((r) => r.hash);
    expect(hashes).toContain(nonceHash(data.nonce));
    expect(hashes).not.toContain(data.nonce);
    const again = await issueNonce(t.app);
    expect(again.nonce).not.toBe(data.nonce);
  });

  it('clears out expired nonces as new ones are issued', async () => {
    const { nonce } = await issueNonce(t.app);
    t.clock.advance(601);
    await issueNonce(t.app);
    const rows = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM provider_nonces WHERE hash = ${nonceHash(nonce)}`.execute(
      t.ctx.database.db,
    );
    expect(rows.rows[0].n).toBe(0);
    const live = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM provider_nonces WHERE expires_at > ${t.clock.now()}`.execute(
      t.ctx.database.db,
    );
    expect(live.rows[0].n).toBe(1);
  });
});

describe('POST /sign-ins, provider path', () => {
  it('opens a session for a new subject, then signs the same identity in again with a new token', async () => {
    const sub = `sub-${randomBytes(4).toString('hex')}`;
    const first = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }));
    expect(first.statusCode).toBe(201);
    const grant = first.json().data;
    expect(grant.kind).toBe('session');
    const ctx1 = await contextOf(grant.accessToken);
    expect(ctx1.methods).toEqual(['provider']);
    expect(ctx1.identifiers).toEqual([]);

    const second = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, { sub }));
    expect(second.statusCode).toBe(201);
    const ctx2 = await contextOf(second.json().data.accessToken);
    expect(ctx2.identityId).toBe(ctx1.identityId);
    expect(await identitiesLinkedTo(sub)).toBe(1);

    const history = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-ins/history',
      headers: bearer(grant.accessToken),
    });
    expect(history.json().data.map((e: { method: string }) => e.method)).toEqual(['provider', 'provider']);
  });

  it('accepts a provider configured with an inline key set', async () => {
    const { nonce } = await issueNonce(t.app);
    const now = Math.floor(t.clock.now().getTime() / 1000);
    const token = await new SignJWT({ nonce: nonceHash(nonce) })
      .setProtectedHeader({ alg: 'ES256', kid: 'inline-1' })
      .setIssuer('https://inline.example.test')
      .setAudience('svc')
      .setSubject('inline-subject')
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(inlineKey.privateKey);
    const res = await providerSignIn(t.app, token, 'inline');
    expect(res.statusCode).toBe(201);
    // The same token for the other provider is refused: the issuer and keys are per provider.
    const { nonce: n2 } = await issueNonce(t.app);
    const other = await new SignJWT({ nonce: nonceHash(n2) })
      .setProtectedHeader({ alg: 'ES256', kid: 'inline-1' })
      .setIssuer('https://inline.example.test')
      .setAudience('svc')
      .setSubject('inline-subject')
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(inlineKey.privateKey);
    expect((await providerSignIn(t.app, other, PROVIDER)).json()).toEqual(SIGN_IN_REFUSED);
  });

  it('refuses every cause with the identical 401, never echoing the token', async () => {
    const clock = t.clock;
    const cases: Record<string, () => Promise<{ token: string; provider?: string }>> = {
      'unknown provider': async () => ({ token: await freshToken(t.app, sink, clock), provider: 'nobody' }),
      'bad signature (forged with the published kid)': async () => ({
        token: await freshToken(t.app, sink, clock, { key: await ProviderSink.foreignKey(sink.current.kid) }),
      }),
      'key the provider never published': async () => ({
        token: await freshToken(t.app, sink, clock, { key: await ProviderSink.foreignKey() }),
      }),
      'wrong issuer': async () => ({
        token: await freshToken(t.app, sink, clock, { iss: `${ISSUER}/other` }),
      }),
      'wrong audience': async () => ({
        token: await freshToken(t.app, sink, clock, { aud: `${AUDIENCE}-x` }),
      }),
      'expired token': async () => ({
        token: await freshToken(t.app, sink, clock, { iatOffset: -600, expOffset: -60 }),
      }),
      'missing nonce claim': async () => ({ token: await idToken(sink, clock, { nonce: null }) }),
      'unissued nonce': async () => ({
        token: await idToken(sink, clock, { nonce: nonceHash(randomBytes(32).toString('base64url')) }),
      }),
      'raw nonce instead of its hash': async () => {
        const { nonce } = await issueNonce(t.app);
        return { token: await idToken(sink, clock, { nonce }) };
      },
      'hash in upper case (not byte for byte)': async () => {
        const { nonce } = await issueNonce(t.app);
        return { token: await idToken(sink, clock, { nonce: nonceHash(nonce).toUpperCase() }) };
      },
      'HMAC token (algorithm confusion)': async () => {
        const { nonce } = await issueNonce(t.app);
        const now = Math.floor(clock.now().getTime() / 1000);
        const token = await new SignJWT({ nonce: nonceHash(nonce) })
          .setProtectedHeader({ alg: 'HS256', kid: sink.current.kid })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setSubject('hs')
          .setIssuedAt(now)
          .setExpirationTime(now + 60)
          .sign(new TextEncoder().encode('a shared secret of thirty-two bytes!'));
        return { token };
      },
      'not a JWT': async () => ({ token: 'not-a-token' }),
    };
    const seen = new Set<string>();
    for (const [cause, make] of Object.entries(cases)) {
      const { token, provider } = await make();
      const res = await providerSignIn(t.app, token, provider);
      expect(res.statusCode, cause).toBe(401);
      expect(res.json(), cause).toEqual(SIGN_IN_REFUSED);
      expect(res.body, cause).not.toContain(token);
      seen.add(JSON.stringify(shape(res)));
    }
    expect(seen.size).toBe(1);
    expect(t.logs()).not.toContain('not-a-token');
  });

  it('takes a token for several audiences only when it was issued to us (azp)', async () => {
    const other = 'another-client';
    // Issued to another client that merely lists us: the identical 401.
    for (const opts of [{ aud: [AUDIENCE, other] }, { aud: [AUDIENCE, other], azp: other }, { azp: other }]) {
      const res = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, opts));
      expect({ status: res.statusCode, body: res.json() }, JSON.stringify(opts)).toEqual({
        status: 401,
        body: SIGN_IN_REFUSED,
      });
    }
    // Several audiences with azp naming us, and a single audience with a matching azp, are ours.
    for (const opts of [{ aud: [AUDIENCE, other], azp: AUDIENCE }, { azp: AUDIENCE }]) {
      const res = await providerSignIn(t.app, await freshToken(t.app, sink, t.clock, opts));
      expect(res.statusCode, JSON.stringify(opts)).toBe(201);
    }
  });

  it('refuses an expired, a spent and a replayed nonce identically', async () => {
    const baseline = shape(await providerSignIn(t.app, 'x.y.z'));

    const { nonce: stale } = await issueNonce(t.app);
    t.clock.advance(601);
    // The token itself is fresh: only the nonce has expired.
    const expired = await providerSignIn(t.app, await idToken(sink, t.clock, { nonce: nonceHash(stale) }));
    expect(shape(expired)).toEqual(baseline);

    const { nonce } = await issueNonce(t.app);
    const token = await idToken(sink, t.clock, { nonce: nonceHash(nonce), sub: 'replayed' });
    expect((await providerSignIn(t.app, token)).statusCode).toBe(201);
    // The exact same token again, and a new token carrying the spent nonce.
    expect(shape(await providerSignIn(t.app, token))).toEqual(baseline);
    const again = await idToken(sink, t.clock, { nonce: nonceHash(nonce), sub: 'replayed' });
    expect(shape(await providerSignIn(t.app, again))).toEqual(baseline);
  });

  it('answers 400 for a provider body mixed with password fields', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: {
        identifierType: 'provider',
        provider: PROVIDER,
        idToken: 'a.b.c',
        password: 'secret-secret',
      },
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toContain('secret-secret');
  });
});

describe('provider key rotation', () => {
  it('fetches the key set once, refetches once for a new kid after the cooldown, never per request', async () => {
    const rotation = await ProviderSink.start();
    const app = await createTestApp({ env: rotation.env() });
    try {
      for (let i = 0; i < 3; i++) {
        expect(
          (await providerSignIn(app.app, await freshToken(app.app, rotation, app.clock))).statusCode,
        ).toBe(201);
      }
      expect(rotation.requests).toBe(1);

      await rotation.rotate();
      // Within the cooldown an unknown kid does not send us back to the provider.
      expect((await providerSignIn(app.app, await freshToken(app.app, rotation, app.clock))).statusCode).toBe(
        401,
      );
      expect(rotation.requests).toBe(1);

      app.clock.advance(31);
      for (let i = 0; i < 3; i++) {
        expect(
          (await providerSignIn(app.app, await freshToken(app.app, rotation, app.clock))).statusCode,
        ).toBe(201);
      }
      expect(rotation.requests).toBe(2);

      // Random kids: at most one refetch per cooldown.
      for (let i = 0; i < 3; i++) {
        const forged = await freshToken(app.app, rotation, app.clock, {
          key: await ProviderSink.foreignKey(),
        });
        expect((await providerSignIn(app.app, forged)).json()).toEqual(SIGN_IN_REFUSED);
      }
      expect(rotation.requests).toBe(2);
      app.clock.advance(31);
      const forged = await freshToken(app.app, rotation, app.clock, { key: await ProviderSink.foreignKey() });
      expect((await providerSignIn(app.app, forged)).json()).toEqual(SIGN_IN_REFUSED);
      expect(rotation.requests).toBe(3);
    } finally {
      await app.close();
      await rotation.close();
    }
  });
});
