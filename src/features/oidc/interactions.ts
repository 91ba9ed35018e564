import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Config, pageImageOrigins } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Database } from '../../platform/db/database.js';
import type { EventLog } from '../events/log.js';
import { grantChanged } from './grant-events.js';
import {
  type HostedSession,
  INTERACTION_TTL,
  type Interaction,
  type OpenIdProvider,
  ORGANIZATION_PARAM,
  type RegisteredClient,
  SILENT_PARAM,
  type SsoRouting,
  UNROUTABLE_ORGANIZATION,
} from './provider.js';
import * as repo from './repository.js';

/**
 * What the interaction routes do next: `cookie` is set on the way (an SSO flow's, binding the
 * AuthnRequest or OpenID state to this browser).
 */
export type InteractionStep =
  | { kind: 'redirect'; to: string; cookie?: string }
  | { kind: 'page'; to: string };

/** Where a request is routed (docs/oidc.md, "Enterprise sign-in"). */
interface Routed {
  connectionId: string;
  organizationId: string;
  /** Named by the `organization` parameter: only a session through its IdP answers. */
  byOrganization: string | null;
}

export interface InteractionDeps {
  config: Config;
  database: Database;
  clock: Clock;
  audit: AuditLog;
  events: EventLog;
  provider: OpenIdProvider;
  /** The hosted pages' live session named by this cookie header. */
  hostedSession(cookieHeader: string | undefined): Promise<HostedSession | undefined>;
  findClient(clientId: string): Promise<RegisteredClient | undefined>;
  sso: SsoRouting;
}

/**
 * The bridge from the provider's interactions to the hosted pages (docs/oidc.md, "Sign-in and
 * consent"): which step comes next (a login from the hosted session, the sign-in page, a consent
 * given at once or the consent page), what the pages draw, and the consent page's answer, which
 * links the grant to the hosted session.
 */
export class Interactions {
  readonly #imageOrigins: Set<string>;

  constructor(private readonly deps: InteractionDeps) {
    this.#imageOrigins = new Set(pageImageOrigins(deps.config));
  }

