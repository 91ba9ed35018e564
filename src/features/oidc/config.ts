import { createPublicKey } from 'node:crypto';
import { absoluteUrl, checkedEntries, formatted, integer, section } from '../../config/schema.js';

/** One OpenID Provider client as OIDC_CLIENTS (or the admin API) declares it, checked. */
export interface OidcClientConfig {
  clientId: string;
  /** The secret as configured; only for client_secret_basic and client_secret_post. */
  clientSecret?: string;
  clientName: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: OidcGrantType[];
  /** `["code"]` exactly when the client has the authorization_code grant, else `[]`. */
  responseTypes: OidcResponseType[];
  tokenEndpointAuthMethod: OidcAuthMethod;
  backchannelLogoutUri?: string;
  firstParty: boolean;
  /** PKCE (S256) is required unless a confidential client opts out with `require_pkce: false`. */
  requirePkce: boolean;
  /** RS256 (the default, which every relying party supports) or EdDSA. */
  idTokenSignedResponseAlg: OidcSigningAlg;
  /** Set: userinfo answers a JWT signed with it (application/jwt); unset: plain JSON. */
  userinfoSignedResponseAlg?: OidcSigningAlg;
  /** Shown on the consent page (docs/oidc.md, "Clients"): https, or loopback http outside production. */
  logoUri?: string;
  clientUri?: string;
  policyUri?: string;
  tosUri?: string;
  contacts: string[];
  /** The scopes it may ask for, space-separated; unset: every scope of the provider. */
  scope?: string;
  /** Seconds: the max_age of its requests that send none. */
  defaultMaxAge?: number;
  /** Accepted as RFC 7591 says; every ID token carries auth_time whatever it is. */
  requireAuthTime: boolean;
  /** The public keys of a private_key_jwt client: inline, or where to fetch them (one of the two). */
  jwks?: { keys: Record<string, unknown>[] };
  jwksUri?: string;
  /** RFC 9449 §5.2: every token request of it carries a DPoP proof, and its tokens are bound to the key. */
  dpopBoundAccessTokens: boolean;
}
export type OidcGrantType =
  | 'authorization_code'
  | 'refresh_token'
  | 'client_credentials'
  | 'urn:ietf:params:oauth:grant-type:device_code';
export type OidcAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'none';
export type OidcResponseType = 'code';
export type OidcSigningAlg = 'RS256' | 'EdDSA';
/** RFC 8628's grant: a device without a browser (a CLI, a TV) signs a person in on another one. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const GRANT_TYPES: readonly OidcGrantType[] = [
  'authorization_code',
  'refresh_token',
  'client_credentials',
  DEVICE_CODE_GRANT,
];
const AUTH_METHODS: readonly OidcAuthMethod[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
  'none',
];
/** The methods whose client holds a secret (the others: none, or its keys). */
export const SECRET_AUTH_METHODS: readonly OidcAuthMethod[] = ['client_secret_basic', 'client_secret_post'];
/** The algorithms the provider signs with (its keys) and accepts client assertions in. */
export const OIDC_SIGNING_ALGS: readonly OidcSigningAlg[] = ['RS256', 'EdDSA'];
/** The provider's scopes (provider.ts `scopes`; test/oidc/client-metadata.test.ts compares them). */
export const OIDC_SCOPES = ['openid', 'offline_access', 'email', 'phone', 'profile', 'organization'] as const;
/**
 * Every name OIDC_CLIENTS and the admin API accept: RFC 7591 and OpenID Connect Dynamic Client
 * Registration names that mean something to this provider, and first_party and require_pkce.
 * Anything else is refused by name, so a misspelt field never silently does nothing.
 */
export const OIDC_CLIENT_FIELDS = [
  'client_id',
  'client_secret',
  'client_name',
  'redirect_uris',
  'post_logout_redirect_uris',
  'grant_types',
  'response_types',
  'token_endpoint_auth_method',
  'backchannel_logout_uri',
  'id_token_signed_response_alg',
  'userinfo_signed_response_alg',
  'logo_uri',
  'client_uri',
  'policy_uri',
  'tos_uri',
  'contacts',
  'scope',
  'default_max_age',
  'require_auth_time',
  'jwks',
  'jwks_uri',
  'dpop_bound_access_tokens',
  'first_party',
  'require_pkce',
] as const;
const CLIENT_KEYS = new Set<string>(OIDC_CLIENT_FIELDS);
export const OIDC_CLIENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** A JWK's private members: a client's jwks holds public keys only. */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
/** Shorter than this, a default_max_age would ask for a new sign-in before the first one ends. */
const MIN_DEFAULT_MAX_AGE = 60;

