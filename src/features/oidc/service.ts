import type { JWK } from 'jose';
import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Sealer } from '../../platform/crypto/seal.js';
import { safeEqual, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import { Problem } from '../../platform/problem.js';
import { type GuessBudgets, guessSubject } from '../../platform/rate-limit/guess-budget.js';
import { EventLog } from '../events/log.js';
import { pictureIdOf } from '../identities/picture-repository.js';
import { findIdentity, verifiedIdentifiers } from '../identities/repository.js';
import { OrganizationRoles } from '../organizations/roles.js';
import { OidcAdapter } from './adapter.js';
import { storedClient } from './clients.js';
import { CONSOLE_CLIENT_ID, configuredClients } from './console-client.js';
import { grantChanged } from './grant-events.js';
import { Interactions } from './interactions.js';
import { deleteRetiredKeys, loadSigningKeys, rotateSigningKeys, type SigningKeys } from './keys.js';
import {
  DEVICE_POLL_INTERVAL,
  type HostedSession,
  loadOidcLibrary,
  type OidcLibrary,
  OpenIdProvider,
  type PrefetchedTokens,
  type RegisteredClient,
  type SsoRouting,
  TOKEN_MODELS,
} from './provider.js';
import * as repo from './repository.js';

export interface OidcServiceDeps {
  config: Config;
  database: Database;
  clock: Clock;
  sealer: Sealer;
  guesses: GuessBudgets;
  audit: AuditLog;
  events: EventLog;
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** The hosted pages' cookie: its name and how to read the refresh token it holds. */
  hostedCookie: {
    refreshToken(cookieHeader: string | undefined): string | undefined;
    clearing: string;
  };
  /** Ends one of the service's sessions as a sign-out does (RP-initiated logout). */
  signOut(sessionId: string): Promise<void>;
  /** The live session whose current refresh token this is, read without rotating it. */
  liveSessionOf(refreshToken: string): Promise<
    | {
        identityId: string;
        sessionId: string;
        createdAt: Date;
        method: string;
        channel: string | null;
        ssoConnectionId: string | null;
        epoch: number;
      }
    | undefined
  >;
  /** Home-realm discovery and the start of an SSO flow (sso/service.ts), for routed requests. */
  sso: SsoRouting;
  /** The custom_claims hook (docs/events.md, "Synchronous hooks"): reserved names already dropped. */
  customClaims(request: {
    identityId: string;
    clientId: string;
    scope: string;
  }): Promise<Record<string, unknown>>;
}

const GRANT_SWEEP_BATCH = 200;

/**
 * The OpenID Provider: its signing keys (keys.ts), its clients, the storage its library calls
 * (adapter.ts), the interactions with the hosted pages (interactions.ts), the link from every grant
 * to one of the service's sessions, and the sweep that ends grants whose session ended (sending
 * their back-channel logouts). Sign-in is the hosted pages (docs/oidc.md).
 */
export class OidcService {
  readonly provider: OpenIdProvider;
  /** The interaction routes' steps, pages and consent (interactions.ts). */
  readonly interactions: Interactions;
  readonly #configured: Map<string, RegisteredClient>;
  readonly #publicKeys: JWK[];
  readonly #roles: OrganizationRoles;
  /** The token lookup a client-authenticated request makes with its guess budget (verifyClientSecret). */
  readonly #tokenStore: OidcAdapter;

  /**
   * Built in one step, from what `load` read before (the keys, the library): the provider's
   * callbacks into this service are called only when it serves a request.
   */
  private constructor(
    private readonly deps: OidcServiceDeps,
    keys: SigningKeys,
    library: OidcLibrary,
  ) {
    this.#configured = new Map(
      configuredClients(deps.config).map((c) => {
        const { clientSecret, ...rest } = c;
        return [c.clientId, { ...rest, secretHash: clientSecret ? sha256Hex(clientSecret) : null }];
      }),
    );
    this.#publicKeys = keys.publicJwks;
    this.#roles = new OrganizationRoles(deps.config);
    const storage = {
      db: deps.database.db,
      clock: deps.clock,
      grantsEnded: (trx: Executor, grants: repo.EndedGrant[]) => this.#recordEnded(trx, grants, null),
    };
    this.#tokenStore = new OidcAdapter('Token', storage);
    this.provider = new OpenIdProvider(
      {
        config: deps.config,
        clock: deps.clock,
        signingKeys: keys.privateJwks,
        cookieKey: deps.config.keys.oidcCookies,
        dpopNonceKey: deps.config.keys.oidcDpopNonces,
        clearHostedCookie: deps.hostedCookie.clearing,
        log: deps.log,
        storage: (name) => new OidcAdapter(name, storage),
        findClient: (clientId) => this.findClient(clientId),
        account: (identityId) => this.#account(identityId),
        grantOrganization: (grantId, identityId) => this.#grantOrganization(grantId, identityId),
        customClaims: deps.customClaims,
        hostedSession: (cookie) => this.hostedSession(cookie),
        sso: {
          routedOrganization: async (organization) =>
            (await deps.sso.route({ organization }))?.organizationId,
          connectionOrganization: (connectionId) => deps.sso.enabledConnectionOrganization(connectionId),
        },
        endHostedSession: async (cookie) => {
          const hosted = await this.hostedSession(cookie);
          if (hosted) await deps.signOut(hosted.sessionId);
          await this.sweep();
        },
      },
      library,
    );
    this.interactions = new Interactions({
      config: deps.config,
      database: deps.database,
      clock: deps.clock,
      audit: deps.audit,
      events: deps.events,
      provider: this.provider,
      hostedSession: (cookie) => this.hostedSession(cookie),
      findClient: (clientId) => this.findClient(clientId),
      sso: deps.sso,
    });
  }

  /**
   * Reads what the service is built from: the signing keys (made at the first start, keys.ts),
   * then the library (its import-time notice comes after a configuration refused by the keys).
   */
  static async load(deps: OidcServiceDeps): Promise<OidcService> {
    const keys = await loadSigningKeys(deps);
    return new OidcService(deps, keys, await loadOidcLibrary(deps.log));
  }

  /**
   * A rotation (`npm run oidc:rotate-keys`, keys.ts): answers the new key ids. Each new key's
   * `signing_key.rotated` is appended in the rotation's transaction (actor null: the command
   * holds no operator key).
   */
  static rotateKeys(deps: Pick<OidcServiceDeps, 'database' | 'sealer' | 'clock'>): Promise<string[]> {
    return rotateSigningKeys({ ...deps, events: new EventLog(deps.clock) });
  }

  /** The verified identifiers, name and language of a live (enabled) identity, for its claims. */
  async #account(identityId: string) {
    const db = this.deps.database.db;
    const identity = await findIdentity(db, identityId);
    if (!identity || identity.disabledAt !== null) return undefined;
    const identifiers = await verifiedIdentifiers(db, identityId);
    const email = identifiers.find((i) => i.type === 'email');
    const phone = identifiers.find((i) => i.type === 'phone');
    return {
      ...(email ? { email: { value: email.value } } : {}),
      ...(phone ? { phone: { value: phone.value } } : {}),
      profile: {
        givenName: identity.givenName,
        familyName: identity.familyName,
        displayName: identity.displayName,
        locale: identity.locale,
        pictureId: await pictureIdOf(db, identityId),
      },
    };
  }

  /** The `organization` scope's claims of a grant: its session's active organization. */
  async #grantOrganization(grantId: string, identityId: string) {
    const o = await repo.grantOrganization(this.deps.database.db, grantId, identityId);
    if (!o) return undefined;
    // The same list the access token's org_permissions has (sessions/access-tokens.ts).
    return {
      org_id: o.id,
      org_name: o.name,
      org_slug: o.slug,
      org_role: o.role,
      org_permissions: this.#roles.permissions(o.role),
      org_groups: o.groups ?? [],
    };
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

  /**
   * The operator an access token of the console's client stands for: live (unexpired, its grant
   * and service session live, the identity enabled, the epoch current), with how that session was
   * opened. Any other token, a token of another client included, is undefined.
   */
  consoleToken(value: string): Promise<repo.ClientAccessToken | undefined> {
    if (!/^[\w-]{16,128}$/.test(value)) return Promise.resolve(undefined);
    return repo.findClientAccessToken(this.deps.database.db, CONSOLE_CLIENT_ID, value, this.deps.clock.now());
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
      channel: live.channel,
      ssoConnectionId: live.ssoConnectionId,
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
    /**
     * The token the request presents (introspection's `token`, the refresh grant's
     * `refresh_token`): looked up in the budget's statement, for the library's finds that follow
     * in the request (`tokens`), so the request makes one round trip where it made two.
     */
    token?: string,
  ): Promise<{ secret?: string; tokens?: PrefetchedTokens }> {
    const client = await this.findClient(clientId);
    if (!client?.secretHash) return {};
    const subject = guessSubject.client(clientId);
    let tokens: PrefetchedTokens | undefined;
    const { counted } = await this.deps.guesses.notWaiting(
      subject,
      token === undefined
        ? undefined
        : async (key) => {
            const read = await this.#tokenStore.findTokensWithBudget(token, TOKEN_MODELS, key);
            tokens = { id: token, found: read.tokens };
            return read.budget;
          },
    );
    if (client.tokenEndpointAuthMethod !== method || !safeEqual(sha256Hex(secret), client.secretHash)) {
      await this.deps.guesses.admit(subject);
      return {};
    }
    if (counted) await this.deps.guesses.forgive(this.deps.database.db, subject);
    return { secret, ...(tokens ? { tokens } : {}) };
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
      // One transaction per batch: the grants end, their tokens go, their events and audit records
      // are written; the back-channel logouts are sent after it commits.
      const batch = await db.transaction().execute(async (trx) => {
        const claimed = await repo.endGrants(
          trx,
          { dead: true, batch: GRANT_SWEEP_BATCH },
          'session_ended',
          now,
        );
        for (const g of claimed) await repo.deleteGrantPayloads(trx, g.grantId);
        await this.#recordEnded(trx, claimed, null);
        return claimed;
      });
      ended += batch.length;
      await this.#notifyEnded(batch);
      if (batch.length < GRANT_SWEEP_BATCH) break;
    }
    const expired = await repo.sweepExpiredPayloads(db, now);
    await deleteRetiredKeys(db, now, this.deps.config.oidc.idTokenTtl);
    return { ended, expired };
  }

  /**
   * In the transaction that ended them: one `oidc.grant.revoked` per grant, then their audit
   * records (last: the audit append holds the chain's head lock until commit).
   */
  async #recordEnded(trx: Executor, grants: repo.EndedGrant[], actor: string | null): Promise<void> {
    for (const g of grants) await grantChanged(this.deps.events, trx, 'oidc.grant.revoked', actor, g.grantId);
    for (const g of grants) {
      await this.deps.audit.append(trx, {
        name: 'oidc.grant.ended',
        actor: null,
        target: g.identityId,
        outcome: 'success',
        details: { clientId: g.clientId, reason: g.reason },
      });
    }
  }

  /** The back-channel logouts of grants ended (after their transaction committed). */
  async #notifyEnded(grants: repo.EndedGrant[]): Promise<void> {
    for (const g of grants) {
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
    const now = this.deps.clock.now();
    const ended = await this.deps.database.db.transaction().execute(async (trx) => {
      const forgot = await repo.forgetConsent(trx, identityId, clientId);
      const grantIds = await repo.liveGrantsOf(trx, identityId, clientId);
      if (!forgot && grantIds.length === 0) throw new Problem('identity.connected_app_not_found');
      const claimed = await repo.endGrants(trx, { grantIds }, 'revoked_by_owner', now);
      for (const g of claimed) await repo.deleteGrantPayloads(trx, g.grantId);
      await this.#recordEnded(trx, claimed, identityId);
      return claimed;
    });
    await this.#notifyEnded(ended);
  }
}

function registeredFrom(stored: repo.StoredClient): RegisteredClient {
  return { ...storedClient(stored), secretHash: stored.secretHash };
}
