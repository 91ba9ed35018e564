import { absoluteUrl, checkedEntries, formatted, section } from '../../config/schema.js';

export type ProviderPreset = 'google' | 'microsoft' | 'apple' | 'github';
const PRESETS: Record<ProviderPreset, { displayName: string; issuer?: string; scopes: string }> = {
  google: { displayName: 'Google', issuer: 'https://accounts.google.com', scopes: 'openid email profile' },
  microsoft: {
    displayName: 'Microsoft',
    issuer: 'https://login.microsoftonline.com/common/v2.0',
    scopes: 'openid email profile',
  },
  apple: { displayName: 'Apple', issuer: 'https://appleid.apple.com', scopes: 'openid email name' },
  github: { displayName: 'GitHub', scopes: 'read:user user:email' },
};

/** One upstream identity provider, as checkIdentityProvider reads it (docs/providers.md). */
export interface IdentityProviderConfig {
  name: string;
  displayName: string;
  preset?: ProviderPreset;
  /** Absent only for GitHub (OAuth 2 without an issuer). */
  issuer?: string;
  /** The ID-token path (POST /sign-ins with an ID token): present with `jwksUri` or `jwks`. */
  audience?: string;
  jwksUri?: string;
  jwks?: { keys: Record<string, unknown>[] };
  /** Redirect sign-in ("Continue with …"): present when `clientId` is set. */
  redirect?: {
    clientId: string;
    /** Absent for Apple, whose client secret is minted from `apple`. */
    clientSecret?: string;
    apple?: { teamId: string; keyId: string; privateKey: string };
    scopes: string;
    responseMode: 'query' | 'form_post';
    autoLink: 'off' | 'verified_email';
    signUp: boolean;
    /** Microsoft only: the tenant ids (`tid`) allowed; absent allows every tenant. */
    tenants?: string[];
  };
}

