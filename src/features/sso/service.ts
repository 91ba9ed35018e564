import { randomBytes, randomUUID } from 'node:crypto';
import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Sealer } from '../../platform/crypto/seal.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import { Cookies } from '../../platform/http/cookies.js';
import { Problem } from '../../platform/problem.js';
import { revokeChallenges } from '../challenges/repository.js';
import type { Hooks } from '../events/hooks/service.js';
import type { EventLog } from '../events/log.js';
import { identityChanged } from '../identities/events.js';
import { normaliseEmail } from '../identities/identifier.js';
import { nameFromClaim, type ProfileNames } from '../identities/profile.js';
import {
  claimIdentifier,
  deleteFreshIdentity,
  findIdentifier,
  findIdentity,
  insertIdentity,
  removeIdentifier,
} from '../identities/repository.js';
import {
  type ConnectionRow,
  connectionOf,
  enabledConnectionOrganization,
  enabledConnectionRoute,
} from '../organizations/connections/repository.js';
import { oidcRedirectUri, spEndpoints } from '../organizations/connections/view.js';
import { verifiedOwner } from '../organizations/domains/repository.js';
import { membershipChanged } from '../organizations/events.js';
import { joinIfAbsent, roleOf, setRole } from '../organizations/repository.js';
import { OWNER_ROLE } from '../organizations/roles.js';
import {
  type OpenIdParty,
  type UpstreamChecks,
  UpstreamError,
  type UpstreamProviders,
} from '../providers/upstream.js';
import type { SsoHandoff } from '../sign-in/strategies/sso.js';
import * as repo from './repository.js';
import {
  authnRequestUrl,
  checkResponse,
  EMAIL_FORMAT,
  inResponseToOf,
  type SamlAssertion,
  type SamlParty,
  SamlRefused,
  spMetadata,
} from './saml.js';

/** A SAML flow lives ten minutes (docs/sso.md); its handoff code two. */
export const FLOW_SECONDS = 600;
export const HANDOFF_SECONDS = 120;

const COOKIE_BASE = 'identity-saml-flow-';
const COOKIE_TAG = /^[0-9a-f]{16}$/;
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;

/** Attribute names tried, in order, when the connection maps none (Entra ID, Okta, Google, LDAP OIDs). */
const DEFAULT_ATTRIBUTES = {
  email: [
    'email',
    'mail',
    'emailAddress',
    'urn:oid:0.9.2342.19200300.100.1.3',
    'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  ],
  givenName: [
    'givenName',
    'firstName',
    'urn:oid:2.5.4.42',
    'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname',
  ],
  familyName: [
    'sn',
    'surname',
    'lastName',
    'urn:oid:2.5.4.4',
    'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname',
  ],
} as const;

/** Claims tried, in order, when the OpenID connection maps none (OpenID Connect's standard claims). */
const DEFAULT_CLAIMS = {
  email: ['email', 'upn', 'preferred_username'],
  givenName: ['given_name'],
  familyName: ['family_name'],
} as const;

/** ID token claims that describe the token, not the person: left out of a test's result. */
const TOKEN_CLAIMS = new Set(['nonce', 'at_hash', 'c_hash', 's_hash', 'sid']);
const MAX_SHOWN = 100;
const MAX_SHOWN_TEXT = 2000;

/** What an IdP proved, SAML or OpenID, as the linking rules read it. */
interface Proven {
  email: string | null;
  /** OpenID only: the IdP said `email_verified: false` (docs/sso.md, "OpenID connections"). */
  emailDenied: boolean;
  names: ProfileNames;
  /** Every value of the connection's group attribute or claim (docs/sso.md, "Groups and roles"). */
  groups: string[];
}

/** One check of a connection test, as its result page lists it. */
export interface TestCheck {
  check: 'flow' | 'response' | 'email' | 'email_verified' | 'domain';
  passed: boolean;
  reason?: string;
}

/** What a connection test shows its starter (docs/sso.md, "Testing a connection"). */
export interface TestResult {
  connection: { id: string; name: string; type: 'saml' | 'oidc' };
  organizationId: string;
  testedAt: string;
  passed: boolean;
  checks: TestCheck[];
  subject: string | null;
  nameIdFormat: string | null;
  email: string | null;
  attributes: Record<string, unknown>;
}

/** What the person is told on return, as the `error` of the return address (docs/sso.md, "Refusals"). */
export type SsoFailure = 'refused' | 'not_allowed' | 'hook_refused' | 'unavailable';

/** Where home-realm discovery sends a person: a connection and its organization. */
export interface SsoRoute {
  connectionId: string;
  organizationId: string;
}

export interface StartedSamlFlow {
  redirectUrl: string;
  expiresAt: string;
  cookie: string;
}

/** What enterprise sign-in uses. */
export interface SsoServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  sealer: Sealer;
  events: EventLog;
  upstream: Pick<UpstreamProviders, 'partyAuthorizationUrl' | 'partyComplete'>;
  config: Pick<Config, 'publicOrigin' | 'accountUi' | 'organizations'>;
  /** before_identity_created, asked outside the ACS's transaction before a JIT identity is made. */
  hooks: Pick<Hooks, 'beforeIdentityCreated'>;
}

