import { randomBytes, randomUUID } from 'node:crypto';
import type { Config } from '../../../config.js';
import type { AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import type { Sealer } from '../../../platform/crypto/seal.js';
import { opaqueToken, sha256Hex } from '../../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../../platform/db/database.js';
import type { SessionPrincipal } from '../../../platform/http/auth.js';
import { Cookies } from '../../../platform/http/cookies.js';
import { Problem } from '../../../platform/problem.js';
import { revokeChallenges } from '../../challenges/repository.js';
import type { Hooks } from '../../events/hooks/service.js';
import type { EventLog } from '../../events/log.js';
import { identityChanged } from '../../identities/events.js';
import { normaliseEmail } from '../../identities/identifier.js';
import { nameFromClaim, type ProfileNames, shownName } from '../../identities/profile.js';
import {
  claimIdentifier,
  deleteFreshIdentity,
  findIdentifier,
  findIdentity,
  insertIdentity,
  removeIdentifier,
} from '../../identities/repository.js';
import { sessionState } from '../../sessions/repository.js';
import {
  type Elevation,
  type MintElevationDeps,
  mintElevation,
  stepUpProofAllowed,
} from '../../step-up/service.js';
import {
  consumeFlow,
  consumeHandoff,
  findLiveLink,
  insertFlow,
  insertHandoff,
  insertLink,
  type ProviderFlow,
  type ProviderHandoff,
  pruneExpiredFlows,
  touchLink,
} from '../repository.js';
import { UpstreamError, type UpstreamIdentity, type UpstreamProviders } from '../upstream.js';

/** A flow lives ten minutes (docs/providers.md); its handoff code two. */
export const FLOW_SECONDS = 600;
export const HANDOFF_SECONDS = 120;

/** What a person who started a flow is told on return, as the `error` of the return address. */
export type FlowFailure =
  | 'cancelled'
  | 'unavailable'
  | 'refused'
  | 'account_exists'
  | 'sign_up_closed'
  | 'already_linked'
  | 'hook_refused';

/**
 * The return addresses a flow may name: the hosted pages it can start from (the account's own
 * sign-in and sign-up, Security for linking, and an OpenID Provider interaction). Anything else is
 * refused at the start, so the callback can never be made to send a code elsewhere.
 */
function returnToPattern(uiPath: string): RegExp {
  const base = uiPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${base}#/(?:sign-in|sign-up|security|devices|authorize/[A-Za-z0-9_-]{1,128})$`);
}

const COOKIE_BASE = 'identity-provider-flow-';
const COOKIE_TAG = /^[0-9a-f]{16}$/;
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;

interface SealedChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface StartedFlow {
  authorizationUrl: string;
  expiresAt: string;
  /** The Set-Cookie value that binds the flow to this browser. */
  cookie: string;
}

/** A redirect sign-in's handoff, exchanged: the identity the upstream proved, its epoch read at the callback. */
export interface SignInHandoff {
  kind: 'sign_in';
  identityId: string;
  epoch: number;
}

export interface FlowReturn {
  /** The absolute return address (303 See Other). */
  location: string;
  /** Set-Cookie values (the flow's cookie cleared when it failed). */
  cookies: string[];
}

/** What redirect sign-in uses. */
export interface ProviderFlowDeps extends MintElevationDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  sealer: Sealer;
  upstream: UpstreamProviders;
  config: Pick<Config, 'publicOrigin' | 'accountUi' | 'lifetimes'>;
  /** identity.created for a sign-up, identity.updated for a link (docs/events.md). */
  events: EventLog;
  /** before_identity_created, asked outside the callback's transaction (docs/events.md, "Synchronous hooks"). */
  hooks: Pick<Hooks, 'beforeIdentityCreated'>;
}

/**
 * Redirect sign-in through an upstream provider ("Continue with …", docs/providers.md): the start
 * (a flow record and its cookie), the callback (the upstream's answer checked by openid-client in
 * upstream.ts, then the linking rules), and the handoff of a completed sign-in to the page.
 */
export class ProviderFlowService {
  readonly #cookies: Cookies;
  readonly #cookiePrefix: string;
  readonly #returnTo: RegExp;
  /** Where a callback whose flow cannot be found sends the person. */
  readonly #fallbackReturn: string;