/**
 * A URL shown to people (logo, home page, policy, terms): https, or http on a loopback host
 * outside production. Never another scheme (javascript:, data:), never credentials in it.
 */
function displayUriAllowed(value: string, production: boolean): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.username || url.password) return false;
  if (url.protocol === 'https:') return true;
  return (
    !production && url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
  );
}

/** A client's public keys: 1 to 10 RSA or Ed25519 public JWKs; answers the reason it is refused. */
function checkJwks(value: unknown): string | undefined {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (
    typeof value !== 'object' ||
    value === null ||
    !Array.isArray(keys) ||
    keys.length === 0 ||
    keys.length > 10
  ) {
    return 'jwks must be a JWK Set: {"keys": [...]} with 1 to 10 public keys';
  }
  for (const [i, key] of keys.entries()) {
    if (typeof key !== 'object' || key === null) return `jwks key #${i + 1} is not a JWK`;
    const k = key as Record<string, unknown>;
    const secret = PRIVATE_JWK_MEMBERS.find((m) => m in k);
    if (secret) return `jwks key #${i + 1} holds a private member "${secret}": give the public key only`;
    if (!(k.kty === 'RSA' || (k.kty === 'OKP' && k.crv === 'Ed25519'))) {
      return `jwks key #${i + 1} must be an RSA or Ed25519 (OKP) key, for RS256 or EdDSA`;
    }
    try {
      createPublicKey({ key: k as import('node:crypto').JsonWebKey, format: 'jwk' });
    } catch {
      return `jwks key #${i + 1} is not a valid public key`;
    }
  }
  return undefined;
}

/**
 * Checks one client's metadata; answers the client or the reason it is refused. Redirect URIs are
 * absolute, without fragment, `https` (or `http` on a loopback host, or anywhere outside
 * production), and are later matched exactly. A client_secret_basic or client_secret_post client
 * has a secret of at least 32 characters; a private_key_jwt one has its keys (jwks or jwks_uri)
 * and no secret; a public one has neither, cannot use client credentials and always sends PKCE.
 * Fields that depend on each other are checked together (docs/oidc.md, "Clients").
 */
