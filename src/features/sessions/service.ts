import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { RequestMeta } from '../../platform/http/auth.js';
import type { Signals } from '../../platform/metrics/signals.js';
import { maskIdentifier } from '../../platform/notify/mask.js';
import type { CursorCodec, CursorScope } from '../../platform/pagination/cursor.js';
import { type KeysetWindow, keysetPage, type PageQuery } from '../../platform/pagination/page.js';
import { Problem, type ProblemCode } from '../../platform/problem.js';
import type { GuessBudgets } from '../../platform/rate-limit/guess-budget.js';
import { guessSubject } from '../../platform/rate-limit/guess-budget.js';
import type { EventLog } from '../events/log.js';
import { lockIdentity, type SummaryColumns, toSummary } from '../identities/repository.js';
import { switchTarget } from '../organizations/repository.js';
import { OrganizationRoles } from '../organizations/roles.js';
import type { AccessTokens, OrganizationClaims } from './access-tokens.js';
import { describeDevice } from './devices.js';
import { sessionsEnded } from './events.js';
import * as repo from './repository.js';
import { endAllSessionsListed, endOtherSessions, lockCallerSession } from './revocations.js';
import type { SessionGrantSchema } from './schemas.js';

/** What a sign-in or a renewal answers with a session: the routes send it as SessionGrantSchema. */
export type SessionGrant = Static<typeof SessionGrantSchema>;

/** What a new session is opened with: the epoch read before the proof, the method, the request. */
export interface SessionOpening {
  identityId: string;
  epoch: number;
  method: string;
  /** The channel of a code sign-in's code (amr `email` or `sms`); absent for every other method. */
  channel?: 'email' | 'phone';
  /** The organization's connection of an `sso` sign-in (docs/sso.md); absent for every other method. */
  connectionId?: string;
  meta: RequestMeta;
  now: Date;
}

export interface OpenedSession {
  sessionId: string;
  grant: SessionGrant;
}

/** What opening, renewing, listing and ending sessions use. */
export interface SessionServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  guesses: GuessBudgets;
  cursors: CursorCodec;
  tokens: AccessTokens;
  signals: Signals;
  config: Pick<Config, 'lifetimes' | 'organizations'>;
  /** `session.ended` for the ends a person causes (docs/events.md). */
  events: EventLog;
}

export class SessionService {
  readonly #roles: OrganizationRoles;

  constructor(private readonly deps: SessionServiceDeps) {
    this.#roles = new OrganizationRoles(deps.config);
  }

  /**
   * Opens a session stamped with the epoch read before the credential was verified, in its own
   * transaction; no sign-in history (sign-in/complete.ts writes that when a sign-in opens one).
   * `refusal` is the act's ordinary refusal, answered when the identity was disabled meanwhile.
   */
  async openSession(
    identityId: string,
    epoch: number,
    method: string,
    meta: RequestMeta,
    refusal: ProblemCode = 'identity.sign_in_refused',
  ): Promise<SessionGrant> {
    const now = this.deps.clock.now();
    return this.deps.database.db
      .transaction()
      .execute(
        async (trx) => (await this.create(trx, { identityId, epoch, method, meta, now }, refusal)).grant,
      );
  }

  /**
   * Creates a session inside the caller's transaction (so a proof spent by compare-and-set and the
   * session it opens commit together or not at all) and signs its access token there: a signing
   * failure rolls the session back. A disabled (or erased) identity is `refusal`.
   */
  async create(trx: Executor, opening: SessionOpening, refusal: ProblemCode): Promise<OpenedSession> {
    const { identityId, epoch, method, channel, connectionId, meta, now } = opening;
    const sessionId = randomUUID();
    const refreshToken = opaqueToken();
    const expiresAt = new Date(now.getTime() + this.deps.config.lifetimes.session * 1000);
    const opened = await repo.insertSession(trx, {
      id: sessionId,
      identityId,
      epoch,
      method,
      channel: channel ?? null,
      connectionId: connectionId ?? null,
      now,
      expiresAt,
      refreshHash: sha256Hex(refreshToken),
      ...metaOf(meta),
    });
    if (!opened) throw new Problem(refusal);
    const access = await this.deps.tokens.sign(identityId, sessionId);
    return { sessionId, grant: grant(access, refreshToken, expiresAt) };
  }