  constructor(private readonly deps: ProviderFlowDeps) {
    const uiPath = deps.config.accountUi?.path ?? '/account/';
    this.#returnTo = returnToPattern(uiPath);
    this.#fallbackReturn = `${uiPath}#/sign-in`;
    this.#cookies = new Cookies(deps.config.publicOrigin);
    this.#cookiePrefix = this.#cookies.name(COOKIE_BASE);
  }

  /**
   * POST /provider-flows. A link or step-up flow remembers the identity and the session it was
   * started from; the callback acts only while that session is still live.
   */
  async start(
    input: { provider: string; intent: ProviderFlow['intent']; returnTo: string },
    principal?: SessionPrincipal,
  ): Promise<StartedFlow> {
    const { upstream, clock, sealer } = this.deps;
    const provider = upstream.get(input.provider);
    if (!provider?.redirect) throw new Problem('identity.provider_unavailable');
    if (!this.#returnTo.test(input.returnTo)) throw new Problem('validation.failed');
    const checks: SealedChecks = { state: opaqueToken(), nonce: opaqueToken(), codeVerifier: opaqueToken() };
    let authorizationUrl: URL;
    try {
      authorizationUrl = await upstream.authorizationUrl(input.provider, checks);
    } catch (err) {
      if (err instanceof UpstreamError) throw new Problem('service.unavailable');
      throw err;
    }
    const binding = opaqueToken();
    const tag = randomBytes(8).toString('hex');
    const id = randomUUID();
    const now = clock.now();
    const expiresAt = new Date(now.getTime() + FLOW_SECONDS * 1000);
    await this.deps.database.db.transaction().execute(async (trx) => {
      await pruneExpiredFlows(trx, now);
      await insertFlow(trx, {
        id,
        provider: input.provider,
        intent: input.intent,
        identityId: principal?.identityId ?? null,
        sessionId: principal?.sessionId ?? null,
        returnTo: input.returnTo,
        bindingHash: sha256Hex(binding),
        sealedChecks: sealer.seal(JSON.stringify(checks), id),
        stateHash: sha256Hex(checks.state),
        now,
        expiresAt,
      });
    });
    // form_post answers arrive as a cross-site POST, which SameSite=Lax would strip the cookie from.
    // The cookie only binds the flow to this browser and authenticates nothing: a cross-site
    // request carrying it still needs the flow's state, which only this browser's page has seen.
    const sameSite = provider.redirect.responseMode === 'form_post' ? 'None' : 'Lax';
    return {
      authorizationUrl: authorizationUrl.href,
      expiresAt: expiresAt.toISOString(),
      cookie: this.#cookies.serialize(`${this.#cookiePrefix}${tag}`, binding, FLOW_SECONDS, sameSite),
    };
  }

  /**
   * GET or POST /providers/{name}/callback: always a return address. The flow is consumed first
   * (a replayed callback finds nothing), then it must be this provider's, unexpired, and started
   * in this browser; only then is the upstream's answer checked and the code exchanged.
   */
  async callback(
    name: string,
    request: Request,
    params: URLSearchParams,
    cookieHeader: string | undefined,
  ): Promise<FlowReturn> {
    const { clock, sealer, upstream } = this.deps;
    const state = params.get('state');
    const now = clock.now();
    const flow =
      state && state.length <= 512
        ? await consumeFlow(this.deps.database.db, sha256Hex(state), now)
        : undefined;
    if (!flow) return this.#back(this.#fallbackReturn, name, { error: 'refused' });
    const binding = this.#binding(cookieHeader, flow.bindingHash);
    const fail = (error: FlowFailure) => this.#back(flow.returnTo, name, { error }, binding);
    if (flow.provider !== name || flow.expiresAt.getTime() <= now.getTime() || !binding)
      return fail('refused');
    const checks = JSON.parse(sealer.open(flow.sealedChecks, flow.id)) as SealedChecks;
    let upstreamIdentity: UpstreamIdentity;
    try {
      upstreamIdentity = await upstream.complete(name, request, checks);
    } catch (err) {
      if (err instanceof UpstreamError) return fail(err.reason);
      throw err;
    }
    if (flow.intent === 'link') {
      const linked = await this.#link(flow, upstreamIdentity);
      if (linked !== 'linked') return fail(linked);
      return this.#back(flow.returnTo, name, { result: 'linked' }, binding);
    }
    const outcome =
      flow.intent === 'step_up'
        ? await this.#stepUp(flow, upstreamIdentity)
        : await this.#admitted(flow, upstreamIdentity);
    if ('error' in outcome) return fail(outcome.error);
    // The flow's cookie stays: the handoff is exchanged only by the browser that holds it.
    const code = opaqueToken();
    await insertHandoff(this.deps.database.db, {
      id: randomUUID(),
      codeHash: sha256Hex(code),
      bindingHash: flow.bindingHash,
      kind: flow.intent === 'step_up' ? 'step_up' : 'sign_in',
      identityId: outcome.identityId,
      sessionId: flow.intent === 'step_up' ? flow.sessionId : null,
      epoch: outcome.epoch,
      now,
      expiresAt: new Date(now.getTime() + HANDOFF_SECONDS * 1000),
    });
    return { location: this.#location(flow.returnTo, name, { handoff: code }), cookies: [] };
  }

  /**
   * POST /provider-handoffs: the code is consumed once; it must be unexpired and presented with the
   * cookie of the flow that made it. A sign-in's handoff answers the identity it proved (and the
   * epoch read at the callback): sign-in/strategies/provider-redirect.ts makes its session or
   * second-factor ticket, like the ID-token path's. A step-up's elevation is minted now, for the
   * session the flow was started from, which must be the caller's; an identity holding a second
   * factor is refused (422 identity.step_up_unavailable): an upstream account is one factor. Every
   * other failure is the same 401.
   */
  async exchange(
    code: string,
    cookieHeader: string | undefined,
    principal?: SessionPrincipal,
  ): Promise<{ result: SignInHandoff | Elevation; cookies: string[] }> {
    const now = this.deps.clock.now();
    const { result, binding } = await this.deps.database.db.transaction().execute(
      async (
        trx,
      ): Promise<{
        binding?: string;
        result?: ProviderHandoff | Elevation;
        unavailable?: true;
      }> => {
        const handoff = await consumeHandoff(trx, sha256Hex(code), now);
        const binding = handoff && this.#binding(cookieHeader, handoff.bindingHash);
        if (!handoff || !binding || handoff.expiresAt.getTime() <= now.getTime())
          return { binding: undefined };
        if (handoff.kind === 'sign_in') return { binding, result: handoff };
        if (
          !principal ||
          principal.sessionId !== handoff.sessionId ||
          principal.identityId !== handoff.identityId
        ) {
          return { binding: undefined };
        }
        // Asked before minting (which asks again) so the refusal commits the spent code with it.
        if (!(await stepUpProofAllowed(trx, principal.identityId, 'provider', true))) {
          return { binding, unavailable: true as const };
        }
        return { binding, result: await mintElevation(trx, this.deps, principal, 'provider') };
      },
    );
    if (binding && !result) throw new Problem('identity.step_up_unavailable');
    if (!binding || !result) throw new Problem('identity.sign_in_refused');
    const cookies = [this.#cookies.clearing(binding)];
    if ('elevationToken' in result) return { result, cookies };
    return { result: { kind: 'sign_in', identityId: result.identityId, epoch: result.epoch }, cookies };
  }

  /**
   * The linking rules (docs/providers.md, "Linking rules"), in one transaction. A known subject
   * signs its identity in. Otherwise only an email the upstream asserts verified is looked at: a
   * verified local holder is linked only when the provider opts in (`autoLink: verified_email`),
   * else the person is told an account exists; a pending (unverified) registration of that address
   * yields: its identifier is removed and its codes revoked, so a squatter's pre-registration dies
   * and is never linked. With no holder, a new identity is made when the provider allows sign-up.
   */
  async #signIn(
    flow: ProviderFlow,
    who: UpstreamIdentity,
    admitted: boolean,
  ): Promise<{ identityId: string; epoch: number } | { error: FlowFailure } | { admit: true }> {
    const { audit, clock } = this.deps;
    const provider = this.deps.upstream.get(flow.provider);
    const redirect = provider?.redirect;
    if (!redirect) return { error: 'refused' };
    const now = clock.now();
    return this.deps.database.db.transaction().execute(async (trx) => {
      const link = await findLiveLink(trx, flow.provider, who.subject);
      if (link) return this.#signInLinked(trx, link.id, link.identityId, now);
      const email = who.email !== null && who.emailVerified ? normaliseEmail(who.email) : null;
      const holder = email ? await findIdentifier(trx, { type: 'email', value: email }) : undefined;
      if (holder && holder.verifiedAt !== null) {
        // A concurrent first sign-in of this same subject (another tab) may have committed its
        // identity, link and address between the two reads above: then this is its sign-in.
        const raced = await findLiveLink(trx, flow.provider, who.subject);
        if (raced) return this.#signInLinked(trx, raced.id, raced.identityId, now);
        if (redirect.autoLink !== 'verified_email') return { error: 'account_exists' as const };
        // Nothing is linked into a disabled identity: its sign-in is the ordinary refusal.
        const owner = await findIdentity(trx, holder.identityId);
        if (!owner || owner.disabledAt !== null) return { error: 'refused' as const };
        const linkId = await insertLink(trx, {
          id: randomUUID(),
          identityId: holder.identityId,
          provider: flow.provider,
          subject: who.subject,
          now,
        });
        if (!linkId) return { error: 'refused' as const };
        await identityChanged(
          this.deps.events,
          trx,
          'identity.updated',
          holder.identityId,
          holder.identityId,
        );
        await audit.appendOwn(trx, 'identity.sign_in_method.verified', holder.identityId, {
          kind: 'provider',
          provider: flow.provider,
          methodId: linkId,
          via: 'verified_email',
        });
        return this.#signInLinked(trx, linkId, holder.identityId, now);
      }
      if (!redirect.signUp) return { error: 'sign_up_closed' as const };
      // Nothing written yet: the hook is asked after this transaction, then the rules run again.
      if (!admitted) return { admit: true as const };
      if (holder && email) {
        // A registration never confirmed yields to the person the provider vouches for.
        if (await removeIdentifier(trx, holder.id, now, { pendingOnly: true })) {
          await revokeChallenges(trx, { identifierId: holder.id }, now);
          await audit.appendOwn(trx, 'identity.sign_up.superseded', holder.identityId, {
            provider: flow.provider,
          });
        }
      }
      const identityId = randomUUID();
      // The provider's name is the new identity's (namesFromUpstream, below).
      await insertIdentity(trx, { id: identityId, createdAt: now, names: namesFromUpstream(who) });
      const linkId = await insertLink(trx, {
        id: randomUUID(),
        identityId,
        provider: flow.provider,
        subject: who.subject,
        now,
      });
      if (!linkId) {
        // A concurrent first visit of the same subject committed its link first.
        await deleteFreshIdentity(trx, identityId);
        const winner = await findLiveLink(trx, flow.provider, who.subject);
        if (!winner) return { error: 'refused' as const };
        return this.#signInLinked(trx, winner.id, winner.identityId, now);
      }
      const identifierId = email
        ? await claimIdentifier(trx, {
            id: randomUUID(),
            identityId,
            identifier: { type: 'email', value: email },
            now,
            verified: true,
          })
        : undefined;
      // "Continue with …" for a new person: the identity is created here, address and link with it.
      await identityChanged(this.deps.events, trx, 'identity.created', identityId, identityId, {
        via: 'provider',
      });
      await audit.appendOwn(trx, 'identity.provider.registered', identityId, {
        provider: flow.provider,
        linkId,
        ...(identifierId ? { identifierId } : {}),
      });
      // The epoch of a brand-new identity is its initial one.
      return { identityId, epoch: 0 };
    });
  }

  /**
   * The linking rules; when they would make an identity, before_identity_created is asked between
   * two passes (never inside a transaction), and its refusal is the `hook_refused` return.
   */
  async #admitted(
    flow: ProviderFlow,
    who: UpstreamIdentity,
  ): Promise<{ identityId: string; epoch: number } | { error: FlowFailure }> {
    const first = await this.#signIn(flow, who, false);
    if (!('admit' in first)) return first;
    const email = who.email !== null && who.emailVerified ? normaliseEmail(who.email) : null;
    try {
      await this.deps.hooks.beforeIdentityCreated({
        via: 'provider',
        provider: flow.provider,
        subject: who.subject,
        ...(email ? { identifier: { type: 'email' as const, value: email } } : {}),
      });
    } catch (err) {
      if (err instanceof Problem && err.code === 'hooks.refused') return { error: 'hook_refused' };
      if (err instanceof Problem && err.code === 'hooks.unavailable') return { error: 'unavailable' };
      throw err;
    }
    const second = await this.#signIn(flow, who, true);
    return 'admit' in second ? { error: 'refused' } : second;
  }

  async #signInLinked(
    trx: Executor,
    linkId: string,
    identityId: string,
    now: Date,
  ): Promise<{ identityId: string; epoch: number } | { error: FlowFailure }> {
    await touchLink(trx, linkId, now);
    // Read here: a removal of this link committed later moves the epoch on, and the handoff's
    // session is dead on arrival.
    const identity = await findIdentity(trx, identityId);
    // A disabled identity's sign-in is the ordinary refusal.
    if (!identity || identity.disabledAt !== null) return { error: 'refused' };
    return { identityId, epoch: identity.sessionEpoch };
  }

