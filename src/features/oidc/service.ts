import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import type { Interaction } from 'oidc-provider';
import { type Config, ConfigError, pageImageOrigins } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Sealer } from '../../platform/crypto/seal.js';
import { safeEqual, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import { Problem } from '../../platform/problem.js';
import { type GuessBudgets, guessSubject } from '../../platform/rate-limit/guess-budget.js';
import { findIdentity, verifiedIdentifiers } from '../identities/repository.js';
import { OrganizationRoles } from '../organizations/roles.js';
import { lockKeyCreation } from '../sessions/repository.js';
import { storedClient } from './clients.js';
import {
  DEVICE_CODE_TTL,
  DEVICE_POLL_INTERVAL,
  type HostedSession,
  INTERACTION_TTL,
  type OidcProviderDeps,
  OpenIdProvider,
  type RegisteredClient,
  SILENT_PARAM,
} from './provider.js';
import * as repo from './repository.js';

export interface OidcServiceDeps {
  config: Config;
  database: Database;
  clock: Clock;
  sealer: Sealer;
  guesses: GuessBudgets;
  audit: AuditLog;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** The hosted pages' cookie: its name and how to read the refresh token it holds. */
  hostedCookie: {
    refreshToken(cookieHeader: string | undefined): string | undefined;
    clearing: string;
  };
  /** Ends one of the service's sessions as a sign-out does (RP-initiated logout). */
  signOut(sessionId: string): Promise<void>;
  /** The live session whose current refresh token this is, read without rotating it. */
  liveSessionOf(
    refreshToken: string,
  ): Promise<
    { identityId: string; sessionId: string; createdAt: Date; method: string; epoch: number } | undefined
  >;
}

/** What the interaction routes do next. */
export type InteractionStep = { kind: 'redirect'; to: string } | { kind: 'page'; to: string };

const GRANT_SWEEP_BATCH = 200;

/**
 * The OpenID Provider: its signing keys, its clients, the storage its library calls, the link from
 * every grant to one of the service's sessions, and the sweep that ends grants whose session ended
 * (sending their back-channel logouts). Sign-in is the hosted pages (docs/oidc.md).
 */
export class OidcService {
  provider!: OpenIdProvider;
  readonly #providerDeps: OidcProviderDeps;
  readonly #configured: Map<string, RegisteredClient>;
  readonly #publicKeys: JWK[];
  readonly #imageOrigins: Set<string>;

  private constructor(
    private readonly deps: OidcServiceDeps,
    keys: { privateJwks: Record<string, unknown>[]; publicJwks: JWK[] },
  ) {
    this.#configured = new Map(
      deps.config.oidc.clients.map((c) => {
        const { clientSecret, ...rest } = c;
        return [c.clientId, { ...rest, secretHash: clientSecret ? sha256Hex(clientSecret) : null }];
      }),
    );
    this.#publicKeys = keys.publicJwks;
    this.#imageOrigins = new Set(pageImageOrigins(deps.config));
    const db = deps.database.db;
    const now = () => deps.clock.now();
    const roles = new OrganizationRoles(deps.config);
    this.#providerDeps = {
      config: deps.config,
      clock: deps.clock,
      signingKeys: keys.privateJwks,
      cookieKey: deps.config.keys.oidcCookies,
      dpopNonceKey: deps.config.keys.oidcDpopNonces,
      clearHostedCookie: deps.hostedCookie.clearing,
      log: deps.log,
      store: {
        upsert: async (kind, id, payload, expiresIn) => {
          // A grant is stored under its own id as its grant: it lives exactly as its tokens do. An
          // interaction is not one of its grant's tokens: a new sign-in for it (prompt=login) ends
          // the hosted session that grant hangs off, and the interaction must survive that to
          // finish (a new grant is made for it, provider.ts's grant).
          const grantId =
            kind === 'Grant'
              ? id
              : kind !== 'Interaction' && typeof payload.grantId === 'string'
                ? payload.grantId
                : null;
          // A device code is found by the user code a person types (the uid column, indexed). Its
          // row outlives the code by another lifetime: the library then answers the device's poll
          // expired_token and the verification page refuses it, where a row gone would answer
          // invalid_grant (RFC 8628 3.5 asks for expired_token).
          const device = kind === 'DeviceCode';
          const keptFor = expiresIn ? expiresIn + (device ? DEVICE_CODE_TTL : 0) : 0;
          await repo.upsertPayload(db, {
            kind,
            id,
            payload,
            grantId,
            uid: device
              ? typeof payload.userCode === 'string'
                ? payload.userCode
                : null
              : typeof payload.uid === 'string'
                ? payload.uid
                : null,
            expiresAt: keptFor ? new Date(now().getTime() + keptFor * 1000) : null,
          });
          // The sid the ID tokens of this grant carry: its back-channel logout repeats it.
          if ((kind === 'AuthorizationCode' || device) && grantId && typeof payload.sid === 'string') {
            await repo.setGrantSid(db, grantId, payload.sid);
          }
          if (kind === 'RefreshToken' && grantId && expiresIn && typeof payload.exp === 'number') {
            await repo.extendGrant(db, grantId, new Date(now().getTime() + expiresIn * 1000), payload.exp);
          }
        },
        find: async (kind, id) => {
          const found = await repo.findLivePayload(db, kind, id, now());
          if (!found) return undefined;
          return found.consumedAt
            ? { ...found.payload, consumed: Math.floor(found.consumedAt.getTime() / 1000) }
            : found.payload;
        },
        findByUid: async (kind, uid) => (await repo.findPayloadByUid(db, kind, uid, now()))?.payload,
        findDeviceCode: async (userCode) =>
          (await repo.findPayloadByUid(db, 'DeviceCode', userCode, now()))?.payload,
        consume: (kind, id) => repo.consumePayload(db, kind, id, now()),
        destroy: (kind, id) => repo.deletePayload(db, kind, id),
        claim: (kind, id, payload, expiresIn) =>
          repo.claimPayload(
            db,
            { kind, id, payload, expiresAt: new Date(now().getTime() + expiresIn * 1000) },
            now(),
          ),
        revokeGrant: async (grantId, reason) => {
          await this.#endGrants(await repo.endGrants(db, { grantIds: [grantId] }, reason, now()), false);
          await repo.deleteGrantPayloads(db, grantId);
        },
      },
      findClient: (clientId) => this.findClient(clientId),
      account: async (identityId) => {
        const identity = await findIdentity(db, identityId);
        if (!identity || identity.disabledAt !== null) return undefined;
        const identifiers = await verifiedIdentifiers(db, identityId);
        const email = identifiers.find((i) => i.type === 'email');
        const phone = identifiers.find((i) => i.type === 'phone');
        return {
          ...(email ? { email: { value: email.value } } : {}),
          ...(phone ? { phone: { value: phone.value } } : {}),
        };
      },
      grantOrganization: async (grantId, identityId) => {
        const o = await repo.grantOrganization(db, grantId, identityId);
        if (!o) return undefined;
        // The same list the access token's org_permissions has (sessions/access-tokens.ts).
        return {
          org_id: o.id,
          org_name: o.name,
          org_slug: o.slug,
          org_role: o.role,
          org_permissions: roles.permissions(o.role),
        };
      },
      hostedSession: (cookie) => this.hostedSession(cookie),
      endHostedSession: async (cookie) => {
        const hosted = await this.hostedSession(cookie);
        if (hosted) await deps.signOut(hosted.sessionId);
        await this.sweep();
      },
    };
  }

  /**
   * Loads the provider's signing keys (an RS256 key, which conformance requires, and an EdDSA
   * key), making them at the first start under an advisory lock so instances agree.
   */
  static async load(deps: OidcServiceDeps): Promise<OidcService> {
    const { database, clock, sealer, config } = deps;
    const publishedSince = new Date(clock.now().getTime() - config.oidc.idTokenTtl * 1000);
    const rows = await database.db.transaction().execute(async (trx) => {
      await lockKeyCreation(trx);
      const existing = await repo.oidcKeys(trx, publishedSince);
      for (const alg of KEY_ALGORITHMS) {
        if (!existing.some((k) => k.alg === alg && k.retiredAt === null))
          await makeKey(trx, sealer, alg, clock.now());
      }
      return repo.oidcKeys(trx, publishedSince);
    });
    const privateJwks: Record<string, unknown>[] = [];
    const publicJwks: JWK[] = [];
    // Newest first: the provider signs with the first key of each algorithm.
    for (const row of [...rows].reverse()) {
      publicJwks.push(row.publicJwk as JWK);
      if (row.retiredAt !== null) continue;
      let opened: string;
      try {
        opened = sealer.open(row.sealedPrivateJwk, `oidc-signing-key:${row.kid}`);
      } catch {
        throw new ConfigError(
          'SECRETS_KEY',
          'does not open the OpenID Provider keys stored in the database: it is not the key they were sealed with',
        );
      }
      privateJwks.push({ ...(JSON.parse(opened) as JWK), kid: row.kid, alg: row.alg, use: 'sig' });
    }
    const service = new OidcService(deps, { privateJwks, publicJwks });
    service.provider = await OpenIdProvider.create(service.#providerDeps);
    return service;
  }

  /**
   * A rotation (`npm run oidc:rotate-keys`): a new key of each algorithm signs from the next start
   * of each instance; the old ones are retired, published until the ID tokens they signed expire
   * (OIDC_ID_TOKEN_TTL), then deleted by the sweep. Answers the new key ids.
   */
  static async rotateKeys(deps: Pick<OidcServiceDeps, 'database' | 'sealer' | 'clock'>): Promise<string[]> {
    const { database, sealer, clock } = deps;
    return database.db.transaction().execute(async (trx) => {
      await lockKeyCreation(trx);
      const kids: string[] = [];
      for (const alg of KEY_ALGORITHMS) {
        const kid = await makeKey(trx, sealer, alg, clock.now());
        await repo.retireOidcKeys(trx, alg, kid, clock.now());
        kids.push(kid);
      }
      return kids;
    });
  }

  /** The provider's public keys, for the one JWKS the service publishes. */
  publicKeys(): JWK[] {
    return this.#publicKeys;
  }

  async findClient(clientId: string): Promise<RegisteredClient | undefined> {
    const configured = this.#configured.get(clientId);
    if (configured) return configured;
    const stored = await repo.findClient(this.deps.database.db, clientId);
    return stored ? registeredFrom(stored) : undefined;
  }

  async hostedSession(cookieHeader: string | undefined): Promise<HostedSession | undefined> {
    const token = this.deps.hostedCookie.refreshToken(cookieHeader);
    if (!token) return undefined;
    const live = await this.deps.liveSessionOf(token);
    if (!live) return undefined;
    return {
      identityId: live.identityId,
      sessionId: live.sessionId,
      signedInAt: live.createdAt,
      method: live.method,
      epoch: live.epoch,
    };
  }

  /**
   * Whether a device may poll the token endpoint with this device code now: not sooner than
   * DEVICE_POLL_INTERVAL seconds after its last allowed poll (RFC 8628 3.5's slow_down; the library
   * does not keep this). Keyed by the code's hash, so no device code is written in clear twice.
   */
  async devicePollAllowed(deviceCode: string): Promise<boolean> {
    const now = this.deps.clock.now();
    const next = new Date(now.getTime() + DEVICE_POLL_INTERVAL * 1000);
    return repo.allowDevicePoll(this.deps.database.db, sha256Hex(deviceCode), now, next);
  }

  /**
   * Checks a client secret presented at a client-authenticated endpoint against its hash, inside
   * the client's guess budget: refused unchecked while the client must wait, a wrong secret
   * counts, a right one forgives (writing nothing when nothing was counted). Answers the secret
   * when it is right, for the provider to compare again; undefined when it is not.
   *
   * A secret presented by another method than the client's registered one (Basic for a
   * client_secret_post client, or the reverse) fails as a wrong secret does: the library accepts
   * either, so this is where the registered method holds. It counts, is never compared (the answer
   * says nothing about the secret) and never forgives, so a leaked secret replayed the other way
   * gains nothing over a guess (docs/decisions.md, "The registered client authentication method").
   */
  async verifyClientSecret(
    clientId: string,
    secret: string,
    method: 'client_secret_basic' | 'client_secret_post',
  ): Promise<string | undefined> {
    const client = await this.findClient(clientId);
    if (!client?.secretHash) return undefined;
    const subject = guessSubject.client(clientId);
    const { counted } = await this.deps.guesses.notWaiting(subject);
    if (client.tokenEndpointAuthMethod !== method || !safeEqual(sha256Hex(secret), client.secretHash)) {
      await this.deps.guesses.admit(subject);
      return undefined;
    }
    if (counted) await this.deps.guesses.forgive(this.deps.database.db, subject);
    return secret;
  }

  /**
   * The next step of an interaction. Login: the hosted session, when there is one fresh enough for
   * the request, logs the provider in at once; otherwise the hosted sign-in page (recorded the
   * first time, with the hosted session the browser then held). Consent: granted at once for a
   * first-party client or a remembered consent that covers the request; otherwise the consent page.
   */
  async nextStep(req: IncomingMessage, res: ServerResponse, uiPath: string): Promise<InteractionStep> {
    const interaction = await this.provider.interactionDetails(req, res);
    const hosted = await this.hostedSession(req.headers.cookie);
    const uid = interaction.uid;
    const silent = interaction.params[SILENT_PARAM] !== undefined;
    const db = this.deps.database.db;
    if (interaction.prompt.name === 'login') {
      const now = this.deps.clock.now();
      if (hosted && this.freshEnough(interaction, hosted, await repo.signInPageOf(db, uid, now))) {
        return { kind: 'redirect', to: await this.provider.logIn(req, res, interaction, hosted) };
      }
      if (silent) return this.#finish(req, res, { error: 'login_required', error_description: 'no session' });
      await repo.recordSignInPage(
        db,
        uid,
        { heldSessionId: hosted?.sessionId ?? null, shownAt: now },
        new Date(now.getTime() + INTERACTION_TTL * 1000),
      );
      return { kind: 'page', to: `${uiPath}#/authorize/${uid}` };
    }
    if (interaction.prompt.name === 'consent') {
      if (!hosted || hosted.identityId !== interaction.session?.accountId) {
        // The hosted session ended or changed hands since the login prompt: start again.
        return this.#finish(req, res, { error: 'login_required', error_description: 'the session ended' });
      }
      const client = await this.findClient(String(interaction.params.client_id));
      if (!client) return this.#finish(req, res, { error: 'access_denied' });
      const requested = this.provider.requestedScopes(interaction);
      const remembered =
        (await repo.consentOf(this.deps.database.db, hosted.identityId, client.clientId)) ?? '';
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
  }> {
    const interaction = await this.provider.interactionDetails(req, res);
    const client = await this.findClient(String(interaction.params.client_id));
    const prompts = String(interaction.params.prompt ?? '').split(' ');
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
      scopes: this.provider.requestedScopes(interaction),
      freshSignIn: prompts.includes('login') || interaction.params.max_age !== undefined,
      // The authorization request's ui_locales (most wanted first): the pages speak the first they can.
      uiLocales: String(interaction.params.ui_locales ?? '')
        .split(' ')
        .filter((tag) => tag !== ''),
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
    const interaction = await this.provider.interactionDetails(req, res);
    const hosted = await this.hostedSession(req.headers.cookie);
    if (
      interaction.prompt.name !== 'consent' ||
      !hosted ||
      hosted.identityId !== interaction.session?.accountId
    ) {
      return this.provider.interactionResult(req, res, {
        error: 'login_required',
        error_description: 'the session ended',
      });
    }
    if (!allow) {
      return this.provider.interactionResult(req, res, {
        error: 'access_denied',
        error_description: 'the person declined',
      });
    }
    return this.provider.interactionResult(req, res, await this.#consent(interaction, hosted, true));
  }

  async #consent(interaction: Interaction, hosted: HostedSession, remember: boolean) {
    const { grantId, scope } = await this.provider.grant(interaction);
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
    return { kind: 'redirect', to: await this.provider.interactionResult(req, res, result) };
  }

  /**
   * Ends every live grant whose service session or epoch has ended (any path that ends sessions:
   * sign-out, sign-out everywhere, a device's session, password change or recovery, an operator's
   * disable, sign-out or erasure), and every grant, offline ones too, of a session found stolen (a
   * replayed refresh token), deletes their tokens and sends their back-channel logouts.
   * Refresh, introspection and userinfo already refuse them: the grant's link is read on each use.
   *
   * Sweeps of one instance run one after another: a call made while the timer's sweep is sending
   * a grant's logout returns after that logout, not before it (instances still sweep side by side:
   * each grant is claimed by exactly one, in `endGrants`).
   */
  sweep(): Promise<{ ended: number; expired: number }> {
    const run = this.#sweeping.then(() => this.#sweepOnce());
    this.#sweeping = run.catch(() => undefined);
    return run;
  }

  #sweeping: Promise<unknown> = Promise.resolve();

  async #sweepOnce(): Promise<{ ended: number; expired: number }> {
    const db = this.deps.database.db;
    const now = this.deps.clock.now();
    let ended = 0;
    for (;;) {
      const batch = await repo.endGrants(db, { dead: true, batch: GRANT_SWEEP_BATCH }, 'session_ended', now);
      ended += batch.length;
      for (const g of batch) await repo.deleteGrantPayloads(db, g.grantId);
      await this.#endGrants(batch, true);
      if (batch.length < GRANT_SWEEP_BATCH) break;
    }
    const expired = await repo.sweepExpiredPayloads(db, now);
    await repo.deleteRetiredOidcKeys(db, new Date(now.getTime() - this.deps.config.oidc.idTokenTtl * 1000));
    return { ended, expired };
  }

  async #endGrants(grants: repo.EndedGrant[], notify: boolean): Promise<void> {
    for (const g of grants) {
      await this.deps.database.db.transaction().execute((trx) =>
        this.deps.audit.append(trx, {
          name: 'oidc.grant.ended',
          actor: null,
          target: g.identityId,
          outcome: 'success',
          details: { clientId: g.clientId, reason: g.reason },
        }),
      );
      if (!notify) continue;
      try {
        await this.provider.backchannelLogout(g.clientId, g.identityId, g.sid);
      } catch (error) {
        // The client's endpoint failed: its tokens are already refused; it is told once.
        this.deps.log.warn(
          { clientId: g.clientId, reason: error instanceof Error ? error.message : String(error) },
          'back-channel logout not delivered',
        );
      }
    }
  }

  /** The clients that hold access for an identity (the account UI's "Connected apps"). */
  connectedApps(identityId: string) {
    return repo.connectedApps(this.deps.database.db, identityId);
  }

  /** Revokes a client's access: its remembered consent and every live grant (with back-channel logout). */
  async revokeApp(identityId: string, clientId: string): Promise<void> {
    const db = this.deps.database.db;
    const now = this.deps.clock.now();
    const forgot = await repo.forgetConsent(db, identityId, clientId);
    const grantIds = await repo.liveGrantsOf(db, identityId, clientId);
    if (!forgot && grantIds.length === 0) throw new Problem('identity.connected_app_not_found');
    const ended = await repo.endGrants(db, { grantIds }, 'revoked_by_owner', now);
    for (const g of ended) await repo.deleteGrantPayloads(db, g.grantId);
    await this.#endGrants(ended, true);
  }
}

const KEY_ALGORITHMS = ['RS256', 'EdDSA'] as const;

/** A new sealed signing key of `alg` (RSA 2048 for RS256, Ed25519 for EdDSA); answers its kid. */
async function makeKey(
  trx: Executor,
  sealer: Sealer,
  alg: (typeof KEY_ALGORITHMS)[number],
  now: Date,
): Promise<string> {
  const { privateKey } =
    alg === 'RS256'
      ? await generateKeyPair('RS256', { modulusLength: 2048, extractable: true })
      : await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = randomUUID();
  const publicJwk = publicPart({ ...jwk, kid, alg, use: 'sig' });
  const sealed = sealer.seal(JSON.stringify(jwk), `oidc-signing-key:${kid}`);
  await repo.insertOidcKey(trx, { kid, alg, sealedPrivateJwk: sealed, publicJwk }, now);
  return kid;
}

function publicPart(jwk: JWK): Record<string, unknown> {
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = jwk;
  return pub;
}

function registeredFrom(stored: repo.StoredClient): RegisteredClient {
  return { ...storedClient(stored), secretHash: stored.secretHash };
}
