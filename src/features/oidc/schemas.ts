import { type Static, Type } from '@sinclair/typebox';
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
]);
const AuthMethod = Type.Union([
  Type.Literal('client_secret_basic'),
  Type.Literal('client_secret_post'),
  Type.Literal('none'),
]);

const metadata = {
  client_name: StoredText({ maxLength: 100, visible: true }),
  redirect_uris: Uris,
  post_logout_redirect_uris: Uris,
  grant_types: Type.Array(GrantType, { minItems: 1, maxItems: 3 }),
  token_endpoint_auth_method: AuthMethod,
  backchannel_logout_uri: Uri,
  first_party: Type.Boolean(),
  require_pkce: Type.Boolean(),
  id_token_signed_response_alg: Type.Union([Type.Literal('RS256'), Type.Literal('EdDSA')], {
    description: 'how its ID tokens are signed: RS256 (default) or EdDSA',
  }),
};

/** POST /admin/v1/oidc-clients: the service makes the secret of a confidential client. */
export const CreateClientBody = Type.Object(
  {
    client_id: ClientId,
    client_name: Type.Optional(metadata.client_name),
    redirect_uris: Type.Optional(metadata.redirect_uris),
    post_logout_redirect_uris: Type.Optional(metadata.post_logout_redirect_uris),
    grant_types: Type.Optional(metadata.grant_types),
    token_endpoint_auth_method: Type.Optional(metadata.token_endpoint_auth_method),
    backchannel_logout_uri: Type.Optional(metadata.backchannel_logout_uri),
    first_party: Type.Optional(metadata.first_party),
    require_pkce: Type.Optional(metadata.require_pkce),
    id_token_signed_response_alg: Type.Optional(metadata.id_token_signed_response_alg),
  },
  { additionalProperties: false },
);
export type CreateClientBody = Static<typeof CreateClientBody>;

/**
 * PATCH /admin/v1/oidc-clients/{clientId}: each field given replaces the stored one; null removes
 * the back-channel logout URI. The client id and the kind of authentication (public or
 * confidential) are fixed at creation.
 */
export const UpdateClientBody = Type.Object(
  {
    client_name: Type.Optional(metadata.client_name),
    redirect_uris: Type.Optional(metadata.redirect_uris),
    post_logout_redirect_uris: Type.Optional(metadata.post_logout_redirect_uris),
    grant_types: Type.Optional(metadata.grant_types),
    token_endpoint_auth_method: Type.Optional(metadata.token_endpoint_auth_method),
    backchannel_logout_uri: Type.Optional(Type.Union([metadata.backchannel_logout_uri, Type.Null()])),
    first_party: Type.Optional(metadata.first_party),
    require_pkce: Type.Optional(metadata.require_pkce),
    id_token_signed_response_alg: Type.Optional(metadata.id_token_signed_response_alg),
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
