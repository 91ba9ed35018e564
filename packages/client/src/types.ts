import type { components, paths } from './generated/openapi.js';

type Json<R> = R extends { content: { 'application/json': infer J } } ? J : never;
type Success<Responses> = Responses extends { 200: infer R }
  ? Json<R>
  : Responses extends { 201: infer R }
    ? Json<R>
    : never;
/** The HTTP methods the client's methods use. */
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** The `data` of a route's success answer, from the generated types. */
export type ResponseData<P extends keyof paths, M extends Method> = Success<
  Operation<P, M>['responses']
> extends { data: infer D }
  ? D
  : never;

/** The JSON body a route takes, from the generated types. */
export type RequestBody<P extends keyof paths, M extends Method> = Operation<P, M> extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

type Item<T> = T extends readonly (infer I)[] ? I : never;

/** Sign-in that opened a session (also the answer of a renewal and of a completed second step). */
export type SessionGrant = components['schemas']['SessionGrant'];
/** What the browser-session routes answer: a session grant without its refresh token (kept in the cookie). */
export type BrowserSessionGrant = components['schemas']['BrowserSessionGrant'];
/** Sign-in that needs a second step: complete it with `completeSecondFactor`. */
export type SecondFactorTicket = components['schemas']['SecondFactorTicket'];
/** What `signIn` answers. */
export type SignInResult = SessionGrant | SecondFactorTicket;

export type SignUpInput = RequestBody<'/api/v1/sign-ups', 'post'>;
export type SignUpResult = ResponseData<'/api/v1/sign-ups', 'post'>;
export type ConfirmSignUpInput = RequestBody<'/api/v1/sign-ups/confirmations', 'post'>;
export type SignInInput = RequestBody<'/api/v1/sign-ins', 'post'>;
export type CompleteSecondFactorInput = RequestBody<'/api/v1/sign-ins/second-factors', 'post'>;
export type SendSignInCodeInput = RequestBody<'/api/v1/sign-ins/codes', 'post'>;
/** What `sendSignInCode` answers, the same whether or not a code was sent: the id to answer at. */
export type SentSignInCode = ResponseData<'/api/v1/sign-ins/codes', 'post'>;
/** The address the code was sent to and the code. */
export type SignInWithCodeInput = RequestBody<'/api/v1/sign-ins/codes/{id}', 'post'>;
/** What a sign-in code's link carries: `<ui>#/sign-in/link/<signInCodeId>/<token>`. */
export type SignInLinkInput = RequestBody<'/api/v1/sign-ins/links', 'post'>;
/** What the link's page shows before Continue: the masked address, and whether this browser asked. */
export type SignInLinkLookup = ResponseData<'/api/v1/sign-ins/links/lookups', 'post'>;
/** Where a sign-in code stands, for the browser that asked for it. */
export type SignInCodeStatus = ResponseData<'/api/v1/sign-ins/codes/{id}/status', 'get'>['status'];
export type SessionContext = ResponseData<'/api/v1/session/context', 'get'>;
export type SignInHistoryEntry = Item<ResponseData<'/api/v1/sign-ins/history', 'get'>>;
export type StepUpInput = RequestBody<'/api/v1/step-ups', 'post'>;
export type StepUpChallenge = ResponseData<'/api/v1/step-ups', 'post'>;
export type ConfirmStepUpInput = RequestBody<'/api/v1/step-ups/confirmations', 'post'>;
export type Elevation = ResponseData<'/api/v1/step-ups/confirmations', 'post'>;
export type ProviderStepUpInput = RequestBody<'/api/v1/step-ups/providers', 'post'>;
export type ProviderNonce = ResponseData<'/api/v1/provider-nonces', 'post'>;
export type SignInMethod = Item<ResponseData<'/api/v1/sign-in-methods', 'get'>>;
export type AddSignInMethodInput = RequestBody<'/api/v1/sign-in-methods', 'post'>;
export type AddSignInMethodResult = ResponseData<'/api/v1/sign-in-methods', 'post'>;
export type ChangePasswordInput = RequestBody<'/api/v1/password-changes', 'post'>;
export type StartPasswordRecoveryInput = RequestBody<'/api/v1/password-recoveries', 'post'>;
export type PasswordRecoveryChallenge = ResponseData<'/api/v1/password-recoveries', 'post'>;
export type ConfirmPasswordRecoveryInput = RequestBody<'/api/v1/password-recoveries/confirmations', 'post'>;
export type SecondFactor = Item<ResponseData<'/api/v1/second-factors', 'get'>>;
export type SecondFactorEnrolment = ResponseData<'/api/v1/second-factors', 'post'>;
export type RecoveryCodeStatus = ResponseData<'/api/v1/recovery-codes', 'get'>;
export type RecoveryCodeBatch = ResponseData<'/api/v1/recovery-codes', 'post'>;
/** Options for navigator.credentials.create (parse with PublicKeyCredential.parseCreationOptionsFromJSON). */
export type PasskeyCreationOptions = ResponseData<'/api/v1/passkeys/options', 'post'>;
export type RegisterPasskeyInput = RequestBody<'/api/v1/passkeys', 'post'>;
export type RegisteredPasskey = ResponseData<'/api/v1/passkeys', 'post'>;
export type PasskeySignInOptionsInput = RequestBody<'/api/v1/sign-ins/passkeys/options', 'post'>;
/** Options for navigator.credentials.get (parse with PublicKeyCredential.parseRequestOptionsFromJSON). */
export type PasskeyRequestOptions = ResponseData<'/api/v1/sign-ins/passkeys/options', 'post'>;
/** `credential.toJSON()` of navigator.credentials.get. */
export type PasskeyAssertionInput = RequestBody<'/api/v1/sign-ins/passkeys', 'post'>;

