import { type Static, type TNull, type TOptional, type TSchema, type TUnion, Type } from '@sinclair/typebox';
import { OIDC_CLIENT_ID } from '../../config.js';
import { Instant, StoredText } from '../../platform/http/schemas.js';
import { Page, PageQuerySchema } from '../../platform/pagination/page.js';

/*
 * The OpenID Provider's clients as operators register them (docs/admin.md, "OpenID Provider
 * clients"): RFC 7591 names, the same as OIDC_CLIENTS, so one client reads alike in configuration
 * and in the API. The schema bounds shapes; checkOidcClient (config.ts) decides what is acceptable.
 */

const ClientId = Type.String({ pattern: OIDC_CLIENT_ID.source, maxLength: 128 });
const Uri = Type.String({ minLength: 1, maxLength: 2000 });
const Uris = Type.Array(Uri, { maxItems: 20 });
const GrantType = Type.Union([
  Type.Literal('authorization_code'),
  Type.Literal('refresh_token'),
  Type.Literal('client_credentials'),
  Type.Literal('urn:ietf:params:oauth:grant-type:device_code'),
]);
const AuthMethod = Type.Union([
  Type.Literal('client_secret_basic'),
  Type.Literal('client_secret_post'),
  Type.Literal('private_key_jwt'),
  Type.Literal('none'),
]);
const SigningAlg = Type.Union([Type.Literal('RS256'), Type.Literal('EdDSA')]);
const DisplayUri = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: 2000,
    description: `${what}, shown on the consent page: https (http only on loopback outside production)`,
  });
/** A JWK Set of public keys; checkOidcClient checks each key. */
const Jwks = Type.Object(
  { keys: Type.Array(Type.Object({}, { additionalProperties: true }), { minItems: 1, maxItems: 10 }) },
  {
    additionalProperties: false,
    description: 'public RSA or Ed25519 keys of a private_key_jwt client (no private member)',
  },
);

const metadata = {
  client_name: StoredText({ maxLength: 100, visible: true }),
  redirect_uris: Uris,
  post_logout_redirect_uris: Uris,
  grant_types: Type.Array(GrantType, { minItems: 1, maxItems: 4 }),
  token_endpoint_auth_method: AuthMethod,
  backchannel_logout_uri: Uri,
  first_party: Type.Boolean(),
  require_pkce: Type.Boolean(),
  id_token_signed_response_alg: Type.Union([Type.Literal('RS256'), Type.Literal('EdDSA')], {
    description: 'how its ID tokens are signed: RS256 (default) or EdDSA',
  }),
  response_types: Type.Array(Type.Literal('code'), {
    maxItems: 1,
    description: '["code"] with the authorization_code grant (the default), [] without it',
  }),
  userinfo_signed_response_alg: { ...SigningAlg, description: 'set: userinfo answers a signed JWT' },
  logo_uri: DisplayUri('its logo'),
  client_uri: DisplayUri('its home page'),
  policy_uri: DisplayUri('its privacy policy'),
  tos_uri: DisplayUri('its terms of service'),
  contacts: Type.Array(Type.String({ minLength: 3, maxLength: 254 }), {
    maxItems: 10,
    description: 'email addresses of the people responsible for it (never shown to people)',
  }),
  scope: Type.String({
    minLength: 1,
    maxLength: 200,
    description: 'space-separated scopes it may ask for; absent: every scope',
  }),
  default_max_age: Type.Integer({
    minimum: 60,
    maximum: 31536000,
    description: 'seconds: the max_age of its authorization requests that send none',
  }),
  require_auth_time: Type.Boolean({ description: 'accepted; every ID token carries auth_time' }),
  dpop_bound_access_tokens: Type.Boolean({
    description:
      'true: every token request carries a DPoP proof (RFC 9449) and its tokens are bound to that key; default false',
  }),
  jwks: Jwks,
  jwks_uri: Type.String({
    minLength: 1,
    maxLength: 2000,
    description: 'where its public keys are (private_key_jwt), instead of jwks',
  }),
};

