import createClient, { type Client } from 'openapi-fetch';
import {
  type IdentityError,
  isIdentityError,
  networkError,
  responseError,
  signedOutError,
} from './errors.js';
import type { paths } from './generated/openapi.js';
import { readClaims } from './jwt.js';
import type {
  AccountExport,
  AccountOverview,
  AddSignInMethodInput,
  AddSignInMethodResult,
  BrowserSessionGrant,
  ChangePasswordInput,
  CompleteSecondFactorInput,
  ConfirmPasswordRecoveryInput,
  ConfirmSignUpInput,
  ConfirmStepUpInput,
  ConnectedApp,
  ConnectionInput,
  ConnectionTestResult,
  ConnectionUpdate,
  CreatedScimToken,
  CreateOrganizationInput,
  DeviceSession,
  Elevation,
  InvitationAcceptance,
  InvitationLookup,
  InviteMemberInput,
  MemberRole,
  Organization,
  OrganizationConnection,
  OrganizationDomain,
  OrganizationMember,
  OrganizationMembership,
  OrganizationSwitch,
  Page,
  PageInfo,
  PageRequest,
  PasskeyAssertionInput,
  PasskeyCreationOptions,
  PasskeyRequestOptions,
  PasskeySignInOptionsInput,
  PasswordRecoveryChallenge,
  PendingInvitation,
  ProviderNonce,
  ProviderStepUpInput,
  RecoveryCodeBatch,
  RecoveryCodeStatus,
  RegisteredPasskey,
  RegisterPasskeyInput,
  RequestBody,
  ResponseData,
  ScimToken,
  SecondFactor,
  SecondFactorEnrolment,
  SendSignInCodeInput,
  SentInvitation,
  SentSignInCode,
  SessionContext,
  SessionGrant,
  SignInCodeStatus,
  SignInHistoryEntry,
  SignInInput,
  SignInLinkInput,
  SignInLinkLookup,
  SignInMethod,
  SignInResult,
  SignInWithCodeInput,
  SignUpInput,
  SignUpResult,
  SsoRequirement,
  StartPasswordRecoveryInput,
  StepUpChallenge,
  StepUpInput,
  UpdateAccountInput,
  UpdateOrganizationInput,
} from './types.js';

/** A provider offering redirect sign-in ("Continue with …"): GET /providers. */
export type IdentityProvider = ResponseData<'/api/v1/providers', 'get'>[number];
/** What `startProviderFlow` takes: the provider, `sign_in` or `link`, and where the browser comes back. */
export type ProviderFlowInput = RequestBody<'/api/v1/provider-flows', 'post'>;
/** A started flow: send the browser to `authorizationUrl` (`location.assign`) before `expiresAt`. */
export type ProviderFlow = ResponseData<'/api/v1/provider-flows', 'post'>;

/** How failed calls are repeated. Only reads and idempotent writes are ever repeated. */
export interface RetryOptions {
  /** Repeats after the first attempt (default 2). */
  retries?: number;
  /**
   * The longest wait before a repeat, in seconds (default 10). A Retry-After longer than this is not
   * waited for: the error is thrown with its `retryAfter` for the caller to show.
   */
  maxDelaySeconds?: number;
  /** First back-off step when the service gave no Retry-After, in milliseconds (default 250). */
  baseDelayMs?: number;
}

export interface IdentityClientOptions {
  /** The service's origin, e.g. `https://id.example.com` (the `/api/v1` prefix is added by the client). */
  baseUrl: string;
  /** A fetch implementation (default: the global fetch, looked up at each call). */
  fetch?: (request: Request) => Promise<Response>;
  retry?: RetryOptions;
}

/** Per-call options of the methods that need a session. */
export interface CallOptions {
  /**
   * Use this access token instead of the attached session (a server acting for a user). With it,
   * a 401 is thrown as it is: there is nothing to renew.
   */
  accessToken?: string;
  signal?: AbortSignal;
}

/** Why a session holder is told its session ended. */
export type EndReason =
  | 'signed_out'
  | 'signed_out_everywhere'
  | 'renewal_refused'
  | 'elsewhere'
  | 'account_deleted';

/**
 * What an `IdentityClient` asks of the holder of its session (`SessionManager` implements it; an
 * application may supply its own).
 */
export interface SessionLink {
  /** A live access token (renewing first when it is about to expire), or undefined when signed out. */
  accessToken(): Promise<string | undefined>;
  /**
   * The service refused `failed` with 401: a fresh token, or undefined. `renewed` says whether this
   * call renewed the session itself (then another refusal is final) or adopted a newer stored one.
   */
  recover(failed: string): Promise<{ accessToken: string; renewed: boolean } | undefined>;
  /** A sign-in produced a session. */
  grantReceived(grant: SessionGrant): Promise<void>;
  /** The session ended at the service. */
  ended(reason: EndReason): Promise<void>;
  /**
   * A new access token for the same session, its refresh token unchanged (`switchOrganization`):
   * hold it instead of `replacing`, the token the switch was made with. Optional: a holder without it keeps its token, and its next
   * renewal carries the active organization all the same.
   */
  accessTokenReplaced?(grant: OrganizationSwitch, replacing: string): Promise<void>;
}

interface Outcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

type Envelope<T> = { data: T };
type Collection<T> = { data: T[]; meta: { pageInfo: PageInfo } };

const API = '/api/v1';

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function toPage<T>(body: Collection<T>): Page<T> {
  return { items: body.data, pageInfo: body.meta.pageInfo };
}

function pageQuery(page: PageRequest | undefined): PageRequest {
  const query: PageRequest = {};
  if (page?.limit !== undefined) query.limit = page.limit;
  if (page?.after !== undefined) query.after = page.after;
  if (page?.cursorTtl !== undefined) query.cursorTtl = page.cursorTtl;
  return query;
}

/**
 * One method per business task of the identity service. Methods answer the route's `data` (or
 * nothing for a 204) and throw `IdentityError` for every refusal.
 *
 * Methods that need a session take their access token from the attached `SessionLink` (see
 * `SessionManager`), renewing on a 401 once, or from `CallOptions.accessToken`. Elevated methods
 * take the elevation token from `confirmStepUp` (or the provider and passkey step-ups) first.
 *
 * Retries: reads, and the writes whose repetition has the same effect and answer (the sign-outs,
 * where a session already ended counts as signed out), are repeated when the error is `retryable`,
 * after Retry-After when it is given and no longer than `RetryOptions.maxDelaySeconds`. Every other
 * write is attempted once.
 */
export class IdentityClient {
  private readonly api: Client<paths>;
  private readonly baseUrl: string;
  private readonly fetchImpl: ((request: Request) => Promise<Response>) | undefined;
  private readonly retries: number;
  private readonly maxDelayMs: number;
  private readonly baseDelayMs: number;
  private session: SessionLink | undefined;

