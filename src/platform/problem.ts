/**
 * The one error type and its catalogue, on the ground floor: this module imports nothing, so the
 * platform (crypto, pagination, rate limits) and the features refuse with it without reaching up
 * into HTTP, and `platform/http/` only renders it (problem.ts there) as Problem Details.
 *
 * A refusal is `new Problem(code)`: status, title and detail come from here, so two refusals of one
 * family are byte-identical by construction. No detail ever carries request data.
 */
export interface ProblemEntry {
  status: number;
  title: string;
  detail: string;
  /** Whether the same request may succeed later (the `retryable` member of the body). */
  retryable: boolean;
}

export const CATALOGUE = {
  'validation.failed': {
    status: 400,
    title: 'Validation failed',
    detail: 'The request is not valid.',
    retryable: false,
  },
  'collection.cursor_tampered': {
    status: 400,
    title: 'Cursor tampered',
    detail: 'The cursor signature does not verify.',
    retryable: false,
  },
  'collection.cursor_invalid': {
    status: 400,
    title: 'Cursor invalid',
    detail: 'The cursor cannot be used here.',
    retryable: false,
  },
  'collection.cursor_expired': {
    status: 400,
    title: 'Cursor expired',
    detail: 'The cursor has expired; start again from the first page.',
    retryable: false,
  },
  'identity.session_required': {
    status: 401,
    title: 'Session required',
    detail: 'A valid session is required.',
    retryable: false,
  },
  'admin.unauthorized': {
    status: 401,
    title: 'Unauthorized',
    detail: 'A valid operator key is required.',
    retryable: false,
  },
  'identity.sign_in_refused': {
    status: 401,
    title: 'Sign-in refused',
    detail: 'The sign-in was refused.',
    retryable: false,
  },
  'identity.second_factor_refused': {
    status: 401,
    title: 'Second factor refused',
    detail: 'The second step was refused.',
    retryable: false,
  },
  'identity.renewal_refused': {
    status: 401,
    title: 'Renewal refused',
    detail: 'The renewal was refused.',
    retryable: false,
  },
  'identity.elevation_required': {
    status: 403,
    title: 'Elevation required',
    detail: 'A live elevation for this session is required.',
    retryable: false,
  },
  'identity.step_up_confirmation_refused': {
    status: 403,
    title: 'Step-up refused',
    detail: 'The step-up confirmation was refused.',
    retryable: false,
  },
  'identity.second_factor_confirmation_refused': {
    status: 403,
    title: 'Second factor confirmation refused',
    detail: 'The second factor could not be confirmed.',
    retryable: false,
  },
  'identity.cross_site_refused': {
    status: 403,
    title: 'Cross-site request refused',
    detail: 'This route answers only requests from the service’s own pages.',
    retryable: false,
  },
  'identity.sign_in_method_not_found': {
    status: 404,
    title: 'Sign-in method not found',
    detail: 'No such sign-in method.',
    retryable: false,
  },
  'identity.second_factor_not_found': {
    status: 404,
    title: 'Second factor not found',
    detail: 'No such second factor.',
    retryable: false,
  },
  'identity.account_deletion_refused': {
    status: 422,
    title: 'Deletion not confirmed',
    detail: "The identifier typed is not this account's: nothing was deleted.",
    retryable: false,
  },
  'identity.account_deletion_last_owner': {
    status: 409,
    title: 'Last owner of an organization',
    detail:
      'You are the last owner of an organization that has other members: make another member an owner, or remove the members, before deleting your account. Nothing was deleted.',
    retryable: false,
  },
  'identity.session_not_found': {
    status: 404,
    title: 'Session not found',
    detail: 'No such live session.',
    retryable: false,
  },
  'identity.picture_not_found': {
    status: 404,
    title: 'Picture not found',
    detail: 'No picture has this address.',
    retryable: false,
  },
  'identity.connected_app_not_found': {
    status: 404,
    title: 'Connected app not found',
    detail: 'No app holds access to this account under that client id.',
    retryable: false,
  },
  'oidc.interaction_expired': {
    status: 404,
    title: 'Sign-in request not found',
    detail: 'This sign-in request is unknown to this browser or has expired; start again from the app.',
    retryable: false,
  },
  'admin.oidc_client_not_found': {
    status: 404,
    title: 'Client not found',
    detail: 'No OpenID Provider client has this client id.',
    retryable: false,
  },
  'route.not_found': {
    status: 404,
    title: 'Not found',
    detail: 'No route matches this method and path.',
    retryable: false,
  },
  'admin.forbidden': {
    status: 403,
    title: 'Forbidden',
    detail: "The operator's role does not allow this act.",
    retryable: false,
  },
  'admin.console_sign_in_failed': {
    status: 400,
    title: 'Console sign-in failed',
    detail: 'The console sign-in could not be completed; start it again.',
    retryable: false,
  },
  'admin.console_session_ended': {
    status: 401,
    title: 'Console session ended',
    detail: 'The console session has ended; sign in again.',
    retryable: false,
  },
  'admin.step_up_required': {
    status: 403,
    title: 'Fresh sign-in required',
    detail: 'This act needs a sign-in with a second factor within the last minutes; sign in again.',
    retryable: false,
  },
  'admin.erasure_not_confirmed': {
    status: 422,
    title: 'Erasure not confirmed',
    detail: "The identifier typed is not one of the person's.",
    retryable: false,
  },
  'admin.operator_own_role': {
    status: 403,
    title: 'Own role',
    detail: 'An operator cannot change their own role.',
    retryable: false,
  },
  'admin.operator_configured': {
    status: 409,
    title: 'Operator configured',
    detail: 'CONSOLE_OPERATORS names this identity: its role changes there only.',
    retryable: false,
  },
  'admin.operator_not_found': {
    status: 404,
    title: 'Operator not found',
    detail: 'The admin API gave this identity no role.',
    retryable: false,
  },
  'admin.identity_not_found': {
    status: 404,
    title: 'Identity not found',
    detail: 'No such identity.',
    retryable: false,
  },
  'admin.organization_not_found': {
    status: 404,
    title: 'Organization not found',
    detail: 'No organization has this id.',
    retryable: false,
  },
  'admin.organization_disabled': {
    status: 409,
    title: 'Organization disabled',
    detail: 'The organization is disabled: enable it before inviting anyone into it.',
    retryable: false,
  },
  'admin.event_not_found': {
    status: 404,
    title: 'Event not found',
    detail: 'No event has this id: it never existed, or it is older than the retention.',
    retryable: false,
  },
  'admin.webhook_endpoint_not_found': {
    status: 404,
    title: 'Webhook endpoint not found',
    detail: 'No webhook endpoint has this id.',
    retryable: false,
  },
  'admin.webhook_delivery_not_found': {
    status: 404,
    title: 'Webhook delivery not found',
    detail: 'This endpoint has no delivery with this id.',
    retryable: false,
  },
  'admin.webhook_delivery_in_flight': {
    status: 409,
    title: 'Webhook delivery in flight',
    detail: 'The delivery is being sent now; try again when the attempt has ended.',
    retryable: true,
  },
  'admin.webhook_url_refused': {
    status: 422,
    title: 'Webhook URL refused',
    detail: 'A webhook URL must be https here (WEBHOOK_PRIVATE_ADDRESSES=refuse).',
    retryable: false,
  },
  'identity.identifier_taken': {
    status: 409,
    title: 'Identifier taken',
    detail: 'The identifier is already in use.',
    retryable: false,
  },
  'admin.identity_erased': {
    status: 409,
    title: 'Identity erased',
    detail: 'The identity was erased; nothing more can change it.',
    retryable: false,
  },
  'admin.oidc_client_exists': {
    status: 409,
    title: 'Client id taken',
    detail: 'An OpenID Provider client with this client id already exists, in configuration or registered.',
    retryable: false,
  },
  'admin.oidc_client_configured': {
    status: 409,
    title: 'Client is configured',
    detail: 'This client is defined in configuration (OIDC_CLIENTS) and cannot be changed through the API.',
    retryable: false,
  },
  'identity.last_sign_in_method': {
    status: 409,
    title: 'Last sign-in method',
    detail: 'Removing this method would leave no way in.',
    retryable: false,
  },
  'organization.not_found': {
    status: 404,
    title: 'Organization not found',
    detail: 'No organization with this id has the caller as a member.',
    retryable: false,
  },
  'organization.member_not_found': {
    status: 404,
    title: 'Member not found',
    detail: 'The organization has no member with this id.',
    retryable: false,
  },
  'organization.permission_denied': {
    status: 403,
    title: 'Not allowed in this organization',
    detail: 'Your role in this organization does not allow this.',
    retryable: false,
  },
  'organization.creation_disabled': {
    status: 403,
    title: 'Organization creation disabled',
    detail: 'Organizations are created by the operators of this service.',
    retryable: false,
  },
  'organization.identifier_required': {
    status: 403,
    title: 'Verified identifier required',
    detail: 'Verify an email address or phone number before creating an organization.',
    retryable: false,
  },
  'organization.second_factor_required': {
    status: 403,
    title: 'Second factor required',
    detail:
      'This organization requires a second factor of its members: add an authenticator app or a passkey to your account, then switch again.',
    retryable: false,
  },
  'organization.slug_taken': {
    status: 409,
    title: 'Slug taken',
    detail: 'Another organization already uses this slug.',
    retryable: false,
  },
  'organization.last_owner': {
    status: 409,
    title: 'Last owner',
    detail: 'The organization must keep at least one owner: make another member an owner first.',
    retryable: false,
  },
  'organization.last_owner_erasure': {
    status: 409,
    title: 'Last owner of an organization',
    detail:
      'The identity is the last owner of an organization that has other members: ownership must be transferred first.',
    retryable: false,
  },
  'organization.role_unknown': {
    status: 422,
    title: 'Unknown role',
    detail: 'The role is neither built in nor configured.',
    retryable: false,
  },
  'organization.invitation_not_found': {
    status: 404,
    title: 'Invitation not found',
    detail: 'No invitation matches this token or id.',
    retryable: false,
  },
  'organization.invitation_expired': {
    status: 410,
    title: 'Invitation expired',
    detail: 'This invitation has expired: ask the organization for a new one.',
    retryable: false,
  },
  'organization.invitation_revoked': {
    status: 410,
    title: 'Invitation revoked',
    detail: 'This invitation was withdrawn or replaced by a newer one.',
    retryable: false,
  },
  'organization.invitation_accepted': {
    status: 409,
    title: 'Invitation already accepted',
    detail: 'This invitation has already been accepted.',
    retryable: false,
  },
  'organization.invitation_wrong_identity': {
    status: 403,
    title: 'Invitation for another address',
    detail:
      'This invitation was sent to an email address or phone number your account does not hold verified: sign in with that account, or add and verify the address first.',
    retryable: false,
  },
  'organization.already_member': {
    status: 409,
    title: 'Already a member',
    detail: 'You are already a member of this organization.',
    retryable: false,
  },
  'organization.domain_invalid': {
    status: 422,
    title: 'Domain not accepted',
    detail:
      'The domain must be a host name with at least one dot and valid labels (letters, digits, hyphens); an IP address or a top-level domain alone is refused.',
    retryable: false,
  },
  'organization.domain_exists': {
    status: 409,
    title: 'Domain already claimed',
    detail: 'This organization already claims this domain.',
    retryable: false,
  },
  'organization.domain_not_found': {
    status: 404,
    title: 'Domain not found',
    detail: 'The organization claims no domain with this id.',
    retryable: false,
  },
  'organization.scim_token_not_found': {
    status: 404,
    title: 'SCIM token not found',
    detail: 'The organization has no live SCIM token with this id.',
    retryable: false,
  },
  'organization.domain_unverified': {
    status: 422,
    title: 'Domain not verified',
    detail:
      'The DNS TXT record was not found with the expected value: publish the record named in txtRecord (its value exactly), wait for it to reach the DNS, and try again.',
    retryable: false,
  },
  'organization.domain_taken': {
    status: 409,
    title: 'Domain verified by another organization',
    detail: 'Another organization has already verified this domain.',
    retryable: false,
  },
  'organization.domain_check_unavailable': {
    status: 503,
    title: 'DNS check unavailable',
    detail: 'The DNS did not answer in time; nothing was changed. Retry later.',
    retryable: true,
  },
  'organization.connection_not_found': {
    status: 404,
    title: 'Connection not found',
    detail: 'The organization has no connection with this id.',
    retryable: false,
  },
  'organization.connection_invalid': {
    status: 422,
    title: 'Connection not accepted',
    detail:
      'The connection is incomplete or malformed: a SAML connection needs the IdP metadata (XML or URL), or its entity id, an http(s) SSO URL and 1 to 4 X.509 signing certificates; an OpenID connection needs an https issuer, a client id and a client secret; the default role and every group role must be configured roles the caller may grant, never owner; a document type declaration is refused.',
    retryable: false,
  },
  'organization.connection_metadata_unavailable': {
    status: 503,
    title: 'Metadata unavailable',
    detail:
      'The metadata URL did not answer a document within the time and size allowed; nothing was changed. Retry later.',
    retryable: true,
  },
  'identity.sso_required': {
    status: 403,
    title: 'Sign in through your organization',
    detail:
      "Addresses of this domain sign in only through their organization's identity provider: use enterprise sign-in (SSO).",
    retryable: false,
  },
  'organization.sso_requirement_unmet': {
    status: 409,
    title: 'SSO cannot be required yet',
    detail:
      'Requiring SSO needs at least one verified domain and one enabled connection, so the people of those domains keep a way in.',
    retryable: false,
  },
  'organization.connection_test_not_found': {
    status: 404,
    title: 'Test result not found',
    detail:
      'No connection test result for this code: it expired, or it belongs to another session or browser.',
    retryable: false,
  },
  'identity.sso_idp_unavailable': {
    status: 503,
    title: 'Identity provider unavailable',
    detail:
      'The identity provider did not answer its discovery document in time; nothing was changed. Retry later.',
    retryable: true,
  },
  'identity.sso_unavailable': {
    status: 422,
    title: 'No enterprise sign-in',
    detail:
      'No enabled enterprise connection signs in for this address or organization: sign in another way.',
    retryable: false,
  },
  'idempotency.key_reused': {
    status: 409,
    title: 'Idempotency key reused',
    detail: 'The idempotency key was used with different content.',
    retryable: false,
  },
  'precondition.failed': {
    status: 412,
    title: 'Precondition failed',
    detail: 'The resource does not match the precondition.',
    retryable: false,
  },
  'precondition.required': {
    status: 428,
    title: 'Precondition required',
    detail: 'This write needs an If-Match header with the ETag of the current representation.',
    retryable: false,
  },
  'request.body_too_large': {
    status: 413,
    title: 'Body too large',
    detail: 'The request body exceeds 16 KiB.',
    retryable: false,
  },
  'request.unsupported_media_type': {
    status: 415,
    title: 'Unsupported media type',
    detail: 'The request body must be application/json.',
    retryable: false,
  },
  'identity.identifier_unusable': {
    status: 422,
    title: 'Identifier unusable',
    detail: 'The identifier cannot be used.',
    retryable: false,
  },
  'identity.picture_unusable': {
    status: 422,
    title: 'Picture unusable',
    detail: 'The file is not a PNG, JPEG, WebP or GIF image of a usable size.',
    retryable: false,
  },
  'identity.provider_unavailable': {
    status: 422,
    title: 'Provider unavailable',
    detail: 'This provider does not offer sign-in by redirect here.',
    retryable: false,
  },
  'identity.identifier_channel_unavailable': {
    status: 422,
    title: 'No channel',
    detail: 'No channel can deliver to this identifier.',
    retryable: false,
  },
  'identity.verification_refused': {
    status: 422,
    title: 'Verification refused',
    detail: 'The verification was refused.',
    retryable: false,
  },
  'identity.sign_in_method_confirmation_refused': {
    status: 422,
    title: 'Confirmation refused',
    detail: 'The sign-in method confirmation was refused.',
    retryable: false,
  },
  'admin.oidc_client_invalid': {
    status: 422,
    title: 'Client metadata invalid',
    detail: 'The client metadata is not acceptable; the errors member says which field and why.',
    retryable: false,
  },
  'identity.password_exists': {
    status: 409,
    title: 'Password already set',
    detail: 'The account already has a password; change it instead.',
    retryable: false,
  },
  'identity.password_change_refused': {
    status: 422,
    title: 'Password change refused',
    detail: 'The password change was refused.',
    retryable: false,
  },
  'identity.password_recovery_refused': {
    status: 422,
    title: 'Password recovery refused',
    detail: 'The password recovery was refused.',
    retryable: false,
  },
  'identity.step_up_unavailable': {
    status: 422,
    title: 'Step-up unavailable',
    detail: 'No step-up channel is available.',
    retryable: false,
  },
  'identity.sign_in_second_factor_locked': {
    status: 423,
    title: 'Account locked',
    detail: 'The account is locked after repeated failures.',
    retryable: false,
  },
  'identity.sign_in_method_locked': {
    status: 423,
    title: 'Account locked',
    detail: 'The account is locked after repeated failures.',
    retryable: false,
  },
  'identity.second_factor_locked': {
    status: 423,
    title: 'Account locked',
    detail: 'The account is locked after repeated failures.',
    retryable: false,
  },
  'identity.step_up_locked': {
    status: 423,
    title: 'Account locked',
    detail: 'The account is locked after repeated failures.',
    retryable: false,
  },
  'hooks.refused': {
    status: 403,
    title: 'Refused by a hook',
    detail: 'The deployment refused this act; the member `hookMessage`, when present, says why.',
    retryable: false,
  },
  'rate_limit.exceeded': {
    status: 429,
    title: 'Too many requests',
    detail: 'The rate limit for this route is exceeded; retry later.',
    retryable: true,
  },
  'internal.unexpected': {
    status: 500,
    title: 'Internal error',
    detail: 'An unexpected error occurred.',
    retryable: false,
  },
  'hooks.unavailable': {
    status: 503,
    title: 'Hook unavailable',
    detail: 'A check this deployment requires did not answer in time; retry later.',
    retryable: true,
  },
  'service.unavailable': {
    status: 503,
    title: 'Service unavailable',
    detail: 'The service is temporarily unavailable; retry later.',
    retryable: true,
  },
} as const satisfies Record<string, ProblemEntry>;

export type ProblemCode = keyof typeof CATALOGUE;

/** One invalid field of a request (the `errors` member of a validation refusal). */
export interface ValidationEntry {
  location: 'body' | 'query' | 'path' | 'header';
  field: string;
  code: string;
  message: string;
}

export class Problem extends Error {
  readonly status: number;
  constructor(
    readonly code: ProblemCode,
    readonly extra: {
      errors?: ValidationEntry[];
      headers?: Record<string, string>;
      /** A deployment's own words for its refusal (a synchronous hook's `message`), shown as given. */
      hookMessage?: string;
      /** organization.domain_unverified only: the TXT record that was expected. */
      txtRecord?: { name: string; value: string };
    } = {},
  ) {
    // No stack: a Problem is an answer, never logged as a failure (only what is not a Problem is,
    // errors.ts), and capturing one costs the event loop 20-60 µs per refusal deep in a route's
    // promise chain, which load shedding (503) multiplies (docs/performance.md, "Health during
    // sign-in load").
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(code);
    Error.stackTraceLimit = limit;
    this.status = CATALOGUE[code].status;
  }
}
