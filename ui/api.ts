import {
  type AccountOverview,
  BrowserSessionManager,
  type ConnectedApp,
  type ConnectionInput,
  type ConnectionTestResult,
  type ConnectionUpdate,
  type DeviceSession,
  type EndReason,
  IdentityClient,
  type IdentityProvider,
  type InvitationLookup,
  isIdentityError,
  type Organization,
  type OrganizationConnection,
  type OrganizationDomain,
  type OrganizationMember,
  type OrganizationMembership,
  type PendingInvitation,
  type ScimToken,
  type SecondFactorEnrolment,
  type SessionContext,
  type SignInHistoryEntry,
  type SignInMethod,
} from '../packages/client/src/index.js';
import { type Locale, locale } from './i18n.js';
import type { IdentifierForm } from './identifier.js';
import { rememberRoles } from './messages/organizations.js';
import { t as passkeyText } from './messages/passkeys.js';
import type { ProblemLike } from './problems.js';

export type { AccountOverview, ConnectedApp, DeviceSession, IdentityProvider };
export type SignInOutcome =
  | { kind: 'session' }
  | { kind: 'second_factor_required'; ticket: string; expiresAt: string };
export type StepUpChannel = 'identifier' | 'second_factor' | 'recovery_code';

/** The product's name, logo and help link, as configured (BRAND_*). */
export interface Brand {
  /** null: none configured (the pages say "Your account" in their language). */
  name: string | null;
  logoUrl: string | null;
  supportUrl: string | null;
}
/** The codes a message carries (VERIFICATION_CODE_LENGTH and VERIFICATION_CODE_FORMAT). */
export interface CodeShape {
  length: number;
  format: 'numeric' | 'alphabetic' | 'alphanumeric';
}
interface Settings {
  api: string;
  passkeyRpId: string | null;
  brand: Brand;
  code: CodeShape;
  /** An authenticator's digits at enrolment (TOTP_DIGITS). */
  authenticatorDigits: number;
  /** How long a code sent by message stays valid, in seconds (CHALLENGE_TTL). */
  codeLifetimeSeconds: number;
  /** The identifier types that may sign in by code (SIGN_IN_CODES); empty when off. */
  signInCodes: ('email' | 'phone')[];
  /** Whether a sign-in code's message carries a link too (SIGN_IN_LINKS). */
  signInLinks: boolean;
  /** Whether any organization signs in through an enabled SAML connection (identifier first). */
  sso?: boolean;
}
let settings: Settings = {
  api: '/api/v1',
  passkeyRpId: null,
  brand: { name: null, logoUrl: null, supportUrl: null },
  code: { length: 6, format: 'numeric' },
  authenticatorDigits: 6,
  codeLifetimeSeconds: 900,
  signInCodes: [],
  signInLinks: false,
};

/** How long a code sent by message stays valid, in seconds (CHALLENGE_TTL, from the service). */
export const codeLifetimeSeconds = (): number => settings.codeLifetimeSeconds;

/** Whether an identifier of this type may ask for a sign-in code (SIGN_IN_CODES, from the service). */
export const signInByCode = (type: 'email' | 'phone'): boolean => (settings.signInCodes ?? []).includes(type);

/** Whether the sign-in asks for the identifier first (an enabled SSO connection exists). */
export const ssoAvailable = (): boolean => settings.sso === true;

/** Whether a sign-in code's message carries a link (SIGN_IN_LINKS, from the service). */
export const signInLinks = (): boolean => settings.signInLinks === true;

/** The shape of the codes the page asks for: a message's, or an authenticator app's. */
export function codeShape(kind: 'message' | 'authenticator'): CodeShape {
  return kind === 'message' ? settings.code : { length: settings.authenticatorDigits, format: 'numeric' };
}

/**
 * The page's own settings (where the API is, whether passkeys are on, the brand), from the
 * service; answers the brand.
 */