/** A page of a collection: the items and where the next page starts. */
export interface Page<T> {
  items: T[];
  pageInfo: PageInfo;
}

export interface PageInfo {
  hasNextPage: boolean;
  /** Pass as `after` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** Paging of the list methods. */
export interface PageRequest {
  /** 1 to 100; the service's default is 50. */
  limit?: number;
  /** `pageInfo.nextCursor` of the previous page. */
  after?: string;
  /** Lifetime of the cursors handed out, in seconds (1 to 86400, default 900). */
  cursorTtl?: number;
}

/** One signed-in device (GET /sessions): `current` marks the caller's own session. */
export type DeviceSession = Item<ResponseData<'/api/v1/sessions', 'get'>>;

/** An app holding access to the caller's account through the OpenID Provider (GET /connected-apps). */
export type ConnectedApp = Item<ResponseData<'/api/v1/connected-apps', 'get'>>;

/** Everything the service holds about the caller (GET /account/export). */
export type AccountExport = ResponseData<'/api/v1/account/export', 'get'>;

/** The caller's own account at a glance, identifiers unmasked (GET /account). */
export type AccountOverview = ResponseData<'/api/v1/account', 'get'>;

/** What `updateAccount` takes: the caller's language and name (PATCH /account). */
export type UpdateAccountInput = RequestBody<'/api/v1/account', 'patch'>;

// ---- Organizations (docs/organizations.md) ------------------------------------------------------

/** One organization as the caller sees it: with the caller's role and permissions there. */
export type Organization = components['schemas']['Organization'];
/** What `createOrganization` takes: a name and a unique slug. */
export type CreateOrganizationInput = RequestBody<'/api/v1/organizations', 'post'>;
/** What `updateOrganization` takes: a new name, the second-factor policy, or both. */
export type UpdateOrganizationInput = RequestBody<'/api/v1/organizations/{organizationId}', 'patch'>;
/** One of the caller's organizations (GET /organizations): `active` marks the session's active one. */
export type OrganizationMembership = Item<ResponseData<'/api/v1/organizations', 'get'>>;
/** One member of an organization, named by a masked identifier. */
export type OrganizationMember = Item<ResponseData<'/api/v1/organizations/{organizationId}/members', 'get'>>;
/** A member's role after `setMemberRole` or `transferOwnership`. */
export type MemberRole = ResponseData<
  '/api/v1/organizations/{organizationId}/members/{identityId}/role',
  'put'
>;
/** What `switchOrganization` answers: a new access token carrying the active organization (no refresh token). */
export type OrganizationSwitch = ResponseData<'/api/v1/session/active-organization', 'post'>;
/** What `inviteMember` takes: the identifier form of sign-up and the role. */
export type InviteMemberInput = RequestBody<'/api/v1/organizations/{organizationId}/invitations', 'post'>;
/** A sent invitation: the identifier masked, and how the message was delivered. */
export type SentInvitation = ResponseData<'/api/v1/organizations/{organizationId}/invitations', 'post'>;
/** One pending invitation of an organization. */
export type PendingInvitation = Item<
  ResponseData<'/api/v1/organizations/{organizationId}/invitations', 'get'>
>;
/** What an invitation token names: the organization, the role, and the invited identifier masked. */
export type InvitationLookup = ResponseData<'/api/v1/organization-invitations/lookups', 'post'>;
/** An accepted invitation: the organization joined, with the caller's role there. */
export type InvitationAcceptance = ResponseData<'/api/v1/organization-invitations/acceptances', 'post'>;
/**
 * A domain an organization claims: its normal form, the DNS TXT record that proves it, and whether
 * (and how: `dns` or `operator`) it is verified.
 */
export type OrganizationDomain = ResponseData<'/api/v1/organizations/{organizationId}/domains', 'post'>;
/** A new connection: its type, name, and the IdP's settings (`saml` or `oidc`). */
export type ConnectionInput = RequestBody<'/api/v1/organizations/{organizationId}/connections', 'post'>;
/** A change to a connection: only the fields sent. */
export type ConnectionUpdate = RequestBody<
  '/api/v1/organizations/{organizationId}/connections/{connectionId}',
  'patch'
>;
/**
 * Whether an organization requires SSO for its verified domains, and how many identities turning
 * it on signed out (their sessions and grants ended).
 */
export type SsoRequirement = ResponseData<'/api/v1/organizations/{organizationId}/sso-requirement', 'put'>;
/**
 * An organization's enterprise connection (SAML or OpenID): its IdP settings, whether it is
 * enabled, and for SAML our SP entity id, metadata URL and ACS URL to give the IdP.
 */
export type OrganizationConnection = ResponseData<
  '/api/v1/organizations/{organizationId}/connections',
  'post'
>;
/**
 * A connection test's result (docs/sso.md, "Testing a connection"): what the IdP sent (SAML NameID
 * and attributes, or OpenID claims) and which checks passed. Nobody was signed in.
 */
export type ConnectionTestResult = ResponseData<'/api/v1/sso-tests/results', 'post'>;
/**
 * An organization's SCIM token as listed: its name, who created it and when, when it was revoked
 * and when it was last used (to the minute). Never the token itself.
 */
export type ScimToken = Item<ResponseData<'/api/v1/organizations/{organizationId}/scim-tokens', 'get'>>;
/** A SCIM token just created: the listed fields and `token`, the bearer for /scim/v2, shown once. */
export type CreatedScimToken = ResponseData<'/api/v1/organizations/{organizationId}/scim-tokens', 'post'>;
