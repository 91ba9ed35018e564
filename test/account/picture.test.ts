import { randomBytes, randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import {
  browse,
  FIRST_PARTY,
  hostedSignIn,
  type OidcFixture,
  oidcFixture,
  rpConfig,
  startAuthorization,
} from '../helpers/oidc.js';

/*
 * Issue 46, item 3: the identity's picture (migration 0030). PUT /account/picture decodes the
 * upload by its content (a declared type is not trusted), refuses what is not an image or too
 * large a canvas (422) or too many bytes (413), and keeps a 256×256 WebP without metadata under a
 * new address each time; GET /pictures/{id} serves it publicly as immutable, with nosniff and a
 * CSP; DELETE and erasure remove it; every view and the `profile` scope's `picture` claim name it.
 */

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ admin: true });
});
afterAll(async () => {
  await t?.close();
});

const address = () => `picture-${randomBytes(5).toString('hex')}@example.com`;

/** An image made here: `width`×`height`, a colour gradient so the encoders have work to do. */
function image(format: 'png' | 'jpeg' | 'webp' | 'gif', width = 640, height = 480) {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    raw[i * 3] = i % 256;
    raw[i * 3 + 1] = (i >> 8) % 256;
    raw[i * 3 + 2] = 128;
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .toFormat(format)
    .toBuffer();
}

async function person() {
  const p = await createPerson(t.ctx, address());
  const grant = await signIn(t.app, p);
  const put = (body: Buffer | string, type = 'image/png') =>
    t.app.inject({
      method: 'PUT',
      url: '/api/v1/account/picture',
      headers: { ...bearer(grant.accessToken), 'content-type': type },
      payload: body,
    });
  const remove = () =>
    t.app.inject({ method: 'DELETE', url: '/api/v1/account/picture', headers: bearer(grant.accessToken) });
  const account = async () =>
    (await t.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(grant.accessToken) })).json()
      .data;
  const rows = () =>
    t.ctx.database.db
      .selectFrom('identity_pictures')
      .selectAll()
      .where('identity_id', '=', p.identityId)
      .execute();
  const updates = async () =>
    (
      await t.ctx.database.db
        .selectFrom('events')
        .select('id')
        .where('identity_id', '=', p.identityId)
        .where('type', '=', 'identity.updated')
        .execute()
    ).length;
  return { ...p, grant, put, remove, account, rows, updates };
}

/** The path of a picture's absolute address. */
const pathOf = (url: string) => new URL(url).pathname;
const serve = (url: string) => t.app.inject({ method: 'GET', url: pathOf(url) });