  /**
   * The next step of an interaction. Login: the hosted session, when there is one fresh enough for
   * the request, logs the provider in at once; otherwise the hosted sign-in page (recorded the
   * first time, with the hosted session the browser then held). Consent: granted at once for a
   * first-party client or a remembered consent that covers the request; otherwise the consent page.
   */
  async nextStep(req: IncomingMessage, res: ServerResponse, uiPath: string): Promise<InteractionStep> {
    const { provider } = this.deps;
    const interaction = await provider.interactionDetails(req, res);
    const hosted = await this.deps.hostedSession(req.headers.cookie);
    const uid = interaction.uid;
    const silent = interaction.params[SILENT_PARAM] !== undefined;
    const db = this.deps.database.db;
    if (interaction.prompt.name === 'login') {
      const now = this.deps.clock.now();
      const routed = await this.#routed(interaction);
      if (routed === 'unroutable') {
        return this.#finish(req, res, {
          error: 'invalid_request',
          error_description: UNROUTABLE_ORGANIZATION,
        });
      }
      if (
        hosted &&
        this.freshEnough(interaction, hosted, await repo.signInPageOf(db, uid, now)) &&
        (await this.#fits(hosted, routed))
      ) {
        return { kind: 'redirect', to: await provider.logIn(req, res, interaction, hosted) };
      }
      if (silent) return this.#finish(req, res, { error: 'login_required', error_description: 'no session' });
      await repo.recordSignInPage(
        db,
        uid,
        { heldSessionId: hosted?.sessionId ?? null, shownAt: now },
        new Date(now.getTime() + INTERACTION_TTL * 1000),
      );
      const back = `${uiPath}#/authorize/${uid}`;
      if (routed) {
        // Straight to the organization's IdP: its answer comes back to the application's sign-in
        // page, which exchanges the handoff and hands the window back here.
        try {
          const started = await this.deps.sso.start(routed.connectionId, back);
          return { kind: 'redirect', to: started.redirectUrl, cookie: started.cookie };
        } catch {
          // The connection went away since, or its OpenID issuer did not answer.
          return this.#finish(req, res, {
            error: 'temporarily_unavailable',
            error_description: 'the identity provider cannot be reached',
          });
        }
      }
      return { kind: 'page', to: back };
    }
    if (interaction.prompt.name === 'consent') {
      if (!hosted) {
        // The hosted session ended since the login prompt ("Not you?" signs out): sign in again on
        // the hosted page, whose completion comes back here.
        if (silent)
          return this.#finish(req, res, { error: 'login_required', error_description: 'the session ended' });
        return { kind: 'page', to: `${uiPath}#/authorize/${uid}` };
      }
      if (hosted.identityId !== interaction.session?.accountId) {
        // Another account signed in on the hosted pages since the login prompt ("Not you?"): the
        // provider is logged in as that account, and asks its own consent from the start.
        return { kind: 'redirect', to: await provider.logIn(req, res, interaction, hosted) };
      }
      const client = await this.deps.findClient(String(interaction.params.client_id));
      if (!client) return this.#finish(req, res, { error: 'access_denied' });
      const requested = provider.requestedScopes(interaction);
      const remembered = (await repo.consentOf(db, hosted.identityId, client.clientId)) ?? '';
      const covered = requested.every((s) => remembered.split(' ').includes(s));
      if (client.firstParty || covered) {
        return this.#finish(req, res, await this.#consent(interaction, hosted, false));
      }
      if (silent)
        return this.#finish(req, res, { error: 'consent_required', error_description: 'consent needed' });
      return { kind: 'page', to: `${uiPath}#/consent/${uid}` };
    }
    return this.#finish(req, res, { error: 'access_denied', error_description: 'unsupported prompt' });
  }

  /**
   * Whether the hosted session satisfies `prompt=login` and `max_age` of this request (docs/oidc.md,
   * "Sign-in and consent"). A sign-in made for this interaction satisfies both: one opened at or
   * after its sign-in page was first shown, into a session other than the one the browser held
   * then. Both times are the database's, to the millisecond; the session is compared by id, so a
   * sign-in made at the very instant the page was shown still counts and the session the browser
   * already held never does, whatever the clock says. The provider's whole-second times (the
   * interaction's iat, auth_time) cannot tell these apart.
   */
  freshEnough(interaction: Interaction, hosted: HostedSession, page: repo.SignInPage | undefined): boolean {
    const madeHere =
      page !== undefined &&
      hosted.sessionId !== page.heldSessionId &&
      hosted.signedInAt.getTime() >= page.shownAt.getTime();
    if (madeHere) return true;
    // prompt=login: only a sign-in made for this request, never one the browser came with.
    const prompts = String(interaction.params.prompt ?? '').split(' ');
    if (prompts.includes('login')) return false;
    const maxAge = interaction.params.max_age;
    if (maxAge === undefined) return true;
    // Strictly younger, so max_age=0 asks for a sign-in made here even on a clock that stood still.
    return this.deps.clock.now().getTime() - hosted.signedInAt.getTime() < Number(maxAge) * 1000;
  }

  /**
   * Where the request goes to sign in (docs/oidc.md, "Enterprise sign-in"): the `organization`
   * parameter's organization (`unroutable` when it has no enabled connection now, which the
   * authorization request's own check refused before), else the organization that verified
   * `login_hint`'s domain, else nowhere (the hosted sign-in).
   */
  async #routed(interaction: Interaction): Promise<Routed | 'unroutable' | undefined> {
    const named = interaction.params[ORGANIZATION_PARAM];
    if (typeof named === 'string') {
      const route = await this.deps.sso.route({ organization: named });
      return route ? { ...route, byOrganization: named } : 'unroutable';
    }
    const hint = interaction.params.login_hint;
    if (typeof hint !== 'string') return undefined;
    const route = await this.deps.sso.route({ email: hint });
    return route ? { ...route, byOrganization: null } : undefined;
  }

  /** Whether the hosted session answers a request routed so: only an organization's narrows it. */
  async #fits(hosted: HostedSession, routed: Routed | undefined): Promise<boolean> {
    if (!routed?.byOrganization) return true;
    // The provider's own check reads the session's amr (provider.ts, sessionFitsOrganization);
    // the hosted session names its connection directly, the same one its amr would.
    if (!hosted.ssoConnectionId) return false;
    return (
      (await this.deps.sso.enabledConnectionOrganization(hosted.ssoConnectionId)) === routed.organizationId
    );
  }

  /** For the hosted pages: what the interaction asks, to draw the sign-in or consent page. */
  async describe(
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<{
    uid: string;
    prompt: string;
    client: {
      clientId: string;
      name: string;
      firstParty: boolean;
      logoUri: string | null;
      clientUri: string | null;
      policyUri: string | null;
      tosUri: string | null;
    };
    scopes: string[];
    freshSignIn: boolean;
    uiLocales: string[];
    loginHint: string | null;
  }> {
    const interaction = await this.deps.provider.interactionDetails(req, res);
    const client = await this.deps.findClient(String(interaction.params.client_id));
    const prompts = String(interaction.params.prompt ?? '').split(' ');
    // A request naming an organization that the browser's session does not answer (made by a
    // password, or through another organization's IdP) asks for a sign-in, as prompt=login does:
    // the page must not hand the window straight back, which would go to the IdP again.
    const routed = await this.#routed(interaction);
    const hosted =
      routed && routed !== 'unroutable' ? await this.deps.hostedSession(req.headers.cookie) : undefined;
    const unfit = hosted !== undefined && routed !== 'unroutable' && !(await this.#fits(hosted, routed));
    const hint = interaction.params.login_hint;
    return {
      uid: interaction.uid,
      prompt: interaction.prompt.name,
      client: {
        clientId: String(interaction.params.client_id),
        name: client?.clientName ?? String(interaction.params.client_id),
        firstParty: client?.firstParty ?? false,
        logoUri: client?.logoUri && this.#logoShown(client.logoUri) ? client.logoUri : null,
        clientUri: client?.clientUri ?? null,
        policyUri: client?.policyUri ?? null,
        tosUri: client?.tosUri ?? null,
      },
      scopes: this.deps.provider.requestedScopes(interaction),
      freshSignIn: prompts.includes('login') || interaction.params.max_age !== undefined || unfit,
      // The authorization request's ui_locales (most wanted first): the pages speak the first they can.
      uiLocales: String(interaction.params.ui_locales ?? '')
        .split(' ')
        .filter((tag) => tag !== ''),
      // The application's login_hint, for the page to fill the identifier with (OpenID Connect
      // Core 3.1.2.1); a hint whose domain signs in through an IdP went there instead, unless it came back refused.
      loginHint: typeof hint === 'string' && hint.length <= 320 ? hint : null,
    };
  }

  /**
   * Whether the hosted pages' CSP lets them load this logo: on the public origin, or on one of the
   * origins added to img-src at start-up. Any other is not offered (the browser would refuse it).
   */
  #logoShown(logoUri: string): boolean {
    const origin = new URL(logoUri).origin;
    return origin === new URL(this.deps.config.publicOrigin).origin || this.#imageOrigins.has(origin);
  }

  /** The consent page's answer: the URL the browser goes to next. */
  async decide(req: IncomingMessage, res: ServerResponse, allow: boolean): Promise<string> {
    const { provider } = this.deps;
    const interaction = await provider.interactionDetails(req, res);
    const hosted = await this.deps.hostedSession(req.headers.cookie);
    if (
      interaction.prompt.name !== 'consent' ||
      !hosted ||
      hosted.identityId !== interaction.session?.accountId
    ) {
      return provider.interactionResult(req, res, {
        error: 'login_required',
        error_description: 'the session ended',
      });
    }
    if (!allow) {
      return provider.interactionResult(req, res, {
        error: 'access_denied',
        error_description: 'the person declined',
      });
    }
    return provider.interactionResult(req, res, await this.#consent(interaction, hosted, true));
  }

  async #consent(interaction: Interaction, hosted: HostedSession, remember: boolean) {
    const { grantId, scope } = await this.deps.provider.grant(interaction);
    const db = this.deps.database.db;
    const now = this.deps.clock.now();
    const clientId = String(interaction.params.client_id);
    await db.transaction().execute(async (trx) => {
      await repo.linkGrant(
        trx,
        {
          grantId,
          identityId: hosted.identityId,
          sessionId: hosted.sessionId,
          clientId,
          epoch: hosted.epoch,
          offline: scope.split(' ').includes('offline_access'),
          scope,
        },
        now,
      );
      if (remember) {
        const known = (await repo.consentOf(trx, hosted.identityId, clientId)) ?? '';
        const merged = [...new Set([...known.split(' '), ...scope.split(' ')].filter(Boolean))].join(' ');
        await repo.rememberConsent(trx, hosted.identityId, clientId, merged, now);
      }
      // Each grant given (a widened one again, under the same id): the person's act, or the
      // service's for a first-party client or a remembered consent; the person is the actor of both.
      await grantChanged(this.deps.events, trx, 'oidc.grant.created', hosted.identityId, grantId);
      await this.deps.audit.appendOwn(trx, 'oidc.grant.given', hosted.identityId, {
        clientId,
        scope,
        consent: remember ? 'given' : 'not_needed',
      });
    });
    return { consent: { grantId } };
  }

  async #finish(
    req: IncomingMessage,
    res: ServerResponse,
    result: Parameters<OpenIdProvider['interactionResult']>[2],
  ): Promise<InteractionStep> {
    return { kind: 'redirect', to: await this.deps.provider.interactionResult(req, res, result) };
  }
}