export async function loadSettings(): Promise<Brand> {
  const res = await fetch('settings.json', { headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`settings: ${res.status}`);
  settings = (await res.json()) as Settings;
  return settings.brand;
}

/*
 * One client for the page, its session in the service's HttpOnly cookie (docs/security.md, "The
 * hosted pages' cookie"): a sign-in's refresh token is handed over to the cookie at once, and the
 * page keeps only the short-lived access token, in memory. Renewals send the cookie, one tab at a
 * time (Web Locks); tabs tell each other of sign-ins and sign-outs on a BroadcastChannel.
 */
const client = new IdentityClient({ baseUrl: location.origin });
const session = new BrowserSessionManager({ client, key: 'identity-service.account-ui' });

/** An elevation is kept in memory only, until its expiry, for the elevated actions that follow. */
let elevation: { token: string; expiresAt: number } | null = null;
const keep = (e: { elevationToken: string; elevationExpiresAt: string }) => {
  // Five seconds of margin. Should the clocks differ, the service's refusal starts a new step-up.
  elevation = { token: e.elevationToken, expiresAt: Date.parse(e.elevationExpiresAt) - 5000 };
  return e.elevationToken;
};

export function asProblem(error: unknown): ProblemLike {
  if (isIdentityError(error)) {
    return {
      code: error.code,
      status: error.status,
      detail: error.detail,
      retryAfter: error.retryAfter ?? null,
      errors: [...error.errors],
      ...(error.hookMessage !== undefined ? { hookMessage: error.hookMessage } : {}),
    };
  }
  if (error instanceof InteractionError) return error.problem;
  if (error instanceof NoPasskeyHere) return { code: 'ui.passkey_none' };
  if (error instanceof DOMException && error.name === 'NotAllowedError') {
    return { code: 'ui.passkey_cancelled', detail: 'The passkey prompt was closed or timed out.' };
  }
  return { code: 'ui.unexpected', detail: error instanceof Error ? error.message : String(error) };
}

export interface PasskeyStatus {
  usable: boolean;
  reason: string;
}

/**
 * Passkeys work only when the service has a relying party, the browser has WebAuthn with the JSON
 * helpers, and this page's host is on the relying party (an IP address never is: see
 * docs/configuration.md).
 */
export function passkeyStatus(): PasskeyStatus {
  const rp = settings.passkeyRpId;
  if (!rp) return { usable: false, reason: passkeyText('off') };
  const pkc = globalThis.PublicKeyCredential as
    | (typeof PublicKeyCredential & { parseCreationOptionsFromJSON?: unknown })
    | undefined;
  if (!window.isSecureContext || !pkc || typeof pkc.parseCreationOptionsFromJSON !== 'function') {
    return { usable: false, reason: passkeyText('browser') };
  }
  const host = location.hostname;
  if (host !== rp && !host.endsWith(`.${rp}`)) {
    return {
      usable: false,
      reason: passkeyText('host', { rp, host }),
    };
  }
  return { usable: true, reason: '' };
}

type Json = Parameters<typeof PublicKeyCredential.parseRequestOptionsFromJSON>[0];

/**
 * A NotAllowedError faster than anyone could answer a prompt: the browser asked no one, which is
 * what it does when this device holds no passkey for this site (WebAuthn hides the reason; a person
 * who closes a prompt takes far longer). Said as such, with the next step (docs/decisions.md).
 */
const NO_PROMPT_MS = 400;
export class NoPasskeyHere extends Error {
  constructor() {
    super('no passkey for this site on this device');
  }
}

async function assertion(options: unknown): Promise<unknown> {
  const asked = performance.now();
  let credential: PublicKeyCredential | null;
  try {
    credential = (await navigator.credentials.get({
      publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options as Json),
    })) as PublicKeyCredential | null;
  } catch (error) {
    const unanswered = performance.now() - asked < NO_PROMPT_MS;
    if (error instanceof DOMException && error.name === 'NotAllowedError' && unanswered) {
      throw new NoPasskeyHere();
    }
    throw error;
  }
  if (!credential) throw new DOMException('no credential', 'NotAllowedError');
  return credential.toJSON();
}