describe('PUT /account/picture', () => {
  it.each([
    ['a PNG', 'png', 'image/png'],
    ['a JPEG', 'jpeg', 'image/jpeg'],
    ['a WebP', 'webp', 'image/webp'],
    ['a GIF', 'gif', 'image/gif'],
    // Judged by content: a JPEG declared as PNG is a JPEG, and is kept.
    ['a JPEG declared as PNG', 'jpeg', 'image/png'],
  ] as const)('keeps %s as a 256×256 WebP, audited and told once', async (_, format, type) => {
    const p = await person();
    const res = await p.put(await image(format), type);
    expect(res.statusCode, res.body).toBe(200);
    const url = res.json().data.picture as string;
    expect(url).toMatch(/^http:\/\/[^/]+\/api\/v1\/pictures\/[0-9a-f-]{36}$/);
    expect(url.startsWith(t.ctx.config.publicOrigin)).toBe(true);
    expect((await p.account()).picture).toBe(url);

    const [row] = await p.rows();
    expect(row.content_type).toBe('image/webp');
    const meta = await sharp(Buffer.from(row.bytes)).metadata();
    expect(meta).toMatchObject({ format: 'webp', width: 256, height: 256 });
    expect(await auditCount(t, 'identity.profile.changed', p.identityId)).toBe(1);
    const audit = await t.ctx.database.db
      .selectFrom('audit_records')
      .select('details')
      .where('name', '=', 'identity.profile.changed')
      .where('target', '=', p.identityId)
      .executeTakeFirstOrThrow();
    expect(audit.details).toMatchObject({ fields: 'picture' });
    expect(await p.updates()).toBe(1);
  });

  it('turns the picture upright by its EXIF orientation and strips every metadata', async () => {
    const p = await person();
    // 400×200 landscape pixels marked "rotate 90°" (orientation 6), with EXIF that says where.
    const tagged = await sharp(await image('jpeg', 400, 200))
      .withMetadata({ orientation: 6 })
      .withExif({ IFD0: { Copyright: 'secret-owner', ImageDescription: 'home-address' } })
      .jpeg()
      .toBuffer();
    const before = await sharp(tagged).metadata();
    expect(before.exif).toBeDefined();
    expect(before.orientation).toBe(6);
    expect(tagged.includes('secret-owner')).toBe(true);

    const res = await p.put(tagged, 'image/jpeg');
    expect(res.statusCode, res.body).toBe(200);
    const served = await serve(res.json().data.picture);
    expect(served.statusCode).toBe(200);
    const bytes = served.rawPayload;
    const meta = await sharp(bytes).metadata();
    expect(meta.format).toBe('webp');
    expect(meta.exif).toBeUndefined();
    expect(meta.xmp).toBeUndefined();
    expect(meta.icc).toBeUndefined();
    expect(meta.orientation).toBeUndefined();
    expect(bytes.includes('secret-owner')).toBe(false);
    expect(bytes.includes('home-address')).toBe(false);
    expect(bytes.includes('Exif')).toBe(false);
  });

  it.each([
    ['a text file declared as PNG', Buffer.from('hello, I am not a picture\n'.repeat(20)), 'image/png'],
    ['HTML declared as GIF', Buffer.from('<html><script>alert(1)</script></html>'), 'image/gif'],
    [
      'an SVG declared as PNG (decodable, but never a picture here)',
      Buffer.from(
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>',
      ),
      'image/png',
    ],
    ['a truncated PNG', Buffer.from('\x89PNG\r\n\x1a\n\0\0\0\rIHDR', 'latin1'), 'image/png'],
    ['no bytes at all', Buffer.alloc(0), 'image/png'],
  ])('refuses %s: 422 identity.picture_unusable, nothing kept', async (_, body, type) => {
    const p = await person();
    const res = await p.put(body, type);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().code).toBe('identity.picture_unusable');
    expect(await p.rows()).toEqual([]);
    expect(await auditCount(t, 'identity.profile.changed', p.identityId)).toBe(0);
    expect(await p.updates()).toBe(0);
  });

  it('refuses a TIFF (sharp decodes it, the service does not take it)', async () => {
    const p = await person();
    const tiff = await sharp(await image('png', 20, 20))
      .tiff()
      .toBuffer();
    const res = await p.put(tiff, 'image/png');
    expect(res.statusCode).toBe(422);
    expect(await p.rows()).toEqual([]);
  });

  it('refuses a huge canvas in a small file (a decompression bomb): 422', async () => {
    const p = await person();
    // 10000×10000 of one colour compresses to little, and is 100 megapixels once decoded.
    const bomb = await sharp({
      create: { width: 10000, height: 10000, channels: 3, background: { r: 0, g: 0, b: 0 } },
    })
      .png({ compressionLevel: 9 })
      .toBuffer();
    expect(bomb.length).toBeLessThan(5 * 1024 * 1024);
    const res = await p.put(bomb, 'image/png');
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().code).toBe('identity.picture_unusable');
    expect(await p.rows()).toEqual([]);
  });

  it('refuses more than 5 MB with 413 before decoding, and another media type with 415', async () => {
    const p = await person();
    const big = Buffer.concat([await image('png', 8, 8), randomBytes(5 * 1024 * 1024)]);
    const res = await p.put(big, 'image/png');
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe('request.body_too_large');
    const svg = await p.put(Buffer.from('<svg/>'), 'image/svg+xml');
    expect(svg.statusCode).toBe(415);
    const json = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/account/picture',
      headers: bearer(p.grant.accessToken),
      payload: { picture: 'x' },
    });
    expect(json.statusCode).toBe(415);
    expect(await p.rows()).toEqual([]);
  });

  it('answers 401 without a session', async () => {
    const res = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/account/picture',
      headers: { 'content-type': 'image/png' },
      payload: await image('png', 8, 8),
    });
    expect(res.statusCode).toBe(401);
    expect((await t.app.inject({ method: 'DELETE', url: '/api/v1/account/picture' })).statusCode).toBe(401);
  });
});