  constructor(options: IdentityClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch;
    this.retries = options.retry?.retries ?? 2;
    this.maxDelayMs = (options.retry?.maxDelaySeconds ?? 10) * 1000;
    this.baseDelayMs = options.retry?.baseDelayMs ?? 250;
    // Looked up at each call, unbound: a browser refuses `fetch` called on another object.
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: (request) => this.doFetch(request) });
  }

  /** Attaches the holder of the session the authenticated methods act for (`SessionManager` does this). */
  attachSession(session: SessionLink | undefined): void {
    this.session = session;
  }

  // ---- Registration ---------------------------------------------------------------------------

  /** Registers an identifier and a password; a code goes to the identifier. POST /sign-ups. */
  async signUp(input: SignUpInput, options?: { signal?: AbortSignal }): Promise<SignUpResult> {
    const body = await this.send<Envelope<SignUpResult>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ups`, { body: input, signal: options?.signal }),
    );
    return body.data;
  }

  /** Confirms a registration with the code sent and the password of the registration. */
  async confirmSignUp(input: ConfirmSignUpInput, options?: { signal?: AbortSignal }): Promise<void> {
    await this.send(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ups/confirmations`, { body: input, signal: options?.signal }),
    );
  }

  // ---- Sign-in and the session ----------------------------------------------------------------

  /**
   * Signs in with a password or a provider ID token: a session grant, or a second-factor ticket to
   * complete with `completeSecondFactor`. A grant is handed to the attached session.
   */
  async signIn(input: SignInInput, options?: { signal?: AbortSignal }): Promise<SignInResult> {
    const body = await this.send<Envelope<SignInResult>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ins`, { body: input, signal: options?.signal }),
    );
    if (body.data.kind === 'session') await this.session?.grantReceived(body.data);
    return body.data;
  }

  /**
   * Sends a one-time sign-in code to a verified address (SIGN_IN_CODES). The answer is the same
   * whether or not a code was sent; keep its `signInCodeId` for `signInWithCode`.
   */
  async sendSignInCode(
    input: SendSignInCodeInput,
    options?: { signal?: AbortSignal },
  ): Promise<SentSignInCode> {
    const body = await this.send<Envelope<SentSignInCode>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ins/codes`, { body: input, signal: options?.signal }),
    );
    return body.data;
  }

  /**
   * Signs in with the code `sendSignInCode` sent: a session grant, or a second-factor ticket (a code
   * is one factor), exactly as `signIn`. A grant is handed to the attached session.
   */
  async signInWithCode(
    id: string,
    input: SignInWithCodeInput,
    options?: { signal?: AbortSignal },
  ): Promise<SignInResult> {
    const body = await this.send<Envelope<SignInResult>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ins/codes/{id}`, {
        params: { path: { id } },
        body: input,
        signal: options?.signal,
      }),
    );
    if (body.data.kind === 'session') await this.session?.grantReceived(body.data);
    return body.data;
  }

  /**
   * What a sign-in code's link shows before anyone presses Continue: the masked address and whether
   * this browser asked for the code. Reads only: opening a link signs nobody in.
   */
  async lookUpSignInLink(
    input: SignInLinkInput,
    options?: { signal?: AbortSignal },
  ): Promise<SignInLinkLookup> {
    const body = await this.send<Envelope<SignInLinkLookup>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ins/links/lookups`, { body: input, signal: options?.signal }),
    );
    return body.data;
  }

  /**
   * Signs in with a sign-in code's link (the press of Continue): a session grant, or a second-factor
   * ticket, exactly as `signInWithCode`; the code and its link are one use between them.
   */
  async signInWithLink(input: SignInLinkInput, options?: { signal?: AbortSignal }): Promise<SignInResult> {
    const body = await this.send<Envelope<SignInResult>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ins/links`, { body: input, signal: options?.signal }),
    );
    if (body.data.kind === 'session') await this.session?.grantReceived(body.data);
    return body.data;
  }

  /**
   * Where the sign-in code `id` stands, for the browser that asked for it (its cookie): `completed`
   * once it signed in here, `completed_elsewhere` once its link signed in another browser, else
   * `pending`.
   */
  async signInCodeStatus(id: string, options?: { signal?: AbortSignal }): Promise<SignInCodeStatus> {
    const body = await this.send<Envelope<{ status: SignInCodeStatus }>>(false, options?.signal, () =>
      this.api.GET(`${API}/sign-ins/codes/{id}/status`, {
        params: { path: { id } },
        signal: options?.signal,
      }),
    );
    return body.data.status;
  }

  /** Completes a ticket with an authenticator code (`code`) or a recovery code (`recoveryCode`). */
  async completeSecondFactor(
    input: CompleteSecondFactorInput,
    options?: { signal?: AbortSignal },
  ): Promise<SessionGrant> {
    const body = await this.send<Envelope<SessionGrant>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ins/second-factors`, { body: input, signal: options?.signal }),
    );
    await this.session?.grantReceived(body.data);
    return body.data;
  }

  /**
   * Exchanges a refresh token for a new pair. Never repeated: a second presentation of the same
   * token is a replay, and the service ends the session. With a `SessionManager`, call its
   * `renew()` instead, which shares one renewal between calls and tabs.
   */
  async renew(refreshToken: string, options?: { signal?: AbortSignal }): Promise<SessionGrant> {
    const body = await this.send<Envelope<SessionGrant>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ins/renewals`, { body: { refreshToken }, signal: options?.signal }),
    );
    return body.data;
  }

  // ---- The hosted pages' cookie session (same origin only) ------------------------------------

  /**
   * Hands a sign-in's refresh token to the browser's HttpOnly session cookie: the service rotates
   * it, sets the cookie and answers the access token only. POST /browser-session. Never repeated
   * (the token is spent by the first attempt). With a `BrowserSessionManager`, sign-ins are handed
   * over by the manager itself.
   */
  async handOverBrowserSession(
    refreshToken: string,
    options?: { signal?: AbortSignal },
  ): Promise<BrowserSessionGrant> {
    const body = await this.send<Envelope<BrowserSessionGrant>>(false, options?.signal, () =>
      this.api.POST(`${API}/browser-session`, {
        body: { refreshToken },
        credentials: 'same-origin',
        signal: options?.signal,
      }),
    );
    return body.data;
  }

  /**
   * Renews with the browser's session cookie (which the service rotates): a new access token.
   * POST /browser-session/renewals. Never repeated; `identity.renewal_refused` when there is no
   * live cookie session.
   */
  async renewBrowserSession(options?: { signal?: AbortSignal }): Promise<BrowserSessionGrant> {
    const body = await this.send<Envelope<BrowserSessionGrant>>(false, options?.signal, () =>
      this.api.POST(`${API}/browser-session/renewals`, {
        credentials: 'same-origin',
        signal: options?.signal,
      }),
    );
    return body.data;
  }

  /** Ends the browser's cookie session and clears the cookie (done even without one). */
  async endBrowserSession(options?: { signal?: AbortSignal }): Promise<void> {
    await this.send(true, options?.signal, () =>
      this.api.POST(`${API}/browser-session/sign-outs`, {
        credentials: 'same-origin',
        signal: options?.signal,
      }),
    );
  }

  /** Ends this session. A session already ended counts as signed out. */
  async signOut(options?: CallOptions): Promise<void> {
    await this.endSession(`${API}/sign-outs`, 'signed_out', options);
  }

  /** Ends every session of the identity, this one included. */
  async signOutEverywhere(options?: CallOptions): Promise<void> {
    await this.endSession(`${API}/sign-outs/everywhere`, 'signed_out_everywhere', options);
  }

  /**
   * Ends every other session of the identity; this one keeps working. POST /sign-outs/others.
   */
  async signOutOthers(options?: CallOptions): Promise<void> {
    await this.authed(true, options, (headers, signal) =>
      this.api.POST(`${API}/sign-outs/others`, { headers, signal }),
    );
  }

  /** The caller's identity, masked identifiers and methods. GET /session/context. */
  async context(options?: CallOptions): Promise<SessionContext> {
    const body = await this.authed<Envelope<SessionContext>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/session/context`, { headers, signal }),
    );
    return body.data;
  }

  /** The caller's sign-in attempts, newest first. */
  async history(page?: PageRequest, options?: CallOptions): Promise<Page<SignInHistoryEntry>> {
    const body = await this.authed<Collection<SignInHistoryEntry>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/sign-ins/history`, { params: { query: pageQuery(page) }, headers, signal }),
    );
    return toPage(body);
  }

  // ---- Devices ----------------------------------------------------------------------------------

  /** The identity's live sessions, one per signed-in device. GET /sessions. */
  async listSessions(page?: PageRequest, options?: CallOptions): Promise<Page<DeviceSession>> {
    const body = await this.authed<Collection<DeviceSession>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/sessions`, { params: { query: pageQuery(page) }, headers, signal }),
    );
    return toPage(body);
  }

  /**
   * Ends one session of the identity (another device, or this one: then the attached session is
   * signed out too). An unknown or already ended id is refused with 404.
   */
  async revokeSession(id: string, options?: CallOptions): Promise<void> {
    let bearer: string | undefined;
    // Not repeated: a repeat after a lost answer would be refused (404) although the session ended.
    await this.authed(false, options, (headers, signal) => {
      bearer = headers.authorization;
      return this.api.POST(`${API}/sessions/{id}/revocations`, { params: { path: { id } }, headers, signal });
    });
    const own = bearer !== undefined && readClaims(bearer.slice('Bearer '.length)).sid === id;
    if (own && !options?.accessToken) await this.session?.ended('signed_out');
  }

  /**
   * The apps that hold access to the account through the service's OpenID Provider (a remembered
   * consent or a live grant). GET /connected-apps.
   */
  async listConnectedApps(page?: PageRequest, options?: CallOptions): Promise<Page<ConnectedApp>> {
    const body = await this.authed<Collection<ConnectedApp>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/connected-apps`, { params: { query: pageQuery(page) }, headers, signal }),
    );
    return toPage(body);
  }

  /**
   * Revokes an app's access: its remembered consent and every live grant end (the app is told by
   * back-channel logout). POST /connected-apps/{clientId}/revocations.
   */
  async revokeConnectedApp(clientId: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.POST(`${API}/connected-apps/{clientId}/revocations`, {
        params: { path: { clientId } },
        headers,
        signal,
      }),
    );
  }

  /**
   * The caller's own account at a glance: identifiers unmasked, and how it is protected (password,
   * authenticators, passkeys, recovery codes, linked providers). GET /account.
   */
  async getAccount(options?: CallOptions): Promise<AccountOverview> {
    const body = await this.authed<Envelope<AccountOverview>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/account`, { headers, signal }),
    );
    return body.data;
  }

  /**
   * Changes the caller's own settings: their language (`en` or `fr`), which every email and SMS
   * the service sends them is written in, and their name (`givenName`, `familyName`,
   * `displayName`: each trimmed, at most 100 characters; null or `''` clears one, an absent one is
   * kept). Idempotent. PATCH /account.
   */
  async updateAccount(input: UpdateAccountInput, options?: CallOptions): Promise<AccountOverview> {
    const body = await this.authed<Envelope<AccountOverview>>(true, options, (headers, signal) =>
      this.api.PATCH(`${API}/account`, { body: input, headers, signal }),
    );
    return body.data;
  }

  /**
   * Sets the caller's picture from an image file's bytes (PNG, JPEG, WebP or GIF, at most 5 MB).
   * The service judges the bytes by their content, not by `contentType` (a File's own type is used
   * when none is given): anything else is `identity.picture_unusable` (422), more than 5 MB
   * `request.body_too_large` (413). It keeps a 256×256 WebP without metadata under a new address,
   * the answer's `picture`. PUT /account/picture.
   */
  async setPicture(
    image: Blob | ArrayBuffer | Uint8Array,
    options?: CallOptions & { contentType?: string },
  ): Promise<AccountOverview> {
    const contentType =
      options?.contentType ?? (image instanceof Blob && image.type ? image.type : 'application/octet-stream');
    const body = await this.authed<Envelope<AccountOverview>>(true, options, (headers, signal) =>
      this.api.PUT(`${API}/account/picture`, {
        // The bytes as they are: openapi-fetch would otherwise serialize the body as JSON.
        body: image as unknown as string,
        bodySerializer: (bytes: unknown) => bytes as BodyInit,
        headers: { ...headers, 'content-type': contentType },
        signal,
      }),
    );
    return body.data;
  }

  /** Removes the caller's picture (none is not an error). DELETE /account/picture. */
  async removePicture(options?: CallOptions): Promise<void> {
    await this.authed(true, options, (headers, signal) =>
      this.api.DELETE(`${API}/account/picture`, { headers, signal }),
    );
  }

  /** Everything the service holds about the caller, as JSON. GET /account/export. */
  async exportAccount(options?: CallOptions): Promise<AccountExport> {
    const body = await this.authed<Envelope<AccountExport>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/account/export`, { headers, signal }),
    );
    return body.data;
  }

  /**
   * Deletes the caller's account for good: the operator's erasure, acted by its owner. Needs an
   * elevation of this session and one of the account's verified identifiers typed by the person
   * (`DELETE` when it has none). POST /account/deletions. Never repeated (a repeat after a lost
   * answer is refused with 401: the session ended with the account). The session is forgotten
   * (`account_deleted`); the answer also clears the hosted pages' cookie. The last owner of an
   * organization with other members: `identity.account_deletion_last_owner`.
   */
  async deleteAccount(elevationToken: string, identifier: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.POST(`${API}/account/deletions`, {
        body: { identifier },
        headers: elevated(headers, elevationToken),
        credentials: 'same-origin',
        signal,
      }),
    );
    if (!options?.accessToken) await this.session?.ended('account_deleted');
  }

  // ---- Step-up ----------------------------------------------------------------------------------

  /** Starts a step-up: a challenge on the strongest channel the identity has (or the one asked). */
  async stepUp(input: StepUpInput = {}, options?: CallOptions): Promise<StepUpChallenge> {
    const body = await this.authed<Envelope<StepUpChallenge>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/step-ups`, { body: input, headers, signal }),
    );
    return body.data;
  }

  /** Answers a step-up challenge: the elevation token for the elevated methods. */
  async confirmStepUp(input: ConfirmStepUpInput, options?: CallOptions): Promise<Elevation> {
    const body = await this.authed<Envelope<Elevation>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/step-ups/confirmations`, { body: input, headers, signal }),
    );
    return body.data;
  }

  /** Steps up with a provider ID token whose nonce came from `issueProviderNonce`. */
  async stepUpWithProvider(input: ProviderStepUpInput, options?: CallOptions): Promise<Elevation> {
    const body = await this.authed<Envelope<Elevation>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/step-ups/providers`, { body: input, headers, signal }),
    );
    return body.data;
  }

  /** Request options for a passkey step-up (navigator.credentials.get). */
  async stepUpWithPasskeyOptions(options?: CallOptions): Promise<PasskeyRequestOptions> {
    const body = await this.authed<Envelope<PasskeyRequestOptions>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/step-ups/passkeys/options`, { headers, signal }),
    );
    return body.data;
  }

  /** Finishes a passkey step-up with `credential.toJSON()`: the elevation token. */
  async stepUpWithPasskey(input: PasskeyAssertionInput, options?: CallOptions): Promise<Elevation> {
    const body = await this.authed<Envelope<Elevation>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/step-ups/passkeys`, { body: input, headers, signal }),
    );
    return body.data;
  }

  /** A single-use nonce for provider sign-in or step-up; send hex(SHA-256(nonce)) to the provider. */
  async issueProviderNonce(options?: { signal?: AbortSignal }): Promise<ProviderNonce> {
    const body = await this.send<Envelope<ProviderNonce>>(false, options?.signal, () =>
      this.api.POST(`${API}/provider-nonces`, { signal: options?.signal }),
    );
    return body.data;
  }

  // ---- Redirect sign-in through upstream providers ("Continue with …") --------------------------

  /** The providers offering redirect sign-in, in configuration order. GET /providers. */
  async listProviders(options?: { signal?: AbortSignal }): Promise<IdentityProvider[]> {
    const body = await this.send<Envelope<IdentityProvider[]>>(true, options?.signal, () =>
      this.api.GET(`${API}/providers`, { signal: options?.signal }),
    );
    return body.data;
  }

  /**
   * Starts a redirect flow at an upstream provider: the answer's `authorizationUrl` is where the
   * browser goes next (`location.assign`). The service sets the flow's cookie on this browser, so
   * call it from a page of the service's own origin (`PUBLIC_ORIGIN`; another Origin is refused).
   * The provider's answer comes back to `returnTo` (one of the hosted pages' routes) with
   * `provider` and `handoff` (exchange it with `exchangeProviderHandoff`), `result=linked`, or
   * `error` in the hash's query. `intent: "link"` connects the provider to the signed-in identity
   * and needs an elevation token; `intent: "step_up"` confirms it is the signed-in person with a
   * provider already linked (the handoff then goes to `exchangeProviderStepUp`). POST
   * /provider-flows. Never repeated.
   */
  async startProviderFlow(
    input: ProviderFlowInput,
    elevationToken?: string,
    options?: CallOptions,
  ): Promise<ProviderFlow> {
    if (input.intent === 'link') {
      if (!elevationToken) throw new TypeError('startProviderFlow: a link needs an elevation token');
      const body = await this.authed<Envelope<ProviderFlow>>(false, options, (headers, signal) =>
        this.api.POST(`${API}/provider-flows`, {
          body: input,
          headers: elevated(headers, elevationToken),
          credentials: 'same-origin',
          signal,
        }),
      );
      return body.data;
    }
    if (input.intent === 'step_up') {
      const body = await this.authed<Envelope<ProviderFlow>>(false, options, (headers, signal) =>
        this.api.POST(`${API}/provider-flows`, { body: input, headers, credentials: 'same-origin', signal }),
      );
      return body.data;
    }
    const body = await this.send<Envelope<ProviderFlow>>(false, options?.signal, () =>
      this.api.POST(`${API}/provider-flows`, {
        body: input,
        credentials: 'same-origin',
        signal: options?.signal,
      }),
    );
    return body.data;
  }

  /**
   * Exchanges the one-time `handoff` code a provider flow came back with, in the browser that
   * started the flow (its cookie goes along): a session grant (handed to the attached session) or a
   * second-factor ticket, exactly as `signIn`. Single use, two minutes; every refusal is 401
   * identity.sign_in_refused. POST /provider-handoffs. Never repeated.
   */
  async exchangeProviderHandoff(code: string, options?: { signal?: AbortSignal }): Promise<SignInResult> {
    const body = await this.send<Envelope<SignInResult>>(false, options?.signal, () =>
      this.api.POST(`${API}/provider-handoffs`, {
        body: { code },
        credentials: 'same-origin',
        signal: options?.signal,
      }),
    );
    if (body.data.kind === 'session') await this.session?.grantReceived(body.data);
    return body.data;
  }

  /**
   * Starts enterprise sign-in (SAML) for an email address or an organization (id or slug): the
   * IdP's URL to send the browser to, the flow bound to this browser by a cookie. `returnTo` is the
   * hosted page the ACS comes back to. No enabled connection for it: 422 identity.sso_unavailable
   * (the same whether or not anyone holds the address). POST /sign-ins/sso.
   */
  async startSsoSignIn(
    input: { email: string; returnTo: string } | { organization: string; returnTo: string },
    options?: { signal?: AbortSignal },
  ): Promise<{ redirectUrl: string; expiresAt: string }> {
    const body = await this.send<Envelope<{ redirectUrl: string; expiresAt: string }>>(
      false,
      options?.signal,
      () =>
        this.api.POST(`${API}/sign-ins/sso`, {
          body: input,
          credentials: 'same-origin',
          signal: options?.signal,
        }),
    );
    return body.data;
  }

  /**
   * The organization and connection a SAML handoff code signs into, without spending it (the
   * page that asks the person to continue an IdP-initiated sign-in). POST /sso-handoffs/previews.
   */
  async previewSsoHandoff(
    code: string,
    options?: { signal?: AbortSignal },
  ): Promise<{ organization: { id: string; name: string }; connection: { name: string } }> {
    const body = await this.send<
      Envelope<{ organization: { id: string; name: string }; connection: { name: string } }>
    >(false, options?.signal, () =>
      this.api.POST(`${API}/sso-handoffs/previews`, {
        body: { code },
        credentials: 'same-origin',
        signal: options?.signal,
      }),
    );
    return body.data;
  }

  /**
   * Exchanges the handoff code of a completed SAML sign-in: a session (handed to the session
   * store) or a second-factor ticket, exactly as `signIn`. Single use, two minutes; every refusal
   * is 401 identity.sign_in_refused. POST /sso-handoffs. Never repeated.
   */
  async exchangeSsoHandoff(code: string, options?: { signal?: AbortSignal }): Promise<SignInResult> {
    const body = await this.send<Envelope<SignInResult>>(false, options?.signal, () =>
      this.api.POST(`${API}/sso-handoffs`, {
        body: { code },
        credentials: 'same-origin',
        signal: options?.signal,
      }),
    );
    if (body.data.kind === 'session') await this.session?.grantReceived(body.data);
    return body.data;
  }

  /**
   * Exchanges the handoff code of a `step_up` flow, for the signed-in session that started it: an
   * elevation token, as `confirmStepUp`. An identity holding a second factor is refused with 422
   * identity.step_up_unavailable (an upstream account is one factor). POST /provider-handoffs.
   * Never repeated.
   */
  async exchangeProviderStepUp(code: string, options?: CallOptions): Promise<Elevation> {
    const body = await this.authed<Envelope<Elevation>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/provider-handoffs`, {
        body: { code },
        headers,
        credentials: 'same-origin',
        signal,
      }),
    );
    return body.data;
  }

  // ---- Sign-in methods ------------------------------------------------------------------------

  /** The identity's verified ways in (identifiers, password, providers, passkeys). */
  async listSignInMethods(page?: PageRequest, options?: CallOptions): Promise<Page<SignInMethod>> {
    const body = await this.authed<Collection<SignInMethod>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/sign-in-methods`, { params: { query: pageQuery(page) }, headers, signal }),
    );
    return toPage(body);
  }

  /** Adds an identifier (a code is sent; confirm it) or links a provider (at once). Elevated. */
  async addSignInMethod(
    elevationToken: string,
    input: AddSignInMethodInput,
    options?: CallOptions,
  ): Promise<AddSignInMethodResult> {
    const body = await this.authed<Envelope<AddSignInMethodResult>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/sign-in-methods`, {
        body: input,
        headers: elevated(headers, elevationToken),
        signal,
      }),
    );
    return body.data;
  }

  /** Confirms an added identifier with the code sent to it. Elevated. */
  async confirmSignInMethod(elevationToken: string, code: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.POST(`${API}/sign-in-methods/confirmations`, {
        body: { code },
        headers: elevated(headers, elevationToken),
        signal,
      }),
    );
  }

  /** Removes a way in; refused with identity.last_sign_in_method when none would remain. Elevated. */
  async removeSignInMethod(elevationToken: string, id: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.POST(`${API}/sign-in-methods/{id}/removals`, {
        params: { path: { id } },
        headers: elevated(headers, elevationToken),
        signal,
      }),
    );
  }

  // ---- Passwords --------------------------------------------------------------------------------

  /** Changes the password; every other session of the identity ends. */
  async changePassword(input: ChangePasswordInput, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.POST(`${API}/password-changes`, { body: input, headers, signal }),
    );
  }

  /** Sends a recovery code to the identifier (the answer is the same whether or not it has an account). */
  async startPasswordRecovery(
    input: StartPasswordRecoveryInput,
    options?: { signal?: AbortSignal },
  ): Promise<PasswordRecoveryChallenge> {
    const body = await this.send<Envelope<PasswordRecoveryChallenge>>(false, options?.signal, () =>
      this.api.POST(`${API}/password-recoveries`, { body: input, signal: options?.signal }),
    );
    return body.data;
  }

  /** Sets a new password with the recovery code; every session of the identity ends. */
  async confirmPasswordRecovery(
    input: ConfirmPasswordRecoveryInput,
    options?: { signal?: AbortSignal },
  ): Promise<void> {
    await this.send(false, options?.signal, () =>
      this.api.POST(`${API}/password-recoveries/confirmations`, { body: input, signal: options?.signal }),
    );
  }

  // ---- Second factors and recovery codes --------------------------------------------------------

  /** The identity's verified authenticators. */
  async listSecondFactors(page?: PageRequest, options?: CallOptions): Promise<Page<SecondFactor>> {
    const body = await this.authed<Collection<SecondFactor>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/second-factors`, { params: { query: pageQuery(page) }, headers, signal }),
    );
    return toPage(body);
  }

  /** Starts an authenticator enrolment: the secret and otpauth URI, shown once. Elevated. */
  async enrolSecondFactor(
    elevationToken: string,
    input: { label?: string } = {},
    options?: CallOptions,
  ): Promise<SecondFactorEnrolment> {
    const body = await this.authed<Envelope<SecondFactorEnrolment>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/second-factors`, {
        body: input,
        headers: elevated(headers, elevationToken),
        signal,
      }),
    );
    return body.data;
  }

  /** Confirms the pending enrolment with the authenticator's current code. */
  async confirmSecondFactor(code: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.POST(`${API}/second-factors/confirmations`, { body: { code }, headers, signal }),
    );
  }

  /** Removes an authenticator. Elevated. */
  async removeSecondFactor(elevationToken: string, id: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.POST(`${API}/second-factors/{id}/removals`, {
        params: { path: { id } },
        headers: elevated(headers, elevationToken),
        signal,
      }),
    );
  }

  /** How many recovery codes remain (never a code). */
  async recoveryCodeStatus(options?: CallOptions): Promise<RecoveryCodeStatus> {
    const body = await this.authed<Envelope<RecoveryCodeStatus>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/recovery-codes`, { headers, signal }),
    );
    return body.data;
  }

  /** Issues ten new recovery codes, shown once; every earlier live code stops working. Elevated. */
  async issueRecoveryCodes(elevationToken: string, options?: CallOptions): Promise<RecoveryCodeBatch> {
    const body = await this.authed<Envelope<RecoveryCodeBatch>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/recovery-codes`, { headers: elevated(headers, elevationToken), signal }),
    );
    return body.data;
  }

  // ---- Passkeys ---------------------------------------------------------------------------------

  /** Creation options for a new passkey (navigator.credentials.create). Elevated. */
  async passkeyRegistrationOptions(
    elevationToken: string,
    options?: CallOptions,
  ): Promise<PasskeyCreationOptions> {
    const body = await this.authed<Envelope<PasskeyCreationOptions>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/passkeys/options`, { headers: elevated(headers, elevationToken), signal }),
    );
    return body.data;
  }

  /** Registers the passkey from `credential.toJSON()`. Elevated. */
  async registerPasskey(
    elevationToken: string,
    input: RegisterPasskeyInput,
    options?: CallOptions,
  ): Promise<RegisteredPasskey> {
    const body = await this.authed<Envelope<RegisteredPasskey>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/passkeys`, { body: input, headers: elevated(headers, elevationToken), signal }),
    );
    return body.data;
  }

  /** Request options for a passkey sign-in; with no identifier, any discoverable passkey answers. */
  async passkeySignInOptions(
    input: PasskeySignInOptionsInput = {},
    options?: { signal?: AbortSignal },
  ): Promise<PasskeyRequestOptions> {
    const body = await this.send<Envelope<PasskeyRequestOptions>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ins/passkeys/options`, { body: input, signal: options?.signal }),
    );
    return body.data;
  }

  /** Signs in with `credential.toJSON()` of navigator.credentials.get; the grant goes to the session. */
  async signInWithPasskey(
    input: PasskeyAssertionInput,
    options?: { signal?: AbortSignal },
  ): Promise<SessionGrant> {
    const body = await this.send<Envelope<SessionGrant>>(false, options?.signal, () =>
      this.api.POST(`${API}/sign-ins/passkeys`, { body: input, signal: options?.signal }),
    );
    await this.session?.grantReceived(body.data);
    return body.data;
  }

  // ---- Organizations (docs/organizations.md) ----------------------------------------------------

  /**
   * Creates an organization; the caller becomes its owner. POST /organizations. Refused with
   * `organization.slug_taken`, or `organization.creation_disabled` where operators create them.
   */
  async createOrganization(input: CreateOrganizationInput, options?: CallOptions): Promise<Organization> {
    const body = await this.authed<Envelope<Organization>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/organizations`, { body: input, headers, signal }),
    );
    return body.data;
  }

  /** The caller's organizations, newest membership first, the session's active one marked. */
  async listOrganizations(page?: PageRequest, options?: CallOptions): Promise<Page<OrganizationMembership>> {
    const body = await this.authed<Collection<OrganizationMembership>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/organizations`, { params: { query: pageQuery(page) }, headers, signal }),
    );
    return toPage(body);
  }

  /** One organization the caller belongs to, with the caller's role and permissions there. */
  async getOrganization(organizationId: string, options?: CallOptions): Promise<Organization> {
    const body = await this.authed<Envelope<Organization>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/organizations/{organizationId}`, {
        params: { path: { organizationId } },
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /** Renames an organization or sets its second-factor policy (`organization:update`). */
  async updateOrganization(
    organizationId: string,
    input: UpdateOrganizationInput,
    options?: CallOptions,
  ): Promise<Organization> {
    const body = await this.authed<Envelope<Organization>>(false, options, (headers, signal) =>
      this.api.PATCH(`${API}/organizations/{organizationId}`, {
        params: { path: { organizationId } },
        body: input,
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /** The members of an organization, newest first, each named by a masked identifier (`members:read`). */
  async listMembers(
    organizationId: string,
    page?: PageRequest,
    options?: CallOptions,
  ): Promise<Page<OrganizationMember>> {
    const body = await this.authed<Collection<OrganizationMember>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/organizations/{organizationId}/members`, {
        params: { path: { organizationId }, query: pageQuery(page) },
        headers,
        signal,
      }),
    );
    return toPage(body);
  }

  /**
   * Changes a member's role (`members:manage`; only an owner grants or takes `owner`). Refused with
   * `organization.last_owner` when it would leave no owner. Repeated on a retryable error: setting
   * the same role again changes nothing and answers the same.
   */
  async setMemberRole(
    organizationId: string,
    identityId: string,
    role: string,
    options?: CallOptions,
  ): Promise<MemberRole> {
    const body = await this.authed<Envelope<MemberRole>>(true, options, (headers, signal) =>
      this.api.PUT(`${API}/organizations/{organizationId}/members/{identityId}/role`, {
        params: { path: { organizationId, identityId } },
        body: { role },
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /** Removes a member (`members:manage`); the last owner cannot be removed. */
  async removeMember(organizationId: string, identityId: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.DELETE(`${API}/organizations/{organizationId}/members/{identityId}`, {
        params: { path: { organizationId, identityId } },
        headers,
        signal,
      }),
    );
  }

  /**
   * Leaves an organization (the caller's own membership; the last owner cannot leave). Sessions
   * acting in it act in none from then on.
   */
  async leaveOrganization(organizationId: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) => {
      const identityId = readClaims(headers.authorization.slice('Bearer '.length)).sub ?? '';
      return this.api.DELETE(`${API}/organizations/{organizationId}/members/{identityId}`, {
        params: { path: { organizationId, identityId } },
        headers,
        signal,
      });
    });
  }

  /** Hands ownership to another member: they become owner, the caller admin. Elevated. */
  async transferOwnership(
    elevationToken: string,
    organizationId: string,
    identityId: string,
    options?: CallOptions,
  ): Promise<MemberRole> {
    const body = await this.authed<Envelope<MemberRole>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/organizations/{organizationId}/ownership-transfers`, {
        params: { path: { organizationId } },
        body: { identityId },
        headers: elevated(headers, elevationToken),
        signal,
      }),
    );
    return body.data;
  }

  /**
   * Acts in an organization (or in none with null): the answer's access token carries `org_id`,
   * `org_role` and `org_permissions`, and replaces the attached session's access token (its refresh
   * token is kept: the switch does not rotate it, and every renewal carries the active organization).
   * POST /session/active-organization.
   */
  async switchOrganization(
    organizationId: string | null,
    options?: CallOptions,
  ): Promise<OrganizationSwitch> {
    let bearer = '';
    const body = await this.authed<Envelope<OrganizationSwitch>>(false, options, (headers, signal) => {
      bearer = headers.authorization.slice('Bearer '.length);
      return this.api.POST(`${API}/session/active-organization`, {
        body: { organizationId },
        headers,
        signal,
      });
    });
    if (!options?.accessToken) await this.session?.accessTokenReplaced?.(body.data, bearer);
    return body.data;
  }

  // ---- Invitations --------------------------------------------------------------------------------

  /**
   * Invites an email address or phone number with a role (`members:invite`; only an owner invites
   * an `owner`): the invitee receives a link holding the invitation token. The answer is the same
   * whether or not the address has an account. Never repeated (each call sends a message).
   */
  async inviteMember(
    organizationId: string,
    input: InviteMemberInput,
    options?: CallOptions,
  ): Promise<SentInvitation> {
    const body = await this.authed<Envelope<SentInvitation>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/organizations/{organizationId}/invitations`, {
        params: { path: { organizationId } },
        body: input,
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /** An organization's pending invitations, newest first, identifiers masked (`members:invite`). */
  async listInvitations(
    organizationId: string,
    page?: PageRequest,
    options?: CallOptions,
  ): Promise<Page<PendingInvitation>> {
    const body = await this.authed<Collection<PendingInvitation>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/organizations/{organizationId}/invitations`, {
        params: { path: { organizationId }, query: pageQuery(page) },
        headers,
        signal,
      }),
    );
    return toPage(body);
  }

  /** Revokes a pending invitation (`members:invite`); its token stops working. */
  async revokeInvitation(organizationId: string, invitationId: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.DELETE(`${API}/organizations/{organizationId}/invitations/{invitationId}`, {
        params: { path: { organizationId, invitationId } },
        headers,
        signal,
      }),
    );
  }

  /**
   * What an invitation token names (no session needed): the organization, the role and the invited
   * identifier, masked. An expired, revoked or accepted token is refused with its own code.
   */
  async lookUpInvitation(token: string, options?: { signal?: AbortSignal }): Promise<InvitationLookup> {
    const body = await this.send<Envelope<InvitationLookup>>(true, options?.signal, () =>
      this.api.POST(`${API}/organization-invitations/lookups`, { body: { token }, signal: options?.signal }),
    );
    return body.data;
  }

  /**
   * Accepts an invitation: the caller, holding the invited identifier verified, becomes a member
   * with the invitation's role. Never repeated (a second acceptance is refused).
   */
  async acceptInvitation(token: string, options?: CallOptions): Promise<InvitationAcceptance> {
    const body = await this.authed<Envelope<InvitationAcceptance>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/organization-invitations/acceptances`, { body: { token }, headers, signal }),
    );
    return body.data;
  }

  // ---- Connections --------------------------------------------------------------------------------

  /**
   * Adds an enterprise connection (`connections:manage`): SAML from the IdP's metadata (`metadataXml`
   * or `metadataUrl`) or its entity id, SSO URL and signing certificates. Created disabled unless
   * `enabled`. Refused with `organization.connection_invalid` (incomplete, malformed) or
   * `organization.connection_metadata_unavailable`.
   */
  async addConnection(
    organizationId: string,
    input: ConnectionInput,
    options?: CallOptions,
  ): Promise<OrganizationConnection> {
    const body = await this.authed<Envelope<OrganizationConnection>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/organizations/{organizationId}/connections`, {
        params: { path: { organizationId } },
        body: input,
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /** The organization's connections, newest first (`connections:manage`). */
  async listConnections(
    organizationId: string,
    page?: PageRequest,
    options?: CallOptions,
  ): Promise<Page<OrganizationConnection>> {
    const body = await this.authed<Collection<OrganizationConnection>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/organizations/{organizationId}/connections`, {
        params: { path: { organizationId }, query: pageQuery(page) },
        headers,
        signal,
      }),
    );
    return toPage(body);
  }

  /** Changes a connection (`connections:manage`): only the fields sent (enable, disable, rename…). */
  async updateConnection(
    organizationId: string,
    connectionId: string,
    input: ConnectionUpdate,
    options?: CallOptions,
  ): Promise<OrganizationConnection> {
    const body = await this.authed<Envelope<OrganizationConnection>>(false, options, (headers, signal) =>
      this.api.PATCH(`${API}/organizations/{organizationId}/connections/{connectionId}`, {
        params: { path: { organizationId, connectionId } },
        body: input,
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /**
   * Requires SSO for the organization's verified domains, or stops requiring it
   * (`connections:manage`). Turning it on ends the sessions and grants of the domains' people, the
   * caller's own included when they are one; it needs a verified domain and an enabled SAML
   * connection (409 organization.sso_requirement_unmet).
   */
  async setSsoRequirement(
    organizationId: string,
    requireSso: boolean,
    options?: CallOptions,
  ): Promise<SsoRequirement> {
    const body = await this.authed<Envelope<SsoRequirement>>(false, options, (headers, signal) =>
      this.api.PUT(`${API}/organizations/{organizationId}/sso-requirement`, {
        params: { path: { organizationId } },
        body: { requireSso },
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /** Removes a connection (`connections:manage`). */
  async removeConnection(organizationId: string, connectionId: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.DELETE(`${API}/organizations/{organizationId}/connections/{connectionId}`, {
        params: { path: { organizationId, connectionId } },
        headers,
        signal,
      }),
    );
  }

  /**
   * Starts a test of a connection (`connections:manage`), enabled or not: the IdP's URL to send
   * the browser to; the flow's cookie is set. The IdP's answer comes back to the hosted
   * `#/sso-test?result=<code>`, read with `connectionTestResult`. Nobody is signed in.
   * POST /organizations/{organizationId}/connections/{connectionId}/tests.
   */
  async testConnection(
    organizationId: string,
    connectionId: string,
    options?: CallOptions,
  ): Promise<{ redirectUrl: string; expiresAt: string }> {
    const body = await this.authed<Envelope<{ redirectUrl: string; expiresAt: string }>>(
      false,
      options,
      (headers, signal) =>
        this.api.POST(`${API}/organizations/{organizationId}/connections/{connectionId}/tests`, {
          params: { path: { organizationId, connectionId } },
          headers,
          credentials: 'same-origin',
          signal,
        }),
    );
    return body.data;
  }

  /**
   * A connection test's result, for the session that started it, in the browser it started in;
   * anything else is 404 organization.connection_test_not_found. POST /sso-tests/results.
   */
  async connectionTestResult(code: string, options?: CallOptions): Promise<ConnectionTestResult> {
    const body = await this.authed<Envelope<ConnectionTestResult>>(true, options, (headers, signal) =>
      this.api.POST(`${API}/sso-tests/results`, {
        body: { code },
        headers,
        credentials: 'same-origin',
        signal,
      }),
    );
    return body.data;
  }

  // ---- Domains ------------------------------------------------------------------------------------

  /**
   * Claims a domain for the organization (`domains:manage`): the answer holds the DNS TXT record
   * (`txtRecord.name`, `txtRecord.value`) to publish before `verifyDomain`. A malformed name, an IP
   * address or a single label is refused (`organization.domain_invalid`).
   */
  async addDomain(
    organizationId: string,
    domain: string,
    options?: CallOptions,
  ): Promise<OrganizationDomain> {
    const body = await this.authed<Envelope<OrganizationDomain>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/organizations/{organizationId}/domains`, {
        params: { path: { organizationId } },
        body: { domain },
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /** The organization's domains, verified or not, newest first (`domains:manage`). */
  async listDomains(
    organizationId: string,
    page?: PageRequest,
    options?: CallOptions,
  ): Promise<Page<OrganizationDomain>> {
    const body = await this.authed<Collection<OrganizationDomain>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/organizations/{organizationId}/domains`, {
        params: { path: { organizationId }, query: pageQuery(page) },
        headers,
        signal,
      }),
    );
    return toPage(body);
  }

  /**
   * Asks the service to look up the domain's TXT record and verify it (`domains:manage`). Refused
   * with `organization.domain_unverified` (the record not found; the problem names the expected
   * one), `organization.domain_taken` (another organization verified it) or
   * `organization.domain_check_unavailable` (the DNS did not answer; retry later).
   */
  async verifyDomain(
    organizationId: string,
    domainId: string,
    options?: CallOptions,
  ): Promise<OrganizationDomain> {
    const body = await this.authed<Envelope<OrganizationDomain>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/organizations/{organizationId}/domains/{domainId}/verifications`, {
        params: { path: { organizationId, domainId } },
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /** Removes a domain, verified or not (`domains:manage`). */
  async removeDomain(organizationId: string, domainId: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.DELETE(`${API}/organizations/{organizationId}/domains/{domainId}`, {
        params: { path: { organizationId, domainId } },
        headers,
        signal,
      }),
    );
  }

  // ---- SCIM tokens ------------------------------------------------------------------------------

  /**
   * Creates a SCIM token for the organization (`directory:manage`, owners): the answer's `token` is
   * the bearer for `/scim/v2`, shown this once (only its hash is kept).
   */
  async createScimToken(
    organizationId: string,
    name: string,
    options?: CallOptions,
  ): Promise<CreatedScimToken> {
    const body = await this.authed<Envelope<CreatedScimToken>>(false, options, (headers, signal) =>
      this.api.POST(`${API}/organizations/{organizationId}/scim-tokens`, {
        params: { path: { organizationId } },
        body: { name },
        headers,
        signal,
      }),
    );
    return body.data;
  }

  /** The organization's SCIM tokens, revoked ones included, newest first (`directory:manage`). */
  async listScimTokens(
    organizationId: string,
    page?: PageRequest,
    options?: CallOptions,
  ): Promise<Page<ScimToken>> {
    const body = await this.authed<Collection<ScimToken>>(true, options, (headers, signal) =>
      this.api.GET(`${API}/organizations/{organizationId}/scim-tokens`, {
        params: { path: { organizationId }, query: pageQuery(page) },
        headers,
        signal,
      }),
    );
    return toPage(body);
  }

  /** Revokes a SCIM token (`directory:manage`): refused from its next request. */
  async revokeScimToken(organizationId: string, tokenId: string, options?: CallOptions): Promise<void> {
    await this.authed(false, options, (headers, signal) =>
      this.api.DELETE(`${API}/organizations/{organizationId}/scim-tokens/{tokenId}`, {
        params: { path: { organizationId, tokenId } },
        headers,
        signal,
      }),
    );
  }

  // ---- Mechanics --------------------------------------------------------------------------------

  private doFetch(request: Request): Promise<Response> {
    return this.fetchImpl ? this.fetchImpl(request) : globalThis.fetch(request);
  }

  private async endSession(
    path: `${typeof API}/sign-outs${string}`,
    reason: EndReason,
    options?: CallOptions,
  ) {
    try {
      await this.authed(true, options, (headers, signal) =>
        this.api.POST(path as `${typeof API}/sign-outs`, { headers, signal }),
      );
    } catch (error) {
      // The service no longer knows the session: signed out all the same.
      if (!(isIdentityError(error) && error.status === 401)) throw error;
    }
    if (!options?.accessToken) await this.session?.ended(reason);
  }

  /** One call, repeated only when `repeatable` and the error allows it. */
  private async send<T>(
    repeatable: boolean,
    signal: AbortSignal | undefined,
    exec: () => Promise<Outcome>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      let error: IdentityError;
      try {
        const outcome = await exec();
        if (outcome.response.ok) return outcome.data as T;
        error = responseError(outcome.response, outcome.error);
      } catch (cause) {
        if (signal?.aborted || isIdentityError(cause)) throw cause;
        error = networkError(cause);
      }
      const wait = repeatable ? this.retryDelay(error, attempt) : undefined;
      if (wait === undefined) throw error;
      await sleep(wait, signal);
    }
  }

  /** Milliseconds to wait before repeat `attempt + 1`, or undefined: do not repeat. */
  private retryDelay(error: IdentityError, attempt: number): number | undefined {
    if (!error.retryable || attempt >= this.retries) return undefined;
    if (error.retryAfter !== undefined) {
      const ms = error.retryAfter * 1000;
      return ms <= this.maxDelayMs ? ms : undefined;
    }
    const step = this.baseDelayMs * 2 ** attempt;
    return Math.min(this.maxDelayMs, step / 2 + Math.random() * (step / 2));
  }

  /**
   * A call with a bearer token. On 401 identity.session_required the session is asked for a fresh
   * token and the call is made again: a 401 is answered before any effect, so even a write may be
   * repeated. At most one renewal per call; adopting a token another tab renewed does not count.
   */
  private async authed<T = unknown>(
    repeatable: boolean,
    options: CallOptions | undefined,
    exec: (headers: Record<string, string>, signal: AbortSignal | undefined) => Promise<Outcome>,
  ): Promise<T> {
    const explicit = options?.accessToken;
    const signal = options?.signal;
    let token = explicit ?? (await this.session?.accessToken());
    if (!token) throw signedOutError();
    let renewed = false;
    for (let recoveries = 0; ; recoveries++) {
      const bearer = token;
      try {
        return await this.send<T>(repeatable, signal, () =>
          exec({ authorization: `Bearer ${bearer}` }, signal),
        );
      } catch (error) {
        const refused =
          isIdentityError(error) && error.status === 401 && error.code === 'identity.session_required';
        if (!refused || explicit || !this.session || renewed || recoveries >= 2) throw error;
        const next = await this.session.recover(bearer);
        if (!next) throw error;
        token = next.accessToken;
        renewed = next.renewed;
      }
    }
  }
}

function elevated(headers: Record<string, string>, elevationToken: string): Record<string, string> {
  return { ...headers, 'x-elevation-token': elevationToken };
}