/**
 * Whether this browser offers passkeys in a field's autofill (WebAuthn conditional mediation, the
 * field's autocomplete naming `webauthn`).
 */
export async function passkeyAutofillAvailable(): Promise<boolean> {
  const pkc = globalThis.PublicKeyCredential as
    | { isConditionalMediationAvailable?: () => Promise<boolean> }
    | undefined;
  try {
    return (await pkc?.isConditionalMediationAvailable?.()) === true;
  } catch {
    return false;
  }
}

const email = (identifier: string) => ({ identifierType: 'email' as const, identifier });

function outcome(result: Awaited<ReturnType<IdentityClient['signIn']>>): SignInOutcome {
  if (result.kind === 'second_factor_required') {
    return { kind: result.kind, ticket: result.secondFactorTicket, expiresAt: result.ticketExpiresAt };
  }
  return { kind: 'session' };
}

/** The language last said to the service (api.sayLanguage), in this page load. */
let languageSaid: Locale | null = null;

/** The provider list, asked once per page load (a failure is asked again next time). */
let providersAsked: Promise<IdentityProvider[]> | null = null;

export const api = {
  /**
   * Asks the service (a renewal with the cookie) the first time, then answers from memory. A page
   * opened on another origin than the service's public one is refused (its cookie routes check
   * Origin) and counts as signed out.
   */
  signedIn: (): Promise<boolean> => session.isSignedIn().catch(() => false),
  /** Another tab of this browser signed in. */
  onSignedInElsewhere(listener: () => void): void {
    session.onChange((event) => {
      if (event.status === 'signed-in' && event.reason === 'elsewhere') listener();
    });
  },
  /**
   * The session ended: here (`signed_out`), in another tab (`elsewhere`), or at the service (a
   * refused renewal: ended from another device, by a password change, or expired).
   */
  onSignedOut(listener: (reason: EndReason) => void): void {
    session.onChange((event) => {
      if (event.status !== 'signed-out') return;
      elevation = null;
      listener(event.reason);
    });
  },
  elevation: (): string | undefined =>
    elevation && elevation.expiresAt > Date.now() ? elevation.token : undefined,

  /** Sign-up, sign-in and recovery take an email address or a phone number (ui/identifier.ts). */
  /** The page's language goes with it: the code's message and the new identity's language. */
  signUp: (identifier: IdentifierForm, password: string) =>
    client.signUp({ ...identifier, password, locale: locale() }),
  confirmSignUp: (identifier: IdentifierForm, password: string, code: string) =>
    client.confirmSignUp({ ...identifier, password, code }),
  async signIn(identifier: IdentifierForm, password: string): Promise<SignInOutcome> {
    return outcome(await client.signIn({ ...identifier, password }));
  },
  /**
   * Sends a sign-in code to the identifier (answered alike whether or not it may sign in by code):
   * the id to answer it at, and when it expires.
   */
  sendSignInCode: (identifier: IdentifierForm): Promise<{ signInCodeId: string; codeExpiresAt: string }> =>
    client.sendSignInCode(identifier),
  /** Signs in with the code sent: a session (handed to the cookie) or a second-factor ticket. */
  async signInWithCode(id: string, identifier: IdentifierForm, code: string): Promise<SignInOutcome> {
    return outcome(await client.signInWithCode(id, { ...identifier, code }));
  },
  /** What a sign-in link shows before Continue (reads only: opening a link signs nobody in). */
  lookUpSignInLink: (signInCodeId: string, token: string) => client.lookUpSignInLink({ signInCodeId, token }),
  /** The press of Continue on a sign-in link's page: a session (handed to the cookie) or a ticket. */
  async signInWithLink(signInCodeId: string, token: string): Promise<SignInOutcome> {
    return outcome(await client.signInWithLink({ signInCodeId, token }));
  },
  /** Where the sign-in code this browser asked for stands: pending, completed, completed_elsewhere. */
  signInCodeStatus: (id: string) => client.signInCodeStatus(id),
  /**
   * Another tab of this browser signed in (the cookie is shared): this page renews with the cookie
   * now, whatever it knew before; answers whether it is signed in.
   */
  renewFromCookie: (): Promise<boolean> => session.renewFromCookie(),
  /** The providers offering "Continue with …" (none when the list cannot be had: nothing is shown). */
  providers(): Promise<IdentityProvider[]> {
    providersAsked ??= client.listProviders().catch(() => {
      providersAsked = null;
      return [];
    });
    return providersAsked;
  },
  /**
   * Starts a provider flow and answers where the window goes (the caller does location.assign).
   * `returnTo` is a route of this page (`/sign-in`, `/sign-up`, `/security`, `/authorize/<uid>`).
   */
  async startProviderFlow(
    provider: string,
    intent: 'sign_in' | 'link' | 'step_up',
    route: string,
    elevationToken?: string,
  ): Promise<string> {
    const returnTo = `${location.pathname}#${route}`;
    const flow = await client.startProviderFlow({ provider, intent, returnTo }, elevationToken);
    return flow.authorizationUrl;
  },
  /** A provider flow came back signed in: its handoff code becomes a session (handed to the cookie) or a ticket. */
  exchangeProviderHandoff: async (code: string): Promise<SignInOutcome> =>
    outcome(await client.exchangeProviderHandoff(code)),
  /**
   * Enterprise sign-in for an email address: the IdP's URL when its domain signs in through an
   * organization's connection, null when it does not (422 identity.sso_unavailable).
   */
  async ssoRedirectFor(email: string, route: string): Promise<string | null> {
    try {
      const started = await client.startSsoSignIn({ email, returnTo: `${location.pathname}#${route}` });
      return started.redirectUrl;
    } catch (error) {
      if (asProblem(error).code === 'identity.sso_unavailable') return null;
      throw error;
    }
  },
  /** The organization and connection a SAML handoff signs into (nothing spent). */
  previewSsoHandoff: (code: string) => client.previewSsoHandoff(code),
  /** A SAML sign-in came back: its handoff code becomes a session (handed to the cookie) or a ticket. */
  exchangeSsoHandoff: async (code: string): Promise<SignInOutcome> =>
    outcome(await client.exchangeSsoHandoff(code)),
  /** A step-up flow came back: its handoff code becomes this page's elevation. */
  stepUpWithProviderHandoff: async (code: string): Promise<string> =>
    keep(await client.exchangeProviderStepUp(code)),
  completeSecondFactor: async (ticket: string, answer: { code: string } | { recoveryCode: string }) => {
    await client.completeSecondFactor({ secondFactorTicket: ticket, ...answer });
  },
  async signInWithPasskey(): Promise<void> {
    const options = await client.passkeySignInOptions({});
    await client.signInWithPasskey({ credential: await assertion(options.options) } as never);
  },
  /**
   * A passkey sign-in offered in the identifier field's autofill (conditional mediation): waits
   * until the person picks a passkey there (then signs in and answers true), or `signal` aborts it
   * (answers false). The browser allows one request at a time: the passkey button aborts this one
   * before asking its own.
   */
  async signInWithPasskeyAutofill(signal: AbortSignal): Promise<boolean> {
    let options: Awaited<ReturnType<typeof client.passkeySignInOptions>>;
    try {
      options = await client.passkeySignInOptions({});
    } catch {
      // Nobody asked for it yet: no offer in the autofill, nothing said (the button still asks).
      return false;
    }
    if (signal.aborted) return false;
    let credential: PublicKeyCredential | null;
    try {
      credential = (await navigator.credentials.get({
        mediation: 'conditional',
        publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options.options as unknown as Json),
        signal,
      })) as PublicKeyCredential | null;
    } catch {
      // Aborted, or the browser gave up (no passkey here, the list dismissed): nothing to say,
      // the button and the password are still there.
      return false;
    }
    if (!credential) return false;
    await client.signInWithPasskey({ credential: credential.toJSON() } as never);
    return true;
  },
  startRecovery: (identifier: IdentifierForm) => client.startPasswordRecovery(identifier),
  confirmRecovery: (identifier: IdentifierForm, code: string, newPassword: string) =>
    client.confirmPasswordRecovery({ ...identifier, code, newPassword }),
  async signOut(): Promise<void> {
    elevation = null;
    // Forgotten here even when the service could not be told (the cookie session then ends with
    // its expiry, or at the next sign-in in this browser).
    await session.signOut().catch(() => undefined);
  },
  async signOutEverywhere(): Promise<void> {
    elevation = null;
    await client.signOutEverywhere();
  },
  signOutOthers: () => client.signOutOthers(),
  /** Deletes the account: the session ends with it (`account_deleted`), the cookie is cleared. */
  async deleteAccount(identifier: string, elevationToken: string): Promise<void> {
    await client.deleteAccount(elevationToken, identifier);
    elevation = null;
  },

  /**
   * The pages' language becomes the signed-in identity's, so its emails and SMS speak it too: said
   * once per page load and per switch of language (the service writes nothing when it is the same;
   * a failure is said again at the next page).
   */
  sayLanguage(): void {
    const current = locale();
    if (languageSaid === current) return;
    languageSaid = current;
    client.updateAccount({ locale: current }).catch(() => {
      languageSaid = null;
    });
  },
  context: (): Promise<SessionContext> => client.context(),
  exportAccount: () => client.exportAccount(),
  /** The person's own account, identifiers unmasked: for their own pages only. */
  account: () => client.getAccount(),
  /** The person's name (given, family, display): an empty one is cleared. */
  updateName: (names: { givenName: string; familyName: string; displayName: string }) =>
    client.updateAccount(names),
  /** The person's picture from a chosen file (its bytes as they are; the service judges them). */
  setPicture: (file: File) =>
    client.setPicture(file, { contentType: file.type || 'application/octet-stream' }),
  removePicture: () => client.removePicture(),
  async history(after?: string): Promise<{ items: SignInHistoryEntry[]; next: string | null }> {
    const page = await client.history({ limit: 20, after });
    return { items: page.items, next: page.pageInfo.hasNextPage ? page.pageInfo.nextCursor : null };
  },
  sessions: async (): Promise<DeviceSession[]> => (await client.listSessions({ limit: 100 })).items,
  revokeSession: (id: string) => client.revokeSession(id),
  connectedApps: async (): Promise<ConnectedApp[]> => (await client.listConnectedApps({ limit: 100 })).items,
  revokeApp: (clientId: string) => client.revokeConnectedApp(clientId),
  changePassword: (currentPassword: string, newPassword: string) =>
    client.changePassword({ currentPassword, newPassword }),

  async startStepUp(
    channel?: StepUpChannel,
  ): Promise<{ challengeId: string; channel: StepUpChannel; sentTo: string | null }> {
    const c = await client.stepUp(channel ? { channel } : {});
    return { challengeId: c.challengeId, channel: c.channel as StepUpChannel, sentTo: c.sentTo ?? null };
  },
  confirmStepUp: async (challengeId: string, code: string): Promise<string> =>
    keep(await client.confirmStepUp({ challengeId, code })),
  async stepUpWithPasskey(): Promise<string> {
    const options = await client.stepUpWithPasskeyOptions();
    return keep(await client.stepUpWithPasskey({ credential: await assertion(options.options) } as never));
  },

  secondFactors: async () => (await client.listSecondFactors({ limit: 100 })).items,
  enrolSecondFactor: (label: string, elevationToken: string): Promise<SecondFactorEnrolment> =>
    client.enrolSecondFactor(elevationToken, { label }),
  confirmSecondFactor: (code: string) => client.confirmSecondFactor(code),
  removeSecondFactor: (id: string, elevationToken: string) => client.removeSecondFactor(elevationToken, id),
  recoveryCodeStatus: () => client.recoveryCodeStatus(),
  issueRecoveryCodes: async (elevationToken: string): Promise<string[]> =>
    (await client.issueRecoveryCodes(elevationToken)).recoveryCodes,

  signInMethods: async (): Promise<SignInMethod[]> => (await client.listSignInMethods({ limit: 100 })).items,
  addSignInMethod: (identifier: string, elevationToken: string) =>
    client.addSignInMethod(elevationToken, email(identifier)),
  /** A phone number in the national or international form, with its country (two letters). */
  addPhoneNumber: (identifier: string, country: string, elevationToken: string) =>
    client.addSignInMethod(elevationToken, { identifierType: 'phone', identifier, country }),
  confirmSignInMethod: (code: string, elevationToken: string) =>
    client.confirmSignInMethod(elevationToken, code),
  removeSignInMethod: (id: string, elevationToken: string) => client.removeSignInMethod(elevationToken, id),
  async addPasskey(label: string, elevationToken: string): Promise<void> {
    const options = await client.passkeyRegistrationOptions(elevationToken);
    const credential = (await navigator.credentials.create({
      publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(
        options.options as Parameters<typeof PublicKeyCredential.parseCreationOptionsFromJSON>[0],
      ),
    })) as PublicKeyCredential | null;
    if (!credential) throw new DOMException('no credential', 'NotAllowedError');
    await client.registerPasskey(elevationToken, { credential: credential.toJSON(), label } as never);
  },
};