describe('GET /pictures/{pictureId}', () => {
  it('serves the picture publicly, immutable, nosniff, under a CSP', async () => {
    const p = await person();
    const url = (await p.put(await image('png'))).json().data.picture;
    const res = await serve(url);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/webp');
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect((await sharp(res.rawPayload).metadata()).width).toBe(256);
  });

  it('an unknown picture is 404 Problem, not cached; a malformed id 400', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/pictures/${randomUUID()}` });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('identity.picture_not_found');
    expect(res.headers['cache-control']).toBe('no-store');
    const bad = await t.app.inject({ method: 'GET', url: '/api/v1/pictures/nope' });
    expect(bad.statusCode).toBe(400);
  });

  it('a new upload changes the address and the old one stops answering', async () => {
    const p = await person();
    const first = (await p.put(await image('png'))).json().data.picture;
    const second = (await p.put(await image('jpeg'), 'image/jpeg')).json().data.picture;
    expect(second).not.toBe(first);
    expect((await serve(first)).statusCode).toBe(404);
    expect((await serve(second)).statusCode).toBe(200);
    expect(await p.rows()).toHaveLength(1);
    expect(await p.updates()).toBe(2);
  });
});

describe('DELETE /account/picture and erasure', () => {
  it('removes the picture (its address 404s); without one nothing is written', async () => {
    const p = await person();
    const url = (await p.put(await image('png'))).json().data.picture;
    const res = await p.remove();
    expect(res.statusCode).toBe(204);
    expect((await serve(url)).statusCode).toBe(404);
    expect((await p.account()).picture).toBeNull();
    expect(await p.rows()).toEqual([]);
    expect(await auditCount(t, 'identity.profile.changed', p.identityId)).toBe(2);
    expect(await p.updates()).toBe(2);
    // Again: nothing to remove, nothing audited or told.
    expect((await p.remove()).statusCode).toBe(204);
    expect(await auditCount(t, 'identity.profile.changed', p.identityId)).toBe(2);
    expect(await p.updates()).toBe(2);
  });

  it('the export and the admin detail name it; erasure deletes it', async () => {
    const p = await person();
    const url = (await p.put(await image('png'))).json().data.picture;
    const exported = await t.app.inject({
      method: 'GET',
      url: '/api/v1/account/export',
      headers: bearer(p.grant.accessToken),
    });
    expect(exported.json().data.identity.picture).toBe(url);
    const detail = await adminRequest(t.admin!, 'GET', `/identities/${p.identityId}`);
    expect(detail.json().data.picture).toBe(url);

    expect((await adminRequest(t.admin!, 'POST', `/identities/${p.identityId}/erasures`)).statusCode).toBe(
      204,
    );
    expect(await p.rows()).toEqual([]);
    expect((await serve(url)).statusCode).toBe(404);
    expect(
      (await adminRequest(t.admin!, 'GET', `/identities/${p.identityId}`)).json().data.picture,
    ).toBeNull();
  });
});

describe('OpenID Provider: the picture claim', () => {
  let f: OidcFixture;
  beforeAll(async () => {
    f = await oidcFixture();
  });
  afterAll(async () => {
    await f?.close();
  });

  it('userinfo answers `picture` (absolute, on PUBLIC_ORIGIN) with the profile scope, as it is now', async () => {
    const { person: who, jar } = await hostedSignIn(f);
    const config = await rpConfig(f, FIRST_PARTY);
    const auth = await startAuthorization(f, config, { scope: 'openid profile' });
    const landed = await browse(f, auth.url.href, jar);
    const tokens = await client.authorizationCodeGrant(config, landed.callback as URL, {
      pkceCodeVerifier: auth.verifier,
      expectedState: auth.state,
      expectedNonce: auth.nonce,
    });
    const userinfo = () => client.fetchUserInfo(config, tokens.access_token, who.identityId);
    expect(await userinfo()).not.toHaveProperty('picture');

    const api = await signIn(f.t.app, who);
    const put = await f.t.app.inject({
      method: 'PUT',
      url: '/api/v1/account/picture',
      headers: { ...bearer(api.accessToken), 'content-type': 'image/png' },
      payload: await image('png', 32, 32),
    });
    expect(put.statusCode, put.body).toBe(200);
    const url = put.json().data.picture as string;
    expect(url.startsWith(`${f.t.ctx.config.publicOrigin}/api/v1/pictures/`)).toBe(true);
    expect((await userinfo()).picture).toBe(url);

    await f.t.app.inject({
      method: 'DELETE',
      url: '/api/v1/account/picture',
      headers: bearer(api.accessToken),
    });
    expect(await userinfo()).not.toHaveProperty('picture');
  });
});

describe('picture uploads are rate limited', () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await createTestApp({ env: { RATE_LIMIT_PICTURE_UPLOADS: '2/3600' } });
  });
  afterAll(async () => {
    await limited?.close();
  });

  it('refuses the upload past RATE_LIMIT_PICTURE_UPLOADS with 429 before decoding, keeping the picture it has', async () => {
    const p = await createPerson(limited.ctx, address());
    const grant = await signIn(limited.app, p);
    const put = async () =>
      limited.app.inject({
        method: 'PUT',
        url: '/api/v1/account/picture',
        headers: { ...bearer(grant.accessToken), 'content-type': 'image/png' },
        payload: await image('png', 64, 64),
      });
    expect((await put()).statusCode).toBe(200);
    const second = await put();
    expect(second.statusCode).toBe(200);
    const kept = second.json().data.picture;
    const refused = await put();
    expect(refused.statusCode).toBe(429);
    expect(refused.json().code).toBe('rate_limit.exceeded');
    expect(refused.headers['retry-after']).toBeDefined();
    const account = await limited.app.inject({
      method: 'GET',
      url: '/api/v1/account',
      headers: bearer(grant.accessToken),
    });
    expect(account.json().data.picture).toBe(kept);
  });
});