export function checkOidcClient(entry: unknown, production: boolean): OidcClientConfig | string {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return 'is not an object';
  const m = entry as Record<string, unknown>;
  for (const key of Object.keys(m)) if (!CLIENT_KEYS.has(key)) return `has an unknown field "${key}"`;
  if (typeof m.client_id !== 'string' || !OIDC_CLIENT_ID.test(m.client_id)) {
    return 'needs a client_id of letters, digits, ".", "_" or "-" (at most 128)';
  }
  const method = (m.token_endpoint_auth_method ?? 'client_secret_basic') as OidcAuthMethod;
  if (!AUTH_METHODS.includes(method))
    return `token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}`;
  const grants = (m.grant_types ?? ['authorization_code']) as OidcGrantType[];
  if (!Array.isArray(grants) || grants.length === 0 || grants.some((g) => !GRANT_TYPES.includes(g))) {
    return `grant_types must be a non-empty array of ${GRANT_TYPES.join(', ')}`;
  }
  const codeGrant = grants.includes('authorization_code');
  // RFC 7591 2.1: response_types and grant_types must agree. Only the code flow exists here.
  let responseTypes: OidcResponseType[] = codeGrant ? ['code'] : [];
  if (m.response_types !== undefined) {
    const rt = m.response_types;
    if (!Array.isArray(rt) || rt.some((r) => r !== 'code')) {
      return 'response_types may hold only "code" (the implicit and hybrid flows are off)';
    }
    if (rt.length > 0 && !codeGrant) return 'response_types ["code"] needs authorization_code in grant_types';
    if (rt.length === 0 && codeGrant) return 'grant_types authorization_code needs response_types ["code"]';
    responseTypes = rt.length > 0 ? ['code'] : [];
  }
  const hasKeys = m.jwks !== undefined || m.jwks_uri !== undefined;
  if (method === 'none') {
    if (m.client_secret !== undefined)
      return 'is public (token_endpoint_auth_method none) and cannot have a client_secret';
    if (grants.includes('client_credentials')) return 'is public and cannot use client_credentials';
    if (m.require_pkce === false) return 'is public and cannot turn PKCE off';
  } else if (method === 'private_key_jwt') {
    if (m.client_secret !== undefined)
      return 'authenticates with private_key_jwt and cannot have a client_secret';
    if (!hasKeys) return 'token_endpoint_auth_method private_key_jwt needs jwks or jwks_uri';
  } else if (typeof m.client_secret !== 'string' || m.client_secret.length < 32) {
    return 'needs a client_secret of at least 32 characters';
  }
  if (hasKeys && method !== 'private_key_jwt') {
    return `${m.jwks !== undefined ? 'jwks' : 'jwks_uri'} is used only with token_endpoint_auth_method private_key_jwt`;
  }
  if (m.jwks !== undefined && m.jwks_uri !== undefined) return 'jwks and jwks_uri cannot both be given';
  if (m.jwks !== undefined) {
    const refused = checkJwks(m.jwks);
    if (refused) return refused;
  }
  if (
    m.jwks_uri !== undefined &&
    (typeof m.jwks_uri !== 'string' || !redirectUriAllowed(m.jwks_uri, production))
  ) {
    return 'jwks_uri must be an absolute https URL without fragment (http only on loopback or outside production)';
  }
  const uris = (value: unknown, name: string): string[] | string => {
    if (value === undefined) return [];
    if (!Array.isArray(value)) return `${name} must be an array of absolute URLs`;
    for (const v of value) {
      if (typeof v !== 'string' || !redirectUriAllowed(v, production)) {
        return `${name} entry "${String(v)}" must be an absolute https URL without fragment (http only on loopback or outside production)`;
      }
    }
    return value as string[];
  };
  const redirectUris = uris(m.redirect_uris, 'redirect_uris');
  if (typeof redirectUris === 'string') return redirectUris;
  if (codeGrant && redirectUris.length === 0) {
    return 'needs redirect_uris for the authorization_code grant';
  }
  const postLogout = uris(m.post_logout_redirect_uris, 'post_logout_redirect_uris');
  if (typeof postLogout === 'string') return postLogout;
  let backchannel: string | undefined;
  if (m.backchannel_logout_uri !== undefined) {
    // Operators may point it at loopback or private addresses: only they register clients.
    if (
      typeof m.backchannel_logout_uri !== 'string' ||
      !absoluteUrl(m.backchannel_logout_uri, ['http:', 'https:'])
    ) {
      return 'backchannel_logout_uri must be an absolute http(s) URL';
    }
    if (new URL(m.backchannel_logout_uri).hash) return 'backchannel_logout_uri must not have a fragment';
    backchannel = m.backchannel_logout_uri;
  }
  if (m.client_name !== undefined && (typeof m.client_name !== 'string' || m.client_name.length > 100)) {
    return 'client_name must be text of at most 100 characters';
  }
  const display: Partial<Record<'logo_uri' | 'client_uri' | 'policy_uri' | 'tos_uri', string>> = {};
  for (const name of ['logo_uri', 'client_uri', 'policy_uri', 'tos_uri'] as const) {
    const v = m[name];
    if (v === undefined) continue;
    if (typeof v !== 'string' || v.length > 2000 || !displayUriAllowed(v, production)) {
      return `${name} must be an absolute https URL (http only on loopback outside production), at most 2000 characters`;
    }
    display[name] = v;
  }
  const contacts = m.contacts ?? [];
  if (
    !Array.isArray(contacts) ||
    contacts.length > 10 ||
    contacts.some((c) => typeof c !== 'string' || c.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(c))
  ) {
    return 'contacts must be an array of at most 10 email addresses';
  }
  let scope: string | undefined;
  if (m.scope !== undefined) {
    if (typeof m.scope !== 'string') return 'scope must be a space-separated list of scopes';
    const asked = m.scope.split(' ').filter(Boolean);
    const unknown = asked.find((s) => !(OIDC_SCOPES as readonly string[]).includes(s));
    if (unknown !== undefined)
      return `scope "${unknown}" is not a scope of this provider (${OIDC_SCOPES.join(', ')})`;
    if (asked.length === 0) return 'scope must name at least one scope';
    scope = [...new Set(asked)].join(' ');
  }
  const maxAge = m.default_max_age;
  if (
    maxAge !== undefined &&
    (typeof maxAge !== 'number' ||
      !Number.isInteger(maxAge) ||
      maxAge < MIN_DEFAULT_MAX_AGE ||
      maxAge > 31536000)
  ) {
    return `default_max_age must be a whole number of seconds from ${MIN_DEFAULT_MAX_AGE} to 31536000`;
  }
  if (maxAge !== undefined && !codeGrant) return 'default_max_age needs the authorization_code grant';
  const alg = m.id_token_signed_response_alg ?? 'RS256';
  if (!OIDC_SIGNING_ALGS.includes(alg as OidcSigningAlg)) {
    return `id_token_signed_response_alg "${String(alg)}" is not enabled here (${OIDC_SIGNING_ALGS.join(' or ')})`;
  }
  const userinfoAlg = m.userinfo_signed_response_alg;
  if (userinfoAlg !== undefined && !OIDC_SIGNING_ALGS.includes(userinfoAlg as OidcSigningAlg)) {
    return `userinfo_signed_response_alg "${String(userinfoAlg)}" is not enabled here (${OIDC_SIGNING_ALGS.join(' or ')})`;
  }
  for (const flag of [
    'first_party',
    'require_pkce',
    'require_auth_time',
    'dpop_bound_access_tokens',
  ] as const) {
    if (m[flag] !== undefined && typeof m[flag] !== 'boolean') return `${flag} must be true or false`;
  }
  return {
    clientId: m.client_id,
    ...(SECRET_AUTH_METHODS.includes(method) ? { clientSecret: m.client_secret as string } : {}),
    clientName: (m.client_name as string | undefined) ?? m.client_id,
    redirectUris,
    postLogoutRedirectUris: postLogout,
    grantTypes: [...new Set(grants)],
    responseTypes,
    tokenEndpointAuthMethod: method,
    ...(backchannel ? { backchannelLogoutUri: backchannel } : {}),
    firstParty: m.first_party === true,
    requirePkce: m.require_pkce !== false,
    idTokenSignedResponseAlg: alg as OidcSigningAlg,
    ...(userinfoAlg !== undefined ? { userinfoSignedResponseAlg: userinfoAlg as OidcSigningAlg } : {}),
    ...(display.logo_uri ? { logoUri: display.logo_uri } : {}),
    ...(display.client_uri ? { clientUri: display.client_uri } : {}),
    ...(display.policy_uri ? { policyUri: display.policy_uri } : {}),
    ...(display.tos_uri ? { tosUri: display.tos_uri } : {}),
    contacts: contacts as string[],
    ...(scope !== undefined ? { scope } : {}),
    ...(maxAge !== undefined ? { defaultMaxAge: maxAge as number } : {}),
    requireAuthTime: m.require_auth_time !== false,
    ...(m.jwks !== undefined ? { jwks: m.jwks as { keys: Record<string, unknown>[] } } : {}),
    ...(m.jwks_uri !== undefined ? { jwksUri: m.jwks_uri as string } : {}),
    dpopBoundAccessTokens: m.dpop_bound_access_tokens === true,
  };
}