export type {
  ConnectionTestResult,
  InvitationLookup,
  Organization,
  OrganizationConnection,
  OrganizationDomain,
  OrganizationMember,
  OrganizationMembership,
  PendingInvitation,
  ScimToken,
};

/**
 * The organization routes and invitations (docs/organizations.md), through the typed client.
 * Lists ask for up to 100 (a person's organizations, an organization's members and invitations).
 */
export const organizations = {
  list: async (): Promise<OrganizationMembership[]> => {
    const { items } = await client.listOrganizations({ limit: 100 });
    // Every page naming a role there (the switcher, the lists) names a configured one as configured.
    rememberRoles(items.map((o) => ({ name: o.role, displayName: o.roleDisplayName })));
    return items;
  },
  create: (name: string, slug: string) => client.createOrganization({ name, slug }),
  get: (id: string) => client.getOrganization(id),
  update: (id: string, patch: { name?: string; requireSecondFactor?: boolean }) =>
    client.updateOrganization(id, patch),
  members: async (id: string): Promise<OrganizationMember[]> =>
    (await client.listMembers(id, { limit: 100 })).items,
  changeRole: (id: string, identityId: string, role: string) => client.setMemberRole(id, identityId, role),
  removeMember: (id: string, identityId: string) => client.removeMember(id, identityId),
  leave: (id: string) => client.leaveOrganization(id),
  invitations: async (id: string): Promise<PendingInvitation[]> =>
    (await client.listInvitations(id, { limit: 100 })).items,
  invite: (id: string, who: IdentifierForm, role: string) => client.inviteMember(id, { ...who, role }),
  revokeInvitation: (id: string, invitationId: string) => client.revokeInvitation(id, invitationId),
  /** Hands the ownership to a member (elevated): they become an owner, the caller an admin. */
  transfer: (id: string, identityId: string, elevation: string) =>
    client.transferOwnership(elevation, id, identityId),
  /**
   * Acts in `id` (null: in none). The client hands the answer's access token to the page's session
   * (its refresh token, in the cookie, is unchanged): the next calls carry the organization at once.
   */
  switchTo: async (id: string | null): Promise<void> => {
    await client.switchOrganization(id);
  },
  /** What an invitation token names. No session needed: the token is the capability. */
  lookUpInvitation: (token: string) => client.lookUpInvitation(token),
  acceptInvitation: (token: string) => client.acceptInvitation(token),
  // SSO (connections:manage, domains:manage): the organization's SAML connections and domains.
  connections: async (id: string): Promise<OrganizationConnection[]> =>
    (await client.listConnections(id, { limit: 100 })).items,
  addConnection: (id: string, input: ConnectionInput) => client.addConnection(id, input),
  updateConnection: (id: string, connectionId: string, input: ConnectionUpdate) =>
    client.updateConnection(id, connectionId, input),
  removeConnection: (id: string, connectionId: string) => client.removeConnection(id, connectionId),
  /** Require SSO for the verified domains (on: the domains' people are signed out now). */
  setSsoRequirement: (id: string, requireSso: boolean) => client.setSsoRequirement(id, requireSso),
  /** Starts a connection test: the IdP's URL (the flow's cookie is set). */
  testConnection: async (id: string, connectionId: string): Promise<string> =>
    (await client.testConnection(id, connectionId)).redirectUrl,
  /** A connection test's result, for this session in this browser. */
  connectionTestResult: (code: string) => client.connectionTestResult(code),
  domains: async (id: string): Promise<OrganizationDomain[]> =>
    (await client.listDomains(id, { limit: 100 })).items,
  addDomain: (id: string, domain: string) => client.addDomain(id, domain),
  verifyDomain: (id: string, domainId: string) => client.verifyDomain(id, domainId),
  removeDomain: (id: string, domainId: string) => client.removeDomain(id, domainId),
  // Directory (directory:manage): the organization's SCIM tokens.
  scimTokens: async (id: string): Promise<ScimToken[]> =>
    (await client.listScimTokens(id, { limit: 100 })).items,
  createScimToken: (id: string, name: string) => client.createScimToken(id, name),
  revokeScimToken: (id: string, tokenId: string) => client.revokeScimToken(id, tokenId),
};

