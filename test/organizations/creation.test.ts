import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createTestApp, type TestApp, testEnv } from '../helpers/app.js';
import { call, expectProblem, member, ORGS, uniqueSlug } from './support.js';

// ORGANIZATION_CREATION=operators, and ORGANIZATION_ROLES' refusals at start-up.
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ env: { ORGANIZATION_CREATION: 'operators' } });
});
afterAll(async () => {
  await t?.close();
});

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(testEnv(env));
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  return 'accepted';
}

describe('organization settings', () => {
  it('ORGANIZATION_CREATION=operators: the session route answers 403 organization.creation_disabled', async () => {
    const me = await member(t);
    expectProblem(
      await call(t.app, 'POST', ORGS, me.token, { name: 'Acme', slug: uniqueSlug() }),
      403,
      'organization.creation_disabled',
    );
  });

  it('an invalid ORGANIZATION_ROLES stops start-up with one line naming the variable', () => {
    const roles = (v: unknown) => ({ ORGANIZATION_ROLES: JSON.stringify(v) });
    expect(refusal({ ORGANIZATION_ROLES: '{' })).toBe(
      'invalid configuration: ORGANIZATION_ROLES must be a JSON array of role objects',
    );
    expect(refusal(roles([{ name: 'owner', permissions: [] }]))).toBe(
      'invalid configuration: ORGANIZATION_ROLES entry "owner" repeats a built-in role name',
    );
    expect(refusal(roles([{ name: 'B', permissions: [] }]))).toMatch(
      /^invalid configuration: ORGANIZATION_ROLES entry "B" needs a name/,
    );
    expect(refusal(roles([{ name: 'billing', permissions: ['Bad Permission'] }]))).toMatch(
      /^invalid configuration: ORGANIZATION_ROLES entry "billing" has a permission/,
    );
    expect(refusal(roles([{ name: 'billing', permissions: 'billing:read' }]))).toMatch(/needs permissions/);
    expect(refusal(roles([{ name: 'billing', permissions: [], colour: 'red' }]))).toMatch(/unknown member/);
    for (const displayName of ['', ' ', 'x'.repeat(51), 'a\u0007b', { de: 'Abrechnung' }, {}, ['Billing'], 3])
      expect(refusal(roles([{ name: 'billing', permissions: [], displayName }]))).toMatch(
        /^invalid configuration: ORGANIZATION_ROLES entry "billing" needs a displayName/,
      );
    expect(refusal(roles([{ name: 'billing', permissions: [], displayName: 'Billing' }]))).toBe('accepted');
    expect(
      loadConfig(testEnv(roles([{ name: 'billing', permissions: [], displayName: { fr: ' Facturation ' } }])))
        .organizations.roles[0].displayName,
    ).toEqual({ fr: 'Facturation' });
    expect(
      refusal(
        roles([
          { name: 'billing', permissions: [] },
          { name: 'billing', permissions: ['x'] },
        ]),
      ),
    ).toBe('invalid configuration: ORGANIZATION_ROLES entry "billing" repeats a name');
    expect(refusal({ ORGANIZATION_CREATION: 'everyone' })).toBe(
      'invalid configuration: ORGANIZATION_CREATION must be one of anyone, operators',
    );
    const ok = loadConfig(
      testEnv(roles([{ name: 'billing', permissions: ['billing:read', 'billing:write'] }])),
    );
    expect(ok.organizations).toEqual({
      creation: 'anyone',
      roles: [{ name: 'billing', permissions: ['billing:read', 'billing:write'], displayName: {} }],
      invitationTtl: 604800,
      dnsResolvers: [],
      dnsTimeoutMs: 3000,
      ssoClockSkew: 60,
      ssoMetadataTimeoutMs: 5000,
    });
    // DNS_RESOLVERS: ip, ipv4:port or [ipv6]:port, comma-separated; anything else stops start-up.
    expect(
      loadConfig(testEnv({ DNS_RESOLVERS: '127.0.0.1:5353, ::1,[::1]:53,9.9.9.9' })).organizations
        .dnsResolvers,
    ).toEqual(['127.0.0.1:5353', '::1', '[::1]:53', '9.9.9.9']);
    for (const bad of [
      'dns.example',
      '127.0.0.1:0',
      '127.0.0.1:70000',
      '[127.0.0.1]:53',
      '1.2.3.4,',
      '300.1.1.1',
    ])
      expect(refusal({ DNS_RESOLVERS: bad }), bad).toBe(
        'invalid configuration: DNS_RESOLVERS must be a comma-separated list of ip, ipv4:port or [ipv6]:port',
      );
    expect(
      loadConfig(testEnv({ ORGANIZATION_INVITATION_TTL_SECONDS: '86400' })).organizations.invitationTtl,
    ).toBe(86400);
    expect(refusal({ ORGANIZATION_INVITATION_TTL_SECONDS: '60' })).toMatch(
      /^invalid configuration: ORGANIZATION_INVITATION_TTL_SECONDS /,
    );
  });
});