/**
 * SAML 2.0 sign-in through an organization's connection (docs/sso.md): the start (an AuthnRequest
 * by HTTP-Redirect, a flow record bound to this browser by a cookie), the ACS (the response checked
 * by saml.ts, the assertion id spent once, the linking rules), and the handoff of the proven identity
 * to the page, which completes the sign-in (sign-in/strategies/sso.ts).
 */
export class SsoService {
  readonly #cookies: Cookies;
  readonly #cookiePrefix: string;
  readonly #uiPath: string;
  readonly #returnTo: RegExp;

  constructor(private readonly deps: SsoServiceDeps) {
    this.#uiPath = deps.config.accountUi?.path ?? '/account/';
    const base = this.#uiPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    this.#returnTo = new RegExp(`^${base}#/(?:sign-in|authorize/[A-Za-z0-9_-]{1,128})$`);
    this.#cookies = new Cookies(deps.config.publicOrigin);
    this.#cookiePrefix = this.#cookies.name(COOKIE_BASE);
  }

  /** GET /sso/saml/{connectionId}: our SP metadata for an existing SAML connection. */
  async metadata(connectionId: string): Promise<string> {
    const connection = await connectionOf(this.deps.database.db, connectionId);
    if (!connection || connection.type !== 'saml') throw new Problem('organization.connection_not_found');
    return spMetadata(this.#party(connection), connection.decryptionCertificate);
  }

  /** POST /sso/saml/{connectionId}/flows: the AuthnRequest URL and the cookie binding the flow. */
  async start(connectionId: string, returnTo: string): Promise<StartedSamlFlow> {
    if (!this.#returnTo.test(returnTo)) throw new Problem('validation.failed');
    const connection = await connectionOf(this.deps.database.db, connectionId);
    if (!connection?.enabled) throw new Problem('organization.connection_not_found');
    return this.#begin(connection, returnTo, null);
  }

  /**
   * A connection test (docs/sso.md, "Testing a connection"), enabled or not: the flow goes to the
   * IdP and back like a sign-in, but its answer is a result only `sessionId`, in this browser, can
   * read. The caller has checked `connections:manage` on the organization.
   */
  async startTest(organizationId: string, connectionId: string, sessionId: string): Promise<StartedSamlFlow> {
    const connection = await connectionOf(this.deps.database.db, connectionId);
    if (!connection || connection.organizationId !== organizationId)
      throw new Problem('organization.connection_not_found');
    return this.#begin(connection, `${this.#uiPath}#/sso-test`, sessionId);
  }

  /**
   * An operator's connection test (docs/sso.md, "Testing a connection"), enabled or not: the flow
   * is made now but bound to no browser; its single-use start URL, opened in the operator's
   * browser, binds it there and goes to the IdP (`openOperatorTest`). The result is kept for
   * `operator` alone (`operatorTestResult`). The caller has checked the organization.
   */
  async startOperatorTest(
    organizationId: string,
    connectionId: string,
    operator: string,
  ): Promise<{ id: string; startUrl: string; expiresAt: string }> {
    const connection = await connectionOf(this.deps.database.db, connectionId);
    if (!connection || connection.organizationId !== organizationId)
      throw new Problem('organization.connection_not_found');
    const token = opaqueToken();
    const { id, expiresAt } = await this.#prepare(connection, `${this.#uiPath}#/sso-test-done`, {
      testerOperator: operator,
      startHash: sha256Hex(token),
    });
    return {
      id,
      expiresAt,
      startUrl: `${this.deps.config.publicOrigin}/api/v1/sso-test-starts/${token}`,
    };
  }

  /**
   * GET /sso-test-starts/{token}: an operator's test opened in a browser, once. The token is spent
   * and the flow bound to this browser (its cookie); the answer is the IdP's address. A spent,
   * expired or unknown token: the hosted page that says so (nothing set).
   */
  async openOperatorTest(token: string): Promise<{ location: string; cookie?: string }> {
    const now = this.deps.clock.now();
    const binding = opaqueToken();
    const redirectUrl =
      token.length <= 128
        ? await repo.openOperatorTest(this.deps.database.db, sha256Hex(token), sha256Hex(binding), now)
        : undefined;
    if (!redirectUrl)
      return { location: this.#location(`${this.#uiPath}#/sso-test-done`, { error: 'gone' }) };
    return { location: redirectUrl, cookie: this.#flowCookie(binding) };
  }

  /** An operator's test result, for that operator only, ten minutes; every failure the same 404. */
  async operatorTestResult(id: string, operator: string): Promise<TestResult> {
    const found = await repo.operatorTestResultOf(this.deps.database.db, id, operator, this.deps.clock.now());
    if (!found) throw new Problem('organization.connection_test_not_found');
    return found as TestResult;
  }

  async #begin(
    connection: ConnectionRow,
    returnTo: string,
    testerSessionId: string | null,
  ): Promise<StartedSamlFlow> {
    const binding = opaqueToken();
    const { redirectUrl, expiresAt } = await this.#prepare(connection, returnTo, {
      testerSessionId,
      bindingHash: sha256Hex(binding),
    });
    return { redirectUrl, expiresAt, cookie: this.#flowCookie(binding) };
  }