/** What GET /oidc/interaction/<uid>/details answers: an OpenID Provider interaction waiting for the person. */
export interface InteractionDetails {
  uid: string;
  prompt: 'login' | 'consent';
  client: {
    clientId: string;
    name: string;
    firstParty: boolean;
    /** Only when the page's CSP lets it load (docs/oidc.md, "Sign-in and consent"). */
    logoUri: string | null;
    clientUri: string | null;
    policyUri: string | null;
    tosUri: string | null;
  };
  scopes: string[];
  freshSignIn: boolean;
  /** The application's login_hint: the identifier the sign-in starts with (null: none). */
  loginHint?: string | null;
}

/** A refusal of the OpenID Provider's interaction routes, as the page shows refusals. */
export class InteractionError extends Error {
  constructor(readonly problem: ProblemLike) {
    super(problem.detail ?? problem.code ?? 'interaction refused');
  }
}

const interactionPath = (uid: string, action: string) =>
  `/oidc/interaction/${encodeURIComponent(uid)}/${action}`;

async function interactionFailure(res: Response): Promise<InteractionError> {
  const body = (await res.json().catch(() => null)) as ProblemLike | null;
  return new InteractionError({
    code: body?.code ?? 'ui.interaction_unavailable',
    status: res.status,
    detail: body?.detail ?? 'This sign-in request cannot be completed.',
  });
}

/**
 * The OpenID Provider's interactions (same origin, the session cookie goes by itself): the page
 * reads what an application asks for, and answers a consent. The uid is never a secret, but only
 * ever travels in the hash and in these paths; no token is ever put in a URL.
 */
export const interactions = {
  async details(uid: string): Promise<InteractionDetails> {
    const res = await fetch(interactionPath(uid, 'details'), {
      headers: { accept: 'application/json' },
      credentials: 'same-origin',
    });
    if (!res.ok) throw await interactionFailure(res);
    return (await res.json()) as InteractionDetails;
  },
  async consent(uid: string, decision: 'allow' | 'deny'): Promise<string> {
    const res = await fetch(interactionPath(uid, 'consent'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      credentials: 'same-origin',
      body: JSON.stringify({ decision }),
    });
    if (!res.ok) throw await interactionFailure(res);
    return ((await res.json()) as { redirectTo: string }).redirectTo;
  },
  /** Hands the whole window back to the provider, which finishes the authorization. */
  continue(uid: string): void {
    location.assign(interactionPath(uid, 'continue'));
  },
};