  /**
   * Rotation in one round trip: one atomic statement rotates (only the current generation of a
   * live session) and answers whose session it is, or revokes the session when a spent generation
   * is presented, or writes nothing (an unknown token). The next access token is signed after the
   * commit, in memory with a key loaded at start-up; should that ever fail, the rotation is taken
   * back, so the client's retry with the token it holds is not mistaken for a replay.
   */
  async renew(refreshToken: string): Promise<SessionGrant> {
    const { db } = this.deps.database;
    const presented = sha256Hex(refreshToken);
    const next = opaqueToken();
    const nextHash = sha256Hex(next);
    const now = this.deps.clock.now();
    const renewal = await repo.renewSession(db, presented, nextHash, now);
    if (renewal.outcome === 'replayed') {
      this.deps.signals.sessionsRevoked('refresh_token_replayed', 1);
      // Right after the one statement that ended the family, not inside it: the hottest write
      // stays one round trip (docs/decisions.md, "Events: a replay's session.ended").
      await db
        .transaction()
        .execute((trx) =>
          sessionsEnded(
            this.deps.events,
            trx,
            null,
            renewal.identityId,
            [renewal.sessionId],
            'refresh_token_replayed',
          ),
        );
    }
    if (renewal.outcome !== 'rotated') throw new Problem('identity.renewal_refused');
    let access: Awaited<ReturnType<AccessTokens['sign']>>;
    try {
      access = await this.deps.tokens.sign(
        renewal.identityId,
        renewal.sessionId,
        this.#claims(renewal.organization?.organizationId ?? null, renewal.organization?.role ?? null),
      );
    } catch (err) {
      await repo.undoRenewal(db, presented, nextHash);
      throw err;
    }
    return grant(access, next, renewal.expiresAt);
  }

  /**
   * POST /browser-session: the page hands over the refresh token of a sign-in it just made. The
   * token is rotated at once (so the one the page's script saw is spent), and the session the
   * browser's cookie named before, when it is another live one, ends: one hosted session per
   * browser (docs/decisions.md, "The hosted pages' cookie"). A refused renewal ends the cookie's
   * session too, since the cookie is cleared and nothing else holds its refresh token.
   */
  async handOver(refreshToken: string, previousCookieToken: string | undefined): Promise<SessionGrant> {
    const previous = previousCookieToken ? await this.liveSessionOf(previousCookieToken) : undefined;
    let next: SessionGrant;
    try {
      next = await this.renew(refreshToken);
    } catch (err) {
      if (previous) await this.signOut(previous.sessionId);
      throw err;
    }
    if (previous) {
      const current = await this.liveSessionOf(next.refreshToken);
      if (current?.sessionId !== previous.sessionId) await this.signOut(previous.sessionId);
    }
    return next;
  }

  /**
   * Ends the live session whose current refresh token this is (the cookie's sign-out). A spent,
   * unknown or ended token ends nothing: a spent one is not treated as a replay here, since
   * signing out is what its holder wants anyway.
   */
  async signOutByRefreshToken(refreshToken: string): Promise<void> {
    const live = await this.liveSessionOf(refreshToken);
    if (live) await this.signOut(live.sessionId);
  }

  /** The live session whose current refresh token this is, read without rotating it. */
  liveSessionOf(refreshToken: string): Promise<repo.LiveSessionByToken | undefined> {
    return repo.liveSessionByRefreshHash(
      this.deps.database.db,
      sha256Hex(refreshToken),
      this.deps.clock.now(),
    );
  }

  async signOut(sessionId: string): Promise<void> {
    const now = this.deps.clock.now();
    const ended = await this.deps.database.db.transaction().execute(async (trx) => {
      const revoked = await repo.revokeSession(trx, sessionId, 'signed_out', now);
      if (revoked?.live) {
        const { identityId } = revoked;
        await sessionsEnded(this.deps.events, trx, identityId, identityId, [sessionId], 'signed_out');
      }
      return revoked !== undefined;
    });
    this.deps.signals.sessionsRevoked('signed_out', ended ? 1 : 0);
  }