  /** Whether the session a link or step-up flow was started from is still live. */
  async #startedFromLiveSession(flow: ProviderFlow): Promise<boolean> {
    if (!flow.identityId || !flow.sessionId) return false;
    const session = await sessionState(this.deps.database.db, flow.sessionId);
    return Boolean(
      session &&
        session.identityId === flow.identityId &&
        session.revokedAt === null &&
        new Date(session.expiresAt).getTime() > this.deps.clock.now().getTime() &&
        session.epoch === session.identityEpoch,
    );
  }

  /**
   * A step-up flow: the upstream account must be one linked to the identity the flow was started
   * by, from a session still live. The elevation itself is minted at the exchange.
   */
  async #stepUp(
    flow: ProviderFlow,
    who: UpstreamIdentity,
  ): Promise<{ identityId: string; epoch: number } | { error: FlowFailure }> {
    if (!(await this.#startedFromLiveSession(flow))) return { error: 'refused' };
    const link = await findLiveLink(this.deps.database.db, flow.provider, who.subject);
    if (!link || link.identityId !== flow.identityId) return { error: 'refused' };
    await touchLink(this.deps.database.db, link.id, this.deps.clock.now());
    return { identityId: link.identityId, epoch: 0 };
  }

  /** A link flow: only while the session it was started from is live; a subject linked elsewhere is refused. */
  async #link(flow: ProviderFlow, who: UpstreamIdentity): Promise<'linked' | FlowFailure> {
    const { audit, clock } = this.deps;
    const now = clock.now();
    if (!flow.identityId || !(await this.#startedFromLiveSession(flow))) return 'refused';
    const identityId = flow.identityId;
    return this.deps.database.db.transaction().execute(async (trx) => {
      const existing = await findLiveLink(trx, flow.provider, who.subject);
      if (existing) return existing.identityId === identityId ? 'linked' : 'already_linked';
      const id = await insertLink(trx, {
        id: randomUUID(),
        identityId,
        provider: flow.provider,
        subject: who.subject,
        now,
      });
      if (!id) return 'already_linked';
      await identityChanged(this.deps.events, trx, 'identity.updated', identityId, identityId);
      await audit.appendOwn(trx, 'identity.sign_in_method.verified', identityId, {
        kind: 'provider',
        provider: flow.provider,
        methodId: id,
      });
      return 'linked';
    });
  }

  /** The cookie whose value hashes to `bindingHash`, by name; undefined when the browser has none. */
  #binding(cookieHeader: string | undefined, bindingHash: string): string | undefined {
    for (const { name, value } of this.#cookies.parse(cookieHeader)) {
      if (!name.startsWith(this.#cookiePrefix) || !COOKIE_TAG.test(name.slice(this.#cookiePrefix.length)))
        continue;
      if (COOKIE_VALUE.test(value) && sha256Hex(value) === bindingHash) return name;
    }
    return undefined;
  }

  #location(returnTo: string, provider: string, extra: Record<string, string>): string {
    const query = new URLSearchParams({ provider, ...extra });
    return `${this.deps.config.publicOrigin}${returnTo}?${query}`;
  }

  /** A return without a handoff: the flow's cookie, when this browser holds it, is cleared. */
  #back(
    returnTo: string,
    provider: string,
    extra: { error: FlowFailure } | { result: 'linked' },
    cookieName?: string,
  ): FlowReturn {
    const cookies = cookieName ? [this.#cookies.clearing(cookieName)] : [];
    return { location: this.#location(returnTo, provider, extra), cookies };
  }
}

/**
 * The name a new identity takes from its provider at sign-up: the given and family names as the
 * provider gives them, and its full `name` as the display name only when it says more than those
 * two joined (so a later change of the given name is what applications show). Cleaned as every
 * claim the service did not write (profile.ts nameFromClaim).
 */
function namesFromUpstream(who: UpstreamIdentity): ProfileNames {
  const givenName = nameFromClaim(who.givenName);
  const familyName = nameFromClaim(who.familyName);
  const full = nameFromClaim(who.name);
  const joined = shownName({ givenName, familyName, displayName: null });
  return { givenName, familyName, displayName: full !== null && full !== joined ? full : null };
}