function redirectUriAllowed(value: string, production: boolean): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.hash || value.includes('#')) return false;
  if (url.protocol === 'https:') return true;
  if (url.protocol !== 'http:') return false;
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  return loopback || !production;
}

function oidcClientsFrom(value: string | undefined, production: boolean): OidcClientConfig[] {
  return checkedEntries(
    'OIDC_CLIENTS',
    value,
    'client_id',
    (entry) => checkOidcClient(entry, production),
    (c) => c.clientId,
  );
}

/** The OpenID Provider: its configured clients and its lifetimes (docs/oidc.md). */
export const oidcSection = section({
  variables: {
    OIDC_CLIENTS: formatted('json-array', 'must be a JSON array of client metadata objects', {
      description:
        "JSON array of the OpenID Provider's clients, in RFC 7591 and OpenID Connect Registration names: `client_id`, `client_secret`, `redirect_uris`, `post_logout_redirect_uris`, `grant_types`, `response_types`, `token_endpoint_auth_method` (`private_key_jwt` with `jwks` or `jwks_uri`), `backchannel_logout_uri`, `client_name`, `logo_uri`, `client_uri`, `policy_uri`, `tos_uri`, `contacts`, `scope`, `default_max_age`, `require_auth_time`, `id_token_signed_response_alg`, `userinfo_signed_response_alg`, `dpop_bound_access_tokens`, plus `first_party` and `require_pkce` (see [OpenID Provider](oidc.md#clients)). An invalid entry or an unknown field stops start-up with a line naming it",
      shown: 'none (clients can also be registered through the admin API)',
    }),
    OIDC_OFFLINE_TTL: integer(2592000, 3600, 31536000, {
      description:
        'seconds an `offline_access` refresh token lives without use; each use rotates it and starts the time again. Signing out everywhere (the epoch) still ends it',
    }),
    OIDC_ID_TOKEN_TTL: integer(3600, 60, 86400, { description: 'seconds an ID token is valid' }),
    OIDC_SWEEP_SECONDS: integer(2, 1, 60, {
      description:
        'seconds between the sweeps that end the OpenID Provider grants of ended sessions and send their back-channel logouts (refresh, introspection and userinfo refuse them at once regardless)',
    }),
  },
  map: (e, shared) => ({
    /** The OpenID Provider: its configured clients (OIDC_CLIENTS) and lifetimes. */
    oidc: {
      clients: oidcClientsFrom(e.OIDC_CLIENTS, shared.production),
      offlineTtl: e.OIDC_OFFLINE_TTL,
      idTokenTtl: e.OIDC_ID_TOKEN_TTL,
      sweepSeconds: e.OIDC_SWEEP_SECONDS,
    },
  }),
});