const PROVIDER_KEYS = new Set([
  'name',
  'displayName',
  'preset',
  'issuer',
  'audience',
  'jwksUri',
  'jwks',
  'clientId',
  'clientSecret',
  'scopes',
  'autoLink',
  'signUp',
  'tenants',
  'teamId',
  'keyId',
  'privateKey',
]);
const PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** Checks one IDENTITY_PROVIDERS entry; answers the provider or the reason it is refused. */
export function checkIdentityProvider(entry: unknown, production: boolean): IdentityProviderConfig | string {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return 'is not an object';
  const m = entry as Record<string, unknown>;
  for (const key of Object.keys(m)) if (!PROVIDER_KEYS.has(key)) return `has an unknown field "${key}"`;
  if (typeof m.name !== 'string' || !PROVIDER_NAME.test(m.name)) {
    return 'needs a name of lower-case letters, digits, "_" or "-" (at most 63, starting with a letter or digit)';
  }
  const text = (key: string, max = 2048): string | undefined | null => {
    const v = m[key];
    if (v === undefined) return undefined;
    return typeof v === 'string' && v.length > 0 && v.length <= max ? v : null;
  };
  for (const key of ['displayName', 'issuer', 'audience', 'clientId', 'clientSecret', 'scopes']) {
    if (text(key) === null) return `${key} must be non-empty text`;
  }
  const presetName = m.preset as ProviderPreset | undefined;
  if (presetName !== undefined && !Object.hasOwn(PRESETS, presetName as string)) {
    return `preset must be one of ${Object.keys(PRESETS).join(', ')}`;
  }
  if (m.clientId === undefined) {
    const redirectOnly = [
      'clientSecret',
      'scopes',
      'autoLink',
      'signUp',
      'tenants',
      'teamId',
      'keyId',
      'privateKey',
    ];
    for (const key of redirectOnly) {
      if (m[key] !== undefined) return `${key} needs a clientId (redirect sign-in)`;
    }
    if (presetName !== undefined) return 'has a preset, which needs a clientId (redirect sign-in)';
  }
  const preset = presetName ? PRESETS[presetName] : undefined;
  const issuer = (m.issuer as string | undefined) ?? preset?.issuer;
  if (presetName === 'github') {
    if (m.issuer !== undefined) return 'is a GitHub provider, which has no issuer';
  } else {
    if (issuer === undefined) return 'needs an issuer';
    if (!absoluteUrl(issuer, production ? ['https:'] : ['https:', 'http:'])) {
      return production ? 'issuer must be an https URL' : 'issuer must be an http(s) URL';
    }
  }
  if (m.jwksUri !== undefined && m.jwks !== undefined) return 'has both jwksUri and jwks';
  if (
    m.jwksUri !== undefined &&
    (typeof m.jwksUri !== 'string' || !absoluteUrl(m.jwksUri, production ? ['https:'] : ['https:', 'http:']))
  ) {
    return 'jwksUri must be an absolute http(s) URL (https in production)';
  }
  if (
    m.jwks !== undefined &&
    (typeof m.jwks !== 'object' ||
      m.jwks === null ||
      !Array.isArray((m.jwks as { keys?: unknown }).keys) ||
      (m.jwks as { keys: unknown[] }).keys.some((k) => typeof k !== 'object' || k === null))
  ) {
    return 'jwks must be a JSON Web Key Set { "keys": [...] }';
  }
  const clientId = m.clientId as string | undefined;
  const idTokenPath = m.jwksUri !== undefined || m.jwks !== undefined;
  const audience = (m.audience as string | undefined) ?? clientId;
  if (idTokenPath && audience === undefined) return 'needs an audience (or a clientId) for ID-token sign-in';
  if (idTokenPath && presetName === 'github') return 'is a GitHub provider, which issues no ID tokens';
  if (!idTokenPath && clientId === undefined) {
    return 'needs jwksUri or jwks (ID-token sign-in) or clientId (redirect sign-in)';
  }
  let redirect: IdentityProviderConfig['redirect'];
  if (clientId !== undefined) {
    const scopes = (m.scopes as string | undefined) ?? preset?.scopes ?? 'openid email profile';
    const scopeList = scopes.split(' ');
    if (scopeList.some((s) => !SCOPE_TOKEN.test(s)))
      return 'scopes must be scope names separated by single spaces';
    if (presetName !== 'github' && !scopeList.includes('openid')) return 'scopes must include openid';
    const autoLink = m.autoLink ?? 'off';
    if (autoLink !== 'off' && autoLink !== 'verified_email')
      return 'autoLink must be "off" or "verified_email"';
    if (m.signUp !== undefined && typeof m.signUp !== 'boolean') return 'signUp must be true or false';
    let tenants: string[] | undefined;
    if (m.tenants !== undefined) {
      if (presetName !== 'microsoft') return 'tenants applies to the microsoft preset only';
      if (
        !Array.isArray(m.tenants) ||
        m.tenants.length === 0 ||
        m.tenants.some((t) => typeof t !== 'string' || !/^[0-9a-f-]{36}$/i.test(t))
      ) {
        return 'tenants must be a non-empty array of tenant ids (GUIDs)';
      }
      tenants = (m.tenants as string[]).map((t) => t.toLowerCase());
    }
    let apple: { teamId: string; keyId: string; privateKey: string } | undefined;
    const appleFields = ['teamId', 'keyId', 'privateKey'].filter((k) => m[k] !== undefined);
    if (presetName === 'apple') {
      if (m.clientSecret !== undefined) {
        return 'is an Apple provider: give teamId, keyId and privateKey instead of clientSecret';
      }
      if (appleFields.length !== 3) return 'is an Apple provider and needs teamId, keyId and privateKey';
      if (text('teamId', 64) === null || text('keyId', 64) === null) return 'teamId and keyId must be text';
      const key = m.privateKey;
      if (typeof key !== 'string' || !key.includes('-----BEGIN PRIVATE KEY-----')) {
        return 'privateKey must be the PEM text of the .p8 key';
      }
      apple = { teamId: m.teamId as string, keyId: m.keyId as string, privateKey: key };
    } else {
      if (appleFields.length > 0) return 'teamId, keyId and privateKey apply to the apple preset only';
      if (m.clientSecret === undefined) return 'needs a clientSecret for redirect sign-in';
    }
    redirect = {
      clientId,
      ...(m.clientSecret !== undefined ? { clientSecret: m.clientSecret as string } : {}),
      ...(apple ? { apple } : {}),
      scopes,
      responseMode: presetName === 'apple' ? 'form_post' : 'query',
      autoLink,
      signUp: m.signUp !== false,
      ...(tenants ? { tenants } : {}),
    };
  }
  return {
    name: m.name,
    displayName: (m.displayName as string | undefined) ?? preset?.displayName ?? m.name,
    ...(presetName ? { preset: presetName } : {}),
    ...(issuer !== undefined ? { issuer } : {}),
    ...(idTokenPath ? { audience } : {}),
    ...(m.jwksUri !== undefined ? { jwksUri: m.jwksUri as string } : {}),
    ...(m.jwks !== undefined ? { jwks: m.jwks as { keys: Record<string, unknown>[] } } : {}),
    ...(redirect ? { redirect } : {}),
  };
}

function identityProvidersFrom(value: string | undefined, production: boolean): IdentityProviderConfig[] {
  return checkedEntries(
    'IDENTITY_PROVIDERS',
    value,
    'name',
    (entry) => checkIdentityProvider(entry, production),
    (p) => p.name,
  );
}

/** The upstream identity providers people sign in with (docs/providers.md). */
export const providersSection = section({
  variables: {
    IDENTITY_PROVIDERS: formatted('json-array', 'must be a JSON array of provider objects', {
      description:
        'JSON array of upstream identity providers. Each has a distinct `name` (`[a-z0-9][a-z0-9_-]{0,62}`). ID-token sign-in: `issuer`, `audience`, `jwksUri` or `jwks`. Redirect sign-in ("Continue with …"): `clientId`, `clientSecret`, `scopes`, `displayName`, `preset` (`google`, `microsoft`, `apple`, `github`, or none for discovery from `issuer`), `autoLink` (`off` or `verified_email`), `signUp`, and `tenants` (Microsoft) or `teamId`, `keyId`, `privateKey` (Apple); one entry may serve both. Issuers are `https` in production. An invalid entry stops start-up with a line naming it. See [Providers](providers.md)',
    }),
  },
  map: (e, shared) => ({ identityProviders: identityProvidersFrom(e.IDENTITY_PROVIDERS, shared.production) }),
});
