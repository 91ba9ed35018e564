import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcService } from '../../src/features/oidc/service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

describe('OpenID Provider signing keys', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const load = () =>
    OidcService.load({
      ...t.ctx,
      hostedCookie: { refreshToken: () => undefined, clearing: '' },
      signOut: async () => {},
      liveSessionOf: async () => undefined,
      customClaims: async () => ({}),
      sso: {
        route: async () => undefined,
        enabledConnectionOrganization: async () => undefined,
        start: async () => {
          throw new Error('no SSO here');
        },
      },
    });

  it('are sealed in the database, kept across starts, rotated with the old ones published until their tokens expire', async () => {
    const first = await load();
    const again = await load();
    const kids = (s: OidcService) => s.publicKeys().map((k) => k.kid);
    expect(kids(again).sort()).toEqual(kids(first).sort());
    expect(
      first
        .publicKeys()
        .map((k) => k.alg)
        .sort(),
    ).toEqual(['EdDSA', 'RS256']);
    const stored = await t.ctx.database.db
      .selectFrom('oidc_signing_keys')
      .select('sealed_private_jwk')
      .execute();
    for (const row of stored) expect(row.sealed_private_jwk.startsWith('v1.')).toBe(true);

    t.clock.advance(1);
    const fresh = await OidcService.rotateKeys(t.ctx);
    const rotated = await load();
    // Newest first: the new keys sign, the old ones still verify.
    expect(kids(rotated).slice(0, 2).sort()).toEqual([...fresh].sort());
    expect(kids(rotated)).toEqual(expect.arrayContaining(kids(first)));

    t.clock.advance(t.config.oidc.idTokenTtl + 1);
    await rotated.sweep();
    const later = await load();
    expect(kids(later).sort()).toEqual([...fresh].sort());
  });
});