/** The optional fields of a creation, and of a change (where null removes a removable one). */
const optional = {
  client_name: Type.Optional(metadata.client_name),
  redirect_uris: Type.Optional(metadata.redirect_uris),
  post_logout_redirect_uris: Type.Optional(metadata.post_logout_redirect_uris),
  grant_types: Type.Optional(metadata.grant_types),
  response_types: Type.Optional(metadata.response_types),
  token_endpoint_auth_method: Type.Optional(metadata.token_endpoint_auth_method),
  first_party: Type.Optional(metadata.first_party),
  require_pkce: Type.Optional(metadata.require_pkce),
  id_token_signed_response_alg: Type.Optional(metadata.id_token_signed_response_alg),
  contacts: Type.Optional(metadata.contacts),
  require_auth_time: Type.Optional(metadata.require_auth_time),
  dpop_bound_access_tokens: Type.Optional(metadata.dpop_bound_access_tokens),
};
const removable = {
  backchannel_logout_uri: metadata.backchannel_logout_uri,
  userinfo_signed_response_alg: metadata.userinfo_signed_response_alg,
  logo_uri: metadata.logo_uri,
  client_uri: metadata.client_uri,
  policy_uri: metadata.policy_uri,
  tos_uri: metadata.tos_uri,
  scope: metadata.scope,
  default_max_age: metadata.default_max_age,
  jwks: metadata.jwks,
  jwks_uri: metadata.jwks_uri,
};
const orNull = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** POST /admin/v1/oidc-clients: the service makes the secret of a client_secret_* client. */
export const CreateClientBody = Type.Object(
  {
    client_id: ClientId,
    ...optional,
    ...Object.fromEntries(Object.entries(removable).map(([k, v]) => [k, Type.Optional(v)])),
  } as { client_id: typeof ClientId } & typeof optional & {
      [K in keyof typeof removable]: TOptional<(typeof removable)[K]>;
    },
  { additionalProperties: false },
);
export type CreateClientBody = Static<typeof CreateClientBody>;

/**
 * PATCH /admin/v1/oidc-clients/{clientId}: each field given replaces the stored one; null removes
 * an optional one (backchannel_logout_uri, the display URIs, scope, default_max_age,
 * userinfo_signed_response_alg, jwks, jwks_uri). The client id and the way it authenticates (none,
 * a secret, its keys) are fixed at creation.
 */
export const UpdateClientBody = Type.Object(
  {
    ...optional,
    ...Object.fromEntries(Object.entries(removable).map(([k, v]) => [k, Type.Optional(orNull(v))])),
  } as typeof optional & {
    [K in keyof typeof removable]: TOptional<TUnion<[(typeof removable)[K], TNull]>>;
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateClientBody = Static<typeof UpdateClientBody>;

export const ClientParams = Type.Object({ clientId: ClientId }, { additionalProperties: false });

export const ClientListQuery = PageQuerySchema;

const clientFields = {
  client_id: Type.String(),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  post_logout_redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(GrantType),
  token_endpoint_auth_method: AuthMethod,
  backchannel_logout_uri: Type.Union([Type.String(), Type.Null()]),
  first_party: Type.Boolean(),
  require_pkce: Type.Boolean(),
  id_token_signed_response_alg: metadata.id_token_signed_response_alg,
  response_types: Type.Array(Type.Literal('code')),
  userinfo_signed_response_alg: orNull(SigningAlg),
  logo_uri: orNull(Type.String()),
  client_uri: orNull(Type.String()),
  policy_uri: orNull(Type.String()),
  tos_uri: orNull(Type.String()),
  contacts: Type.Array(Type.String()),
  scope: orNull(Type.String()),
  default_max_age: orNull(Type.Integer()),
  require_auth_time: Type.Boolean(),
  jwks: orNull(Jwks),
  jwks_uri: orNull(Type.String()),
  dpop_bound_access_tokens: Type.Boolean(),
  source: Type.Union([Type.Literal('configuration'), Type.Literal('admin')], {
    description: '`configuration`: from OIDC_CLIENTS, read-only here; `admin`: registered through this API',
  }),
  created_at: Type.Union([Instant, Type.Null()], { description: 'null for a configured client' }),
  updated_at: Type.Union([Instant, Type.Null()], { description: 'null for a configured client' }),
};

/** A client as every read shows it: never its secret, nor the secret's hash. */
export const ClientSchema = Type.Object(clientFields, {
  $id: 'OidcClient',
  additionalProperties: false,
});
export type ClientView = Static<typeof ClientSchema>;

/** The answer of a creation or a secret rotation: the client and its secret, shown this once. */
export const IssuedClientSchema = Type.Object(
  {
    ...clientFields,
    client_secret: Type.Union([Type.String(), Type.Null()], {
      description: 'Shown this once; null for a public client (token_endpoint_auth_method none)',
    }),
  },
  { $id: 'OidcIssuedClient', additionalProperties: false },
);

export const ClientPage = Page(Type.Ref(ClientSchema));

/** GET /api/v1/connected-apps: one app that holds access to the caller's account. */
export const ConnectedAppSchema = Type.Object(
  {
    clientId: Type.String(),
    name: Type.String({ description: "The client's client_name" }),
    scopes: Type.Array(Type.String(), { description: 'Every scope granted or remembered' }),
    since: Instant,
    lastAuthorizedAt: Type.Union([Instant, Type.Null()], {
      description: 'When it was last given a grant; null when only a remembered consent is left',
    }),
  },
  { $id: 'ConnectedApp', additionalProperties: false },
);

export const ConnectedAppPage = Page(Type.Ref(ConnectedAppSchema));

export const ConnectedAppParams = Type.Object({ clientId: ClientId }, { additionalProperties: false });