  /** The flow's record and the IdP's address (an AuthnRequest, or an OpenID authorization request). */
  async #prepare(
    connection: ConnectionRow,
    returnTo: string,
    bound:
      | { testerSessionId: string | null; bindingHash: string }
      | { testerOperator: string; startHash: string },
  ): Promise<{ id: string; redirectUrl: string; expiresAt: string }> {
    const id = randomUUID();
    let requestId: string;
    let redirectUrl: string;
    let sealedChecks: string | null = null;
    if (connection.type === 'saml') {
      // An NCName (xs:ID): a letter or underscore first.
      requestId = `_${randomBytes(20).toString('hex')}`;
      redirectUrl = await authnRequestUrl(this.#party(connection), requestId, '');
    } else {
      const checks: UpstreamChecks = {
        state: opaqueToken(),
        nonce: opaqueToken(),
        codeVerifier: opaqueToken(),
      };
      requestId = checks.state;
      try {
        redirectUrl = (await this.deps.upstream.partyAuthorizationUrl(this.#openIdParty(connection), checks))
          .href;
      } catch (err) {
        if (err instanceof UpstreamError) throw new Problem('identity.sso_idp_unavailable');
        throw err;
      }
      sealedChecks = this.deps.sealer.seal(JSON.stringify(checks), id);
    }
    const now = this.deps.clock.now();
    const expiresAt = new Date(now.getTime() + FLOW_SECONDS * 1000);
    await this.deps.database.db.transaction().execute(async (trx) => {
      await repo.pruneExpired(trx, now);
      await repo.insertFlow(trx, {
        id,
        connectionId: connection.id,
        requestId,
        returnTo,
        createdAt: now,
        expiresAt,
        sealedChecks,
        ...('bindingHash' in bound
          ? { bindingHash: bound.bindingHash, testerSessionId: bound.testerSessionId }
          : // Bound to no browser until its start URL is opened: until then it answers nothing.
            {
              bindingHash: null,
              testerOperator: bound.testerOperator,
              startHash: bound.startHash,
              startUrl: redirectUrl,
            }),
      });
    });
    return { id, redirectUrl, expiresAt: expiresAt.toISOString() };
  }

  /**
   * The cookie binding a flow to this browser. The ACS is a cross-site form POST from the IdP,
   * which SameSite=Lax would strip it from. It authenticates nothing: it only ties the
   * InResponseTo (or the state) to this browser.
   */
  #flowCookie(binding: string): string {
    const tag = randomBytes(8).toString('hex');
    return this.#cookies.serialize(`${this.#cookiePrefix}${tag}`, binding, FLOW_SECONDS, 'None');
  }

  /**
   * POST /sign-ins/sso (home-realm discovery): the flow of the enabled connection of the
   * organization that verified the address's domain, or of the organization named (id or slug).
   * Whatever is missing (an unknown or unverified domain, no enabled connection, a disabled or
   * unknown organization) is the same 422 identity.sso_unavailable: the answer never depends on
   * whether anyone holds the address, only on whether its domain signs in through an IdP, which
   * the IdP's own redirect tells anyone who tries (docs/decisions.md).
   */
  async startFor(input: {
    email?: string;
    organization?: string;
    returnTo: string;
  }): Promise<StartedSamlFlow> {
    const route = await this.route(input);
    if (!route) throw new Problem('identity.sso_unavailable');
    return this.start(route.connectionId, input.returnTo);
  }

  /**
   * Where home-realm discovery sends a person (docs/sso.md, "Signing in"): the oldest enabled
   * connection, SAML or OpenID, of the enabled organization that verified the address's domain, or
   * of the organization named by id or slug. Undefined, whatever the reason, when there is none.
   * The OpenID Provider routes `login_hint` and `organization` by the same (docs/oidc.md).
   */
  async route(input: { email?: string; organization?: string }): Promise<SsoRoute | undefined> {
    const { db } = this.deps.database;
    if (input.email !== undefined) {
      const email = normaliseEmail(input.email);
      const at = email ? email.lastIndexOf('@') : -1;
      const owner = email && at > 0 ? await verifiedOwner(db, email.slice(at + 1)) : undefined;
      return owner ? enabledConnectionRoute(db, { id: owner }) : undefined;
    }
    if (input.organization !== undefined) {
      const named = input.organization;
      const isId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(named);
      return enabledConnectionRoute(db, isId ? { id: named.toLowerCase() } : { slug: named });
    }
    return undefined;
  }

  /** The organization of an enabled connection of an enabled organization; undefined otherwise. */
  enabledConnectionOrganization(connectionId: string): Promise<string | undefined> {
    return enabledConnectionOrganization(this.deps.database.db, connectionId);
  }

  /**
   * POST /sso/saml/{connectionId}/acs: always a return address. Every refusal of the response is
   * the same address, byte for byte, and nothing is written for it but its audit record.
   */
  async acs(
    connectionId: string,
    samlResponse: string | undefined,
    cookieHeader: string | undefined,
  ): Promise<string> {
    const refused = this.#location(`${this.#uiPath}#/sign-in`, { error: 'refused' });
    const now = this.deps.clock.now();
    // A disabled connection still answers its test flows; a sign-in through it is refused below.
    const connection = await connectionOf(this.deps.database.db, connectionId);
    if (connection?.type !== 'saml' || !samlResponse || samlResponse.length > 512 * 1024) return refused;
    const inResponseTo = inResponseToOf(samlResponse);
    if (inResponseTo === 'malformed') return this.#refuse(connection, 'malformed', refused);
    const { db } = this.deps.database;
    let flow: repo.SamlFlow | undefined;
    if (inResponseTo === null) {
      if (!connection.enabled || !connection.allowIdpInitiated)
        return this.#refuse(connection, 'unsolicited', refused);
      flow = {
        id: randomUUID(),
        connectionId,
        requestId: `idp-${randomUUID()}`,
        bindingHash: null,
        // IdP-initiated: the page asks the person to continue before the handoff is spent.
        returnTo: `${this.#uiPath}#/sso-continue`,
        createdAt: now,
        expiresAt: new Date(now.getTime() + FLOW_SECONDS * 1000),
      };
    } else {
      flow = await repo.answerFlow(db, connectionId, inResponseTo, now);
      if (!flow || !flow.bindingHash || !this.#binding(cookieHeader, flow.bindingHash))
        return this.#refuse(connection, 'flow', refused);
      if (!isTest(flow) && !connection.enabled) return this.#refuse(connection, 'disabled', refused);
    }
    const tested = isTest(flow) ? flow : undefined;
    let assertion: SamlAssertion;
    try {
      assertion = await checkResponse(
        this.#party(connection),
        samlResponse,
        inResponseTo === null ? null : { requestId: inResponseTo, createdAt: flow.createdAt },
        now,
        this.deps.config.organizations.ssoClockSkew,
      );
    } catch (err) {
      if (!(err instanceof SamlRefused)) throw err;
      if (tested) return this.#tested(connection, tested, { failed: err.reason }, now);
      return this.#refuse(connection, err.reason, refused);
    }
    const proven: Proven = {
      email: this.#samlEmail(connection, assertion),
      emailDenied: false,
      names: this.#names(connection, assertion),
      groups:
        connection.groupAttribute === null ? [] : (assertion.attributes[connection.groupAttribute] ?? []),
    };
    // A test writes no assertion id: its InResponseTo names a flow now answered, so the assertion
    // can open no other flow, and IdP-initiated answers carry no InResponseTo.
    if (tested)
      return this.#tested(
        connection,
        tested,
        {
          subject: assertion.nameId,
          nameIdFormat: assertion.nameIdFormat,
          attributes: assertion.attributes,
          proven,
        },
        now,
      );
    return this.#signedIn(connection, flow, proven, now, async (trx) =>
      // Single use, whatever the instance: the primary key decides between two posts at once.
      repo.useAssertionId(trx, {
        connectionId,
        assertionId: assertion.assertionId,
        expiresAt: assertion.usableUntil,
      }),
    );
  }

  /**
   * GET /sso/oidc/{connectionId}/callback: always a return address, as the ACS. The `state` finds
   * the flow, which must have been started in this browser (its cookie); openid-client checks the
   * rest (PKCE, nonce, the ID token's signature, issuer, audience and times). Every refusal is the
   * same address, byte for byte.
   */
  async oidcCallback(connectionId: string, query: URLSearchParams, cookieHeader: string | undefined) {
    const refused = this.#location(`${this.#uiPath}#/sign-in`, { error: 'refused' });
    const now = this.deps.clock.now();
    const connection = await connectionOf(this.deps.database.db, connectionId);
    if (connection?.type !== 'oidc') return refused;
    const state = query.get('state');
    if (!state || state.length > 128) return this.#refuse(connection, 'flow', refused);
    const flow = await repo.answerFlow(this.deps.database.db, connectionId, state, now);
    if (!flow?.bindingHash || !flow.sealedChecks || !this.#binding(cookieHeader, flow.bindingHash))
      return this.#refuse(connection, 'flow', refused);
    if (!isTest(flow) && !connection.enabled) return this.#refuse(connection, 'disabled', refused);
    const tested = isTest(flow) ? flow : undefined;
    const checks = JSON.parse(this.deps.sealer.open(flow.sealedChecks, flow.id)) as UpstreamChecks;
    const callback = new Request(`${oidcRedirectUri(this.deps.config.publicOrigin, connectionId)}?${query}`);
    let claims: Record<string, unknown>;
    let subject: string;
    try {
      const answer = await this.deps.upstream.partyComplete(this.#openIdParty(connection), callback, checks);
      claims = answer.claims;
      subject = answer.identity.subject;
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      if (tested) return this.#tested(connection, tested, { failed: err.reason }, now);
      return this.#refuse(connection, `oidc ${err.reason}`, refused);
    }
    const claim = (field: keyof typeof DEFAULT_CLAIMS) => {
      const mapped = connection.attributeMapping[field];
      for (const name of mapped ? [mapped] : DEFAULT_CLAIMS[field]) {
        const value = claims[name];
        if (typeof value === 'string' && value.trim() !== '') return value;
      }
      return null;
    };
    const raw = claim('email');
    const proven: Proven = {
      email: raw?.includes('@') ? raw : null,
      emailDenied: claims.email_verified === false || claims.email_verified === 'false',
      names: {
        givenName: nameFromClaim(claim('givenName')),
        familyName: nameFromClaim(claim('familyName')),
        displayName: null,
      },
      groups: groupClaim(connection.groupAttribute === null ? undefined : claims[connection.groupAttribute]),
    };
    if (tested)
      return this.#tested(
        connection,
        tested,
        { subject, nameIdFormat: null, attributes: claims, proven },
        now,
      );
    return this.#signedIn(connection, flow, proven, now, async () => true);
  }

  /** The linking rules and the handoff, for a SAML assertion or OpenID claims that passed every check. */
  async #signedIn(
    connection: ConnectionRow,
    answered: repo.SamlFlow,
    proven: Proven,
    now: Date,
    spend: (trx: Executor) => Promise<boolean>,
  ): Promise<string> {
    const refused = this.#location(`${this.#uiPath}#/sign-in`, { error: 'refused' });
    const { db } = this.deps.database;
    // JIT asks before_identity_created first, as a sign-up does, never inside the transaction.
    const admission = await this.#admitCreation(connection, proven);
    if (admission) {
      await this.#refusalAudit(connection, admission);
      return this.#location(`${this.#uiPath}#/sign-in`, { error: admission });
    }
    const outcome = await db.transaction().execute(async (trx) => {
      if (!(await spend(trx))) return { error: 'refused' as const, reason: 'replayed' };
      const account = await this.#account(trx, connection, proven, now);
      if ('error' in account) return account;
      if (answered.bindingHash === null) await repo.insertFlow(trx, { ...answered, answeredAt: now });
      const code = opaqueToken();
      await repo.setHandoff(trx, {
        flowId: answered.id,
        handoffHash: sha256Hex(code),
        identityId: account.identityId,
        epoch: account.epoch,
        expiresAt: new Date(now.getTime() + HANDOFF_SECONDS * 1000),
      });
      return { code };
    });
    if ('error' in outcome) {
      if (outcome.error === 'refused') return this.#refuse(connection, outcome.reason, refused);
      await this.#refusalAudit(connection, outcome.reason);
      return this.#location(`${this.#uiPath}#/sign-in`, { error: 'not_allowed' });
    }
    return this.#location(answered.returnTo, { handoff: outcome.code });
  }

  /**
   * POST /sso-handoffs/previews: the organization and connection an unspent handoff signs into,
   * spending nothing (the IdP-initiated page names them before the person presses Continue). The
   * same conditions as the exchange (a flow's cookie when it has one); every failure the same 401.
   */
  async preview(
    code: string,
    cookieHeader: string | undefined,
  ): Promise<{ organization: { id: string; name: string }; connection: { name: string } }> {
    const found = await repo.peekHandoff(this.deps.database.db, sha256Hex(code), this.deps.clock.now());
    if (!found || (found.bindingHash !== null && !this.#binding(cookieHeader, found.bindingHash)))
      throw new Problem('identity.sign_in_refused');
    return {
      organization: { id: found.organizationId, name: found.organizationName },
      connection: { name: found.connectionName },
    };
  }

  /**
   * POST /sso-handoffs: the code is spent once, unexpired, with the cookie of the browser that
   * started the flow (an IdP-initiated flow has none: its page asked the person to continue, and the
   * route takes only same-origin requests). Every failure is the same 401.
   */
  async exchange(
    code: string,
    cookieHeader: string | undefined,
  ): Promise<{ handoff: SsoHandoff; cookies: string[] }> {
    const now = this.deps.clock.now();
    const spent = await this.deps.database.db.transaction().execute(async (trx) => {
      const handoff = await repo.spendHandoff(trx, sha256Hex(code), now);
      if (!handoff) return undefined;
      if (handoff.bindingHash === null) return { handoff, cookie: undefined };
      const cookie = this.#binding(cookieHeader, handoff.bindingHash);
      return cookie ? { handoff, cookie } : undefined;
    });
    if (!spent) throw new Problem('identity.sign_in_refused');
    const { identityId, epoch, connectionId } = spent.handoff;
    return {
      handoff: { identityId, epoch, connectionId },
      cookies: spent.cookie ? [this.#cookies.clearing(spent.cookie)] : [],
    };
  }

  /**
   * The linking rules (docs/sso.md, "Accounts"): the IdP speaks only for its organization's
   * verified domains. An email outside them (or none) creates and links nothing: `not_allowed`. A
   * verified local holder of the address is the identity signed in; a registration never confirmed
   * yields (its address removed, its codes revoked); with no holder, an identity is made (JIT) with
   * the address verified and the IdP's names. Either way it becomes a member with the default role.
   */
  async #account(
    trx: Executor,
    connection: ConnectionRow,
    proven: Proven,
    now: Date,
  ): Promise<{ identityId: string; epoch: number } | { error: SsoFailure; reason: string }> {
    const email = await this.#verifiedEmail(trx, connection, proven);
    if (!email) return { error: 'not_allowed', reason: 'email outside the verified domains' };
    // The IdP is trusted for its organization's verified domains without an email_verified claim
    // (SAML has none; Entra sends none), but one that says the address is unverified is believed.
    if (proven.emailDenied) return { error: 'not_allowed', reason: 'email not verified by the IdP' };
    const { audit, events } = this.deps;
    const holder = await findIdentifier(trx, { type: 'email', value: email });
    let identityId: string;
    let epoch: number;
    const existing = holder && holder.verifiedAt !== null ? holder.identityId : undefined;
    const made = existing ? undefined : await this.#created(trx, connection, proven, email, holder, now);
    if (made && 'error' in made) return made;
    if (made && 'identityId' in made) {
      identityId = made.identityId;
      epoch = 0;
    } else {
      // The verified holder: found first, or the winner of a concurrent first sign-in (made.raced).
      const owner = await findIdentity(trx, existing ?? (made?.raced as string));
      if (!owner || owner.disabledAt !== null) return { error: 'refused', reason: 'identity disabled' };
      identityId = owner.id;
      epoch = owner.sessionEpoch;
      await audit.appendOwn(trx, 'identity.sso.linked', identityId, { connectionId: connection.id });
    }
    const role = this.#role(connection, proven.groups);
    const organizationId = connection.organizationId;
    if (await joinIfAbsent(trx, { organizationId, identityId, role, now })) {
      await membershipChanged(events, trx, 'organization.membership.created', identityId, {
        organizationId,
        identityId,
        role,
      });
      await audit.appendOwn(trx, 'organization.member.added', identityId, {
        organizationId,
        role,
        via: `sso:${connection.id}`,
      });
    } else if (connection.groupAttribute !== null) {
      // Roles follow the IdP's groups at every sign-in (docs/sso.md, "Groups and roles"). An owner
      // is left as they are: the mapping never makes or unmakes an owner, so the last-owner rule
      // (which the organization row lock guards) is never in play here.
      const current = await roleOf(trx, organizationId, identityId);
      if (current !== undefined && current !== OWNER_ROLE && current !== role) {
        await setRole(trx, organizationId, identityId, role, now);
        await membershipChanged(events, trx, 'organization.membership.updated', identityId, {
          organizationId,
          identityId,
          role,
        });
        await audit.appendOwn(trx, 'organization.member.role_changed', identityId, {
          organizationId,
          from: current,
          role,
          via: `sso:${connection.id}`,
        });
      }
    }
    return { identityId, epoch };
  }

  /** The asserted address when it is in a domain the connection's organization verified, else null. */
  async #verifiedEmail(exec: Executor, connection: ConnectionRow, proven: Proven) {
    const email = proven.email ? normaliseEmail(proven.email) : null;
    const domain = email?.slice(email.lastIndexOf('@') + 1);
    if (!email || !domain || (await verifiedOwner(exec, domain)) !== connection.organizationId) return null;
    return email;
  }

  /**
   * When the linking rules would make an identity (an address in the verified domains, no verified
   * holder), the before_identity_created hook is asked, as for a sign-up and a provider's first
   * sign-in (docs/events.md): its refusal is `hook_refused`, its failure `unavailable`, and nothing
   * is written. A holder verified meanwhile is simply linked by the transaction that follows.
   */
  async #admitCreation(
    connection: ConnectionRow,
    proven: Proven,
  ): Promise<'hook_refused' | 'unavailable' | null> {
    const { db } = this.deps.database;
    const email = await this.#verifiedEmail(db, connection, proven);
    if (!email || proven.emailDenied) return null;
    const holder = await findIdentifier(db, { type: 'email', value: email });
    if (holder && holder.verifiedAt !== null) return null;
    try {
      await this.deps.hooks.beforeIdentityCreated({
        via: 'sso',
        connectionId: connection.id,
        organizationId: connection.organizationId,
        identifier: { type: 'email', value: email },
      });
      return null;
    } catch (err) {
      if (err instanceof Problem && err.code === 'hooks.refused') return 'hook_refused';
      if (err instanceof Problem && err.code === 'hooks.unavailable') return 'unavailable';
      throw err;
    }
  }

  /**
   * JIT: a new identity with the address verified and the IdP's names; a registration never
   * confirmed yields first. A concurrent first sign-in of the same address that committed first
   * wins the address (the unique index): this one's identity is dropped and the winner's used.
   */
  async #created(
    trx: Executor,
    connection: ConnectionRow,
    proven: Proven,
    email: string,
    holder: Awaited<ReturnType<typeof findIdentifier>>,
    now: Date,
  ): Promise<{ identityId: string } | { raced: string } | { error: SsoFailure; reason: string }> {
    const { audit, events } = this.deps;
    if (holder && (await removeIdentifier(trx, holder.id, now, { pendingOnly: true }))) {
      await revokeChallenges(trx, { identifierId: holder.id }, now);
      await audit.appendOwn(trx, 'identity.sign_up.superseded', holder.identityId, {
        connectionId: connection.id,
      });
    }
    const identityId = randomUUID();
    await insertIdentity(trx, { id: identityId, createdAt: now, names: proven.names });
    const claimed = await claimIdentifier(trx, {
      id: randomUUID(),
      identityId,
      identifier: { type: 'email', value: email },
      now,
      verified: true,
    });
    if (!claimed) {
      await deleteFreshIdentity(trx, identityId);
      const winner = await findIdentifier(trx, { type: 'email', value: email });
      if (!winner || winner.verifiedAt === null)
        return { error: 'refused', reason: 'address claimed meanwhile' };
      return { raced: winner.identityId };
    }
    await identityChanged(events, trx, 'identity.created', identityId, identityId, { via: 'sso' });
    await audit.appendOwn(trx, 'identity.sso.registered', identityId, {
      connectionId: connection.id,
      identifierId: claimed,
    });
    return { identityId };
  }

  /**
   * The role the connection hands out: with a group attribute, the role of the first mapping line
   * whose group the assertion names (every value of the attribute), else the default role.
   */
  #role(connection: ConnectionRow, values: string[]): string {
    if (connection.groupAttribute === null) return connection.defaultRole;
    const groups = new Set(values);
    return connection.groupRoles.find((g) => groups.has(g.group))?.role ?? connection.defaultRole;
  }

  #attribute(
    connection: ConnectionRow,
    assertion: SamlAssertion,
    field: keyof typeof DEFAULT_ATTRIBUTES,
  ): string | null {
    const mapped = connection.attributeMapping[field];
    const names = mapped ? [mapped] : DEFAULT_ATTRIBUTES[field];
    for (const name of names) {
      const value = assertion.attributes[name]?.[0];
      if (value) return value;
    }
    return null;
  }

  #names(connection: ConnectionRow, assertion: SamlAssertion): ProfileNames {
    return {
      givenName: nameFromClaim(this.#attribute(connection, assertion, 'givenName')),
      familyName: nameFromClaim(this.#attribute(connection, assertion, 'familyName')),
      displayName: null,
    };
  }

  #samlEmail(connection: ConnectionRow, assertion: SamlAssertion): string | null {
    return (
      this.#attribute(connection, assertion, 'email') ??
      (assertion.nameIdFormat === EMAIL_FORMAT || assertion.nameId.includes('@') ? assertion.nameId : null)
    );
  }

  /**
   * A test flow's answer: what the IdP sent and which checks passed, kept behind a code for the
   * tester's session and browser. Nothing is signed in, created, linked or joined.
   */
  async #tested(
    connection: ConnectionRow,
    flow: repo.SamlFlow,
    found:
      | { failed: string }
      | { subject: string; nameIdFormat: string | null; attributes: Record<string, unknown>; proven: Proven },
    now: Date,
  ): Promise<string> {
    const checks: TestCheck[] = [{ check: 'flow', passed: true }];
    let result: Pick<TestResult, 'subject' | 'nameIdFormat' | 'email' | 'attributes'> = {
      subject: null,
      nameIdFormat: null,
      email: null,
      attributes: {},
    };
    if ('failed' in found) {
      checks.push({ check: 'response', passed: false, reason: found.failed });
    } else {
      const email = found.proven.email ? normaliseEmail(found.proven.email) : null;
      const domain = email?.slice(email.lastIndexOf('@') + 1);
      const owner = domain ? await verifiedOwner(this.deps.database.db, domain) : undefined;
      checks.push(
        { check: 'response', passed: true },
        { check: 'email', passed: email !== null },
        ...(connection.type === 'oidc'
          ? [{ check: 'email_verified' as const, passed: !found.proven.emailDenied }]
          : []),
        { check: 'domain', passed: owner === connection.organizationId },
      );
      result = {
        subject: found.subject,
        nameIdFormat: found.nameIdFormat,
        email,
        attributes: shown(found.attributes),
      };
    }
    const full: TestResult = {
      connection: { id: connection.id, name: connection.name, type: connection.type },
      organizationId: connection.organizationId,
      testedAt: now.toISOString(),
      passed: checks.every((c) => c.passed),
      checks,
      ...result,
    };
    // A member's test is read with a code, in the tester's browser; an operator's by its id.
    const operator = flow.testerOperator ?? null;
    const code = operator ? null : opaqueToken();
    const failed = checks
      .filter((c) => !c.passed)
      .map((c) => c.check)
      .join(',');
    await this.deps.database.db.transaction().execute(async (trx) => {
      await repo.setTestResult(trx, {
        flowId: flow.id,
        resultHash: code === null ? null : sha256Hex(code),
        result: full,
        expiresAt: new Date(now.getTime() + FLOW_SECONDS * 1000),
      });
      await this.deps.audit.append(trx, {
        name: 'organization.connection.tested',
        actor: operator,
        target: connection.id,
        outcome: full.passed ? 'success' : 'failure',
        details: operator
          ? { organizationId: connection.organizationId, testId: flow.id, failed }
          : { organizationId: connection.organizationId, sessionId: flow.testerSessionId ?? '', failed },
      });
    });
    if (code === null) return `${this.deps.config.publicOrigin}${flow.returnTo}`;
    return this.#location(flow.returnTo, { result: code });
  }

  /**
   * POST /sso-tests/results: a test's result, for the session that started the test, in the
   * browser it started in (the flow's cookie). Every failure is the same 404.
   */
  async testResult(code: string, sessionId: string, cookieHeader: string | undefined): Promise<TestResult> {
    const found = await repo.testResultOf(
      this.deps.database.db,
      sha256Hex(code),
      sessionId,
      this.deps.clock.now(),
    );
    if (!found?.bindingHash || !this.#binding(cookieHeader, found.bindingHash))
      throw new Problem('organization.connection_test_not_found');
    return found.result as TestResult;
  }

  #openIdParty(connection: ConnectionRow): OpenIdParty {
    const clientSecret = connection.sealedClientSecret
      ? this.deps.sealer.open(connection.sealedClientSecret, `sso-connection:${connection.id}`)
      : '';
    return {
      // A change of issuer, client or secret is a new key, so a stale discovery is never used.
      key: `${connection.id}@${sha256Hex(`${connection.issuer}\n${connection.clientId}\n${clientSecret}`).slice(0, 16)}`,
      issuer: connection.issuer ?? '',
      clientId: connection.clientId ?? '',
      clientSecret,
      scopes: 'openid email profile',
      redirectUri: oidcRedirectUri(this.deps.config.publicOrigin, connection.id),
    };
  }

  #party(connection: ConnectionRow): SamlParty {
    const { entityId, acsUrl } = spEndpoints(this.deps.config.publicOrigin, connection.id);
    return {
      spEntityId: entityId,
      acsUrl,
      idpEntityId: connection.idpEntityId ?? '',
      ssoUrl: connection.ssoUrl ?? '',
      certificates: connection.signingCertificates,
      ...(connection.sealedDecryptionKey
        ? {
            decryptionKey: this.deps.sealer.open(
              connection.sealedDecryptionKey,
              `sso-connection:${connection.id}`,
            ),
          }
        : {}),
    };
  }

  async #refuse(connection: ConnectionRow, reason: string, location: string): Promise<string> {
    await this.#refusalAudit(connection, reason);
    return location;
  }

  /** Why a response was refused, for operators only (never for the browser). */
  #refusalAudit(connection: ConnectionRow, reason: string) {
    return this.deps.database.db.transaction().execute((trx) =>
      this.deps.audit.append(trx, {
        name: 'sso.assertion.refused',
        actor: null,
        target: connection.id,
        outcome: 'failure',
        details: { organizationId: connection.organizationId, reason },
      }),
    );
  }

  #binding(cookieHeader: string | undefined, bindingHash: string): string | undefined {
    for (const { name, value } of this.#cookies.parse(cookieHeader)) {
      if (!name.startsWith(this.#cookiePrefix) || !COOKIE_TAG.test(name.slice(this.#cookiePrefix.length)))
        continue;
      if (COOKIE_VALUE.test(value) && sha256Hex(value) === bindingHash) return name;
    }
    return undefined;
  }

  #location(returnTo: string, extra: Record<string, string>): string {
    return `${this.deps.config.publicOrigin}${returnTo}?${new URLSearchParams(extra)}`;
  }
}

/** A connection test's flow, a member's or an operator's: it signs nobody in. */
function isTest(flow: repo.SamlFlow): boolean {
  return Boolean(flow.testerSessionId || flow.testerOperator);
}

/** An OpenID group claim's values: an array of strings, or one string (Okta sends either). */
function groupClaim(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** What a test shows of the IdP's attributes or claims: bounded, and never the token's own claims. */
function shown(attributes: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(attributes).slice(0, MAX_SHOWN)) {
    if (TOKEN_CLAIMS.has(name)) continue;
    const text = JSON.stringify(value) ?? 'null';
    out[name] = text.length > MAX_SHOWN_TEXT ? `${text.slice(0, MAX_SHOWN_TEXT)}…` : value;
  }
  return out;
}