  /**
   * Ends every session of the identity, including ones still committing: the epoch moves first
   * (under the identity row lock), so a session inserted later with the old epoch is never live.
   */
  async signOutEverywhere(identityId: string): Promise<void> {
    const now = this.deps.clock.now();
    const ended = await this.deps.database.db.transaction().execute(async (trx) => {
      const revoked = await endAllSessionsListed(trx, identityId, 'signed_out_everywhere', now);
      // The thief's sessions are gone, and with them any claim on the step-up budget.
      await this.deps.guesses.forgive(trx, guessSubject.session(identityId));
      await sessionsEnded(
        this.deps.events,
        trx,
        identityId,
        identityId,
        revoked.live,
        'signed_out_everywhere',
      );
      await this.deps.audit.appendOwn(trx, 'identity.sessions.revoked_everywhere', identityId);
      return revoked.count;
    });
    this.deps.signals.sessionsRevoked('signed_out_everywhere', ended);
  }

  /**
   * POST /sign-outs/others: ends every session of the identity but the caller's (docs/api.md,
   * "Sign out of all other devices"). The identity row, then the caller's session, are locked (the
   * order every such write follows); the epoch moves on, so a sign-in still committing elsewhere is
   * dead on arrival, and the caller's session alone adopts the new epoch. A caller whose own
   * session ended while it waited is refused with 401 and nothing ends.
   */
  async signOutOthers(principal: { identityId: string; sessionId: string }): Promise<void> {
    const { identityId, sessionId } = principal;
    const now = this.deps.clock.now();
    const ended = await this.deps.database.db.transaction().execute(async (trx) => {
      const identity = await lockIdentity(trx, identityId);
      await lockCallerSession(trx, identity, sessionId);
      const revoked = await endOtherSessions(trx, principal, 'signed_out_others', now);
      await sessionsEnded(this.deps.events, trx, identityId, identityId, revoked.live, 'signed_out_others');
      await this.deps.audit.appendOwn(trx, 'identity.sessions.revoked_others', identityId, {
        sessionsEnded: revoked.count,
      });
      return revoked.count;
    });
    this.deps.signals.sessionsRevoked('signed_out_others', ended);
  }

  /**
   * POST /session/active-organization: sets (or, with null, clears) the calling session's active
   * organization and answers a new access token carrying it, in one transaction. The refresh token
   * is not rotated: the client keeps the one it holds, and its next renewal re-reads the
   * membership anyway. Not a member (or an unknown or disabled organization): 404
   * organization.not_found; an organization requiring a second factor of a member holding neither
   * an authenticator nor a passkey: 403 organization.second_factor_required.
   */
  async switchOrganization(
    identityId: string,
    sessionId: string,
    organizationId: string | null,
    sessionExpiresAt: Date,
  ) {
    const now = this.deps.clock.now();
    return this.deps.database.db.transaction().execute(async (trx) => {
      let claims: OrganizationClaims | null = null;
      if (organizationId !== null) {
        // Identity, organization and membership held FOR KEY SHARE until the commit (switchTarget).
        const target = await switchTarget(trx, organizationId, identityId);
        if (!target) throw new Problem('organization.not_found');
        if (target.requireSecondFactor && !target.hasSecondFactor)
          throw new Problem('organization.second_factor_required');
        claims = this.#claims(organizationId, target.role);
      }
      if (!(await repo.setActiveOrganization(trx, sessionId, organizationId, now)))
        throw new Problem('identity.session_required');
      await this.deps.audit.appendOwn(trx, 'session.organization.switched', identityId, {
        sessionId,
        organizationId,
      });
      // Signed inside the transaction: a signing failure switches nothing.
      const access = await this.deps.tokens.sign(identityId, sessionId, claims);
      return {
        kind: 'session' as const,
        accessToken: access.token,
        accessTokenExpiresAt: access.expiresAt.toISOString(),
        sessionExpiresAt: new Date(sessionExpiresAt).toISOString(),
      };
    });
  }

  #claims(organizationId: string | null, role: string | null): OrganizationClaims | null {
    if (!organizationId || !role) return null;
    return { id: organizationId, role, permissions: this.#roles.permissions(role) };
  }

  /**
   * Shapes the context from the one row the guard read (repo.sessionContext): the summary columns,
   * the active organization as it is now, and the identity's memberships. No further read.
   */
  context(
    identityId: string,
    sessionId: string,
    row: SummaryColumns &
      Pick<repo.SessionContextRow, 'activeOrganizationId' | 'organizations'> &
      Partial<Pick<repo.SessionContextRow, 'ssoConnectionId' | 'ssoConnectionName' | 'ssoOrganizationId'>>,
  ) {
    const { identifiers, methods } = toSummary(identityId, row);
    const memberships = row.organizations;
    return {
      identityId,
      sessionId,
      identifiers: identifiers.map((i) => ({
        id: i.id,
        type: i.type,
        value: maskIdentifier(i.type, i.value),
        verifiedAt: new Date(i.verifiedAt!).toISOString(),
      })),
      methods,
      ssoConnection: row.ssoConnectionId
        ? {
            id: row.ssoConnectionId,
            name: row.ssoConnectionName ?? '',
            organizationId: row.ssoOrganizationId ?? '',
          }
        : null,
      organizations: memberships.map((m) => ({
        id: m.id,
        name: m.name,
        slug: m.slug,
        role: m.role,
        groups: m.groups ?? [],
        active: m.id === row.activeOrganizationId,
      })),
    };
  }

  async history(scope: CursorScope, query: PageQuery) {
    const fetch = (window: KeysetWindow) => repo.attemptsPage(this.deps.database.db, scope.subject, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.occurredAt);
    return {
      items: items.map((r) => ({
        id: r.id,
        occurredAt: new Date(r.occurredAt).toISOString(),
        method: r.method,
        outcome: r.outcome,
        ipAddress: r.ipAddress,
        userAgent: r.userAgent,
        device: describeDevice(r.userAgent),
        noticeSentAt: r.noticeSentAt ? new Date(r.noticeSentAt).toISOString() : null,
      })),
      pageInfo,
    };
  }

  /** GET /sessions: the caller's live sessions, newest first, the caller's own marked current. */
  async liveSessions(scope: CursorScope, query: PageQuery, currentSessionId: string) {
    const now = this.deps.clock.now();
    const fetch = (window: KeysetWindow) =>
      repo.liveSessionsPage(this.deps.database.db, scope.subject, now, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return {
      items: items.map((r) => ({
        id: r.id,
        createdAt: new Date(r.createdAt).toISOString(),
        lastActiveAt: new Date(r.lastActiveAt).toISOString(),
        sessionExpiresAt: new Date(r.expiresAt).toISOString(),
        method: r.method,
        device: describeDevice(r.userAgent),
        ipAddress: r.ipAddress,
        current: r.id === currentSessionId,
      })),
      pageInfo,
    };
  }

  /**
   * POST /sessions/{id}/revocations: ends one live session of the caller's identity (the caller's
   * own works like sign-out), at the next request on every instance, and its refresh token with
   * it. Unknown, another identity's and already ended all answer the identical 404.
   */
  async revokeOwnSession(identityId: string, sessionId: string): Promise<void> {
    const now = this.deps.clock.now();
    const ended = await this.deps.database.db.transaction().execute(async (trx) => {
      if (!(await repo.revokeOwnSession(trx, sessionId, identityId, 'revoked_by_owner', now))) return false;
      await sessionsEnded(this.deps.events, trx, identityId, identityId, [sessionId], 'revoked_by_owner');
      await this.deps.audit.appendOwn(trx, 'identity.session.revoked', identityId, { sessionId });
      return true;
    });
    if (!ended) throw new Problem('identity.session_not_found');
    this.deps.signals.sessionsRevoked('revoked_by_owner', 1);
  }
}

function metaOf(meta: RequestMeta) {
  return { ip: meta.ip, userAgent: meta.userAgent };
}

function grant(
  access: { token: string; expiresAt: Date },
  refreshToken: string,
  sessionExpiresAt: Date,
): SessionGrant {
  return {
    kind: 'session',
    accessToken: access.token,
    accessTokenExpiresAt: access.expiresAt.toISOString(),
    refreshToken,
    sessionExpiresAt: sessionExpiresAt.toISOString(),
  };
}
