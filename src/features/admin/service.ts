import { Readable } from 'node:stream';
import type { Config } from '../../config.js';
import type { AuditEvent, AuditLog, VerifiedRecord } from '../../platform/audit/audit.js';
import { type Clock, iso } from '../../platform/clock.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { Signals } from '../../platform/metrics/signals.js';
import type { CursorCodec, CursorScope } from '../../platform/pagination/cursor.js';
import { buildPage, keysetPage, type PageInfo, readPageQuery } from '../../platform/pagination/page.js';
import { Problem } from '../../platform/problem.js';
import { secondFactorFacts } from '../account/repository.js';
import { deleteIdentityChallenges } from '../challenges/repository.js';
import type { EventType } from '../events/catalogue.js';
import type { EventLog } from '../events/log.js';
import { redactIdentityEvents } from '../events/repository.js';
import { confirms } from '../identities/confirmation.js';
import { identityJson } from '../identities/events.js';
import { normaliseIdentifier } from '../identities/identifier.js';
import type { AccountLock } from '../identities/lock.js';
import { pictureUrl } from '../identities/picture.js';
import {
  disableIdentity,
  enableIdentity,
  eraseIdentity,
  findIdentity,
  type IdentityRow,
  lockIdentity,
  verifiedIdentifiers,
} from '../identities/repository.js';
import { eraseConsents } from '../oidc/repository.js';
import { deleteOperatorRole } from '../operators/repository.js';
import {
  deleteIdentityMemberships,
  deleteOrganizations,
  membershipsPage,
  ownedOrganizations,
} from '../organizations/repository.js';
import { deleteIdentityPasskeys } from '../passkeys/repository.js';
import { deleteIdentityLinks } from '../providers/repository.js';
import { deleteIdentityCodes } from '../recovery-codes/repository.js';
import { deleteIdentityFactors } from '../second-factors/repository.js';
import { describeDevice } from '../sessions/devices.js';
import { sessionsEnded } from '../sessions/events.js';
import { eraseAttemptOrigins, eraseSessionOrigins, liveSessionsPage } from '../sessions/repository.js';
import { endAllSessions } from '../sessions/revocations.js';
import { maySignInByCode } from '../sign-in/code-rule.js';
import { methodsPage } from '../sign-in-methods/repository.js';
import { deleteIdentityElevations } from '../step-up/repository.js';
import { endingSessionIds, type IdentityFilter, identitiesPage, identityDetail } from './repository.js';
import type { AuditQuery, SearchQuery, SessionsQuery } from './schemas.js';

/** How many records the NDJSON stream reads at a time: memory stays flat whatever the trail's length. */
export const STREAM_BATCH = 500;
/** The audit names of an operator's reads: one per identity shown, one per read of the trail. */
const IDENTITY_READ = 'admin.identity.read';
const TRAIL_READ = 'admin.audit.read';
// Far more methods than any identity holds; the detail lists them all.
const ALL_METHODS = 1000;

/** The identity as the list shows it (the same object its events carry). */
const listItem = identityJson;

function invalidQuery(field: string, message: string): Problem {
  return new Problem('validation.failed', {
    errors: [{ location: 'query', field, code: 'combination', message }],
  });
}

/** LIKE's own characters in a prefix match themselves. */
function likePrefix(prefix: string): string {
  return `${prefix.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Which identities a search names; a query mixing the two forms, or half of one, is refused. */
function filterOf(q: SearchQuery): IdentityFilter {
  const exact = q.identifierType !== undefined || q.identifier !== undefined || q.country !== undefined;
  if (q.externalId !== undefined) {
    if (exact || q.prefix !== undefined)
      throw invalidQuery('externalId', 'externalId cannot be combined with an identifier or a prefix');
    return { kind: 'external', externalId: q.externalId };
  }
  if (q.prefix !== undefined) {
    if (exact)
      throw invalidQuery('prefix', 'prefix cannot be combined with identifierType, identifier or country');
    return { kind: 'prefix', pattern: likePrefix(q.prefix) };
  }
  if (!exact) return { kind: 'all' };
  if (q.identifierType === undefined || q.identifier === undefined) {
    throw invalidQuery('identifier', 'identifierType and identifier go together');
  }
  if (q.identifierType === 'email' && q.country !== undefined) {
    throw invalidQuery('country', 'country is only for a phone number');
  }
  if (q.identifierType === 'phone' && q.country === undefined) {
    throw invalidQuery('country', 'a phone number needs its country');
  }
  const ident = normaliseIdentifier({
    identifierType: q.identifierType,
    identifier: q.identifier,
    country: q.country,
  });
  if (!ident) throw new Problem('identity.identifier_unusable');
  return { kind: 'exact', type: ident.type, value: ident.value };
}

/** A deletion an erasure makes in a feature above this one (the wiring lists them: context.ts). */
export type ErasureStep = (trx: Executor, identityId: string) => Promise<void>;

/** What the operator acts use. */
export interface AdminServiceDeps {
  /** The other features' parts of an erasure, run in its transaction (SCIM users: docs/scim.md). */
  erasing?: readonly ErasureStep[];
  database: Database;
  clock: Clock;
  audit: AuditLog;
  lock: AccountLock;
  cursors: CursorCodec;
  signals: Signals;
  events: EventLog;
  /** Which channels may sign in by code, and whether with a password (the detail's codeSignIn). */
  config: Pick<Config, 'signInCodes' | 'publicOrigin' | 'lifetimes'>;
}

/**
 * The event each operator write emits about the identity (docs/events.md), when it changed
 * something; every session it ends emits `session.ended` too.
 */
const IDENTITY_EVENTS: Record<string, EventType | undefined> = {
  'identity.disabled': 'identity.disabled',
  'identity.enabled': 'identity.enabled',
  'identity.erased': 'identity.erased',
  'identity.account.lock_cleared': 'identity.unlocked',
  'identity.sessions.ended_by_operator': undefined,
};

/**
 * A condition of the caller's own, checked under the identity row lock before anything changes:
 * the person's own deletion (account-deletion/service.ts) proves there that its session is still
 * live and the identifier typed is the account's. It throws to refuse; nothing is written then.
 */
export type WriteCheck = (trx: Executor, identity: IdentityRow | undefined) => Promise<void>;

/** What an operator write did, beside its audit details. */
interface WriteOutcome {
  details: NonNullable<AuditEvent['details']>;
  ended: number;
  /** false: nothing changed (no identity event). */
  changed?: boolean;
  /** The sessions it ended and why (one `session.ended` each). */
  sessions?: { ids: string[]; reason: string };
}

/**
 * The operators' acts (docs/admin.md; docs/decisions.md, "Operators: the admin API"). Every write
 * locks the identity row first (FOR UPDATE): a sign-in writes its session and history through that
 * row (FOR KEY SHARE), so it waits for the write and re-reads the row, and no session or address is
 * written for an identity disabled or erased meanwhile. Every write appends its audit record, actor
 * `admin:<key name>`, in its transaction. Every read of personal data appends one too, before any
 * of the data is answered: an operator cannot see a person's data, or the trail of what they did,
 * without the trail naming the key.
 */
export class AdminService {
  constructor(private readonly deps: AdminServiceDeps) {}

  /**
   * One read record per identity on the page (an empty page shows nobody and writes none), so the
   * trail of an identity names every search that showed it. The form of the search is recorded,
   * never its value: an address or a prefix of one would outlive an erasure in the trail.
   */
  async search(
    scope: CursorScope,
    query: SearchQuery,
    actor: string,
  ): Promise<{ items: unknown[]; pageInfo: PageInfo }> {
    const filter = filterOf(query);
    const { db } = this.deps.database;
    const { items, pageInfo } = await keysetPage(
      this.deps.cursors,
      scope,
      query,
      (window) => identitiesPage(db, filter, window),
      (row) => row.createdAt,
    );
    await this.#recordRead(
      actor,
      IDENTITY_READ,
      items.map((row) => row.id),
      { view: 'search', form: filter.kind },
    );
    return { items: items.map(listItem), pageInfo };
  }

  async read(identityId: string, actor: string) {
    const { db } = this.deps.database;
    const now = this.deps.clock.now();
    const row = await identityDetail(db, identityId, now);
    if (!row) throw new Problem('admin.identity_not_found');
    const [methods, factors] = await Promise.all([
      methodsPage(db, identityId, { limit: ALL_METHODS }),
      secondFactorFacts(db, identityId),
    ]);
    const lockedUntil = row.lockedUntil === null ? null : new Date(row.lockedUntil);
    // The password has a row among the methods only while it is set (sign-in-methods/repository.ts).
    const hasPassword = methods.some((m) => m.kind === 'password');
    const codes = this.deps.config.signInCodes;
    // The channels a code sign-in would reach now: a verified address on a channel SIGN_IN_CODES
    // names, for an enabled identity without a password or with SIGN_IN_CODES_WITH_PASSWORD on.
    const codeChannels = maySignInByCode({ ...row, hasPassword }, codes)
      ? (['email', 'phone'] as const).filter(
          (type) =>
            codes.channels.includes(type) &&
            row.identifiers.some((i) => i.type === type && i.verifiedAt !== null),
        )
      : [];
    const detail = {
      ...listItem(row),
      picture: row.pictureId === null ? null : pictureUrl(this.deps.config.publicOrigin, row.pictureId),
      methods: methods.map((m) => ({
        id: m.id,
        kind: m.kind,
        display: m.detail,
        verifiedAt: new Date(m.verifiedAt).toISOString(),
        lastUsedAt: iso(m.lastUsedAt),
      })),
      secondFactors: factors.map((f) => ({
        id: f.id,
        label: f.label,
        verifiedAt: new Date(f.verifiedAt).toISOString(),
        lastUsedAt: iso(f.lastUsedAt),
      })),
      hasPassword,
      codeSignIn: { channels: codeChannels.map((type) => (type === 'phone' ? 'sms' : 'email')) },
      recoveryCodesRemaining: row.recoveryCodes,
      lock: {
        failedAttempts: row.failedAttempts,
        lockedUntil: iso(lockedUntil),
        locked: lockedUntil !== null && lockedUntil > now,
      },
      liveSessionCount: row.liveSessions,
      lastSignInAt: iso(row.lastSignInAt),
    };
    await this.#recordRead(actor, IDENTITY_READ, [row.id], { view: 'detail' });
    return detail;
  }

  /** Sign-ins of every kind refused from now on; every session ended at its next request. */
  async disable(identityId: string, actor: string): Promise<void> {
    const ended = await this.#write(identityId, actor, 'identity.disabled', async (trx, now) => {
      const ids = await endingSessionIds(trx, identityId, now);
      const changed = await disableIdentity(trx, identityId, now);
      const sessionsEnded = await endAllSessions(trx, identityId, 'disabled', now);
      return {
        details: { changed, sessionsEnded },
        ended: sessionsEnded,
        changed,
        sessions: { ids, reason: 'disabled' },
      };
    });
    this.deps.signals.sessionsRevoked('disabled', ended);
  }

  /** Sign-ins admitted again; the sessions the disablement ended stay ended. */
  async enable(identityId: string, actor: string): Promise<void> {
    await this.#write(identityId, actor, 'identity.enabled', async (trx) => {
      const changed = await enableIdentity(trx, identityId);
      return { details: { changed }, ended: 0, changed };
    });
  }

  /** Clears the identity-wide lock (its failure count and its end), as a correct code would. */
  async clearLock(identityId: string, actor: string): Promise<void> {
    await this.#write(identityId, actor, 'identity.account.lock_cleared', async (trx, now, identity) => {
      const wasLocked = identity.lockedUntil !== null && new Date(identity.lockedUntil) > now;
      await this.deps.lock.clear(trx, identityId);
      return {
        details: { wasLocked, failedAttempts: identity.failedAttempts },
        ended: 0,
        changed: wasLocked,
      };
    });
  }

  /** Ends every session of the identity, including sign-ins still committing (the epoch moves). */
  async endSessions(identityId: string, actor: string): Promise<void> {
    const ended = await this.#write(
      identityId,
      actor,
      'identity.sessions.ended_by_operator',
      async (trx, now) => {
        const ids = await endingSessionIds(trx, identityId, now);
        const sessionsEnded = await endAllSessions(trx, identityId, 'ended_by_operator', now);
        return {
          details: { sessionsEnded },
          ended: sessionsEnded,
          sessions: { ids, reason: 'ended_by_operator' },
        };
      },
    );
    this.deps.signals.sessionsRevoked('ended_by_operator', ended);
  }

  /**
   * Right to erasure, in one transaction: identifiers, credentials, factors, codes, passkeys,
   * provider links, elevations and challenges are deleted; sessions are ended and, like the
   * sign-in history, forget their addresses and user agents; the identity keeps its bare id,
   * disabled for good. The audit trail keeps its records under that id (they hold no address), so
   * the chain still verifies; a later sign-up with the same address makes a new identity. The
   * person's own deletion (account-deletion/service.ts) is this act, with the identity as `actor`
   * and its `check` run under the row lock first.
   */
  async erase(identityId: string, actor: string, check?: WriteCheck): Promise<void> {
    const ended = await this.#write(
      identityId,
      actor,
      'identity.erased',
      async (trx, now) => {
        // Organizations first (docs/decisions.md, "Organizations", erasure): refused while the
        // identity is the last owner of an organization others still belong to; an organization it
        // is the only member of goes with it; every other membership is removed.
        const owned = await ownedOrganizations(trx, identityId);
        if (owned.some((o) => o.owners === 1 && o.members > 1))
          throw new Problem('organization.last_owner_erasure');
        const alone = owned.filter((o) => o.members === 1).map((o) => o.id);
        await deleteOrganizations(trx, alone);
        const memberships = await deleteIdentityMemberships(trx, identityId);
        const ids = await endingSessionIds(trx, identityId, now);
        const sessionsEnded = await endAllSessions(trx, identityId, 'erased', now);
        await eraseSessionOrigins(trx, identityId);
        await eraseAttemptOrigins(trx, identityId);
        await deleteIdentityElevations(trx, identityId);
        await deleteIdentityPasskeys(trx, identityId);
        await deleteIdentityFactors(trx, identityId);
        await deleteIdentityCodes(trx, identityId);
        await deleteIdentityLinks(trx, identityId);
        // An erased person runs nothing: a role granted through the admin API goes with them (a
        // grant racing this act waits for the identity row and then finds it erased).
        await deleteOperatorRole(trx, identityId);
        for (const step of this.deps.erasing ?? []) await step(trx, identityId);
        // Remembered consents name the identity's apps; its grants end with its sessions (the sweep).
        await eraseConsents(trx, identityId);
        // Challenges name the identifiers (foreign key): they go first.
        await deleteIdentityChallenges(trx, identityId);
        const identifiers = await eraseIdentity(trx, identityId, now);
        // Its earlier events named its addresses: only their envelopes stay (identity.erased and its
        // session.ended, appended after this act, hold none).
        await redactIdentityEvents(trx, identityId);
        return {
          details: {
            sessionsEnded,
            identifiersDeleted: identifiers,
            organizationsDeleted: alone.length,
            membershipsRemoved: memberships,
          },
          ended: sessionsEnded,
          sessions: { ids, reason: 'erased' },
        };
      },
      check,
    );
    this.deps.signals.sessionsRevoked('erased', ended);
  }

  /**
   * An operator's erasure from the console (docs/admin.md, "Operators"): only within a step-up's
   * lifetime (ELEVATION_TTL) of the operator's sign-in with a second factor, and with one of the
   * person's verified identifiers typed again (`DELETE` for an account without any), checked under
   * the erasure's identity row lock against the identifiers as they are then.
   */
  async eraseAsOperator(
    identityId: string,
    actor: string,
    operator: { signedInAt: Date; typed: string | undefined },
  ): Promise<void> {
    const age = this.deps.clock.now().getTime() - operator.signedInAt.getTime();
    if (age > this.deps.config.lifetimes.elevation * 1000) throw new Problem('admin.step_up_required');
    const typed = operator.typed;
    await this.erase(identityId, actor, async (trx, identity) => {
      if (!identity || identity.erasedAt !== null) return;
      const identifiers = await verifiedIdentifiers(trx, identityId);
      if (typed === undefined || !confirms(typed, identifiers))
        throw new Problem('admin.erasure_not_confirmed');
    });
  }

  /**
   * Newest first; the cursor carries the last seq of the page. The trail tells what each person
   * did and when, so reading it is recorded too, after the page is read: a page never shows its
   * own record, and each read adds exactly one whatever it shows (reads of reads do not multiply).
   */
  async auditPage(
    scope: CursorScope,
    query: AuditQuery,
    actor: string,
  ): Promise<{ items: VerifiedRecord[]; pageInfo: PageInfo }> {
    const req = readPageQuery(query, this.deps.cursors, scope);
    const before = req.after?.seq;
    if (req.after && (typeof before !== 'number' || !Number.isSafeInteger(before) || before < 1)) {
      throw new Problem('collection.cursor_invalid');
    }
    const rows = await this.deps.audit.page(this.deps.database.db, {
      identityId: query.identityId ?? null,
      beforeSeq: typeof before === 'number' ? before : null,
      limit: req.limit + 1,
    });
    const page = buildPage(rows, req.limit, (r) => ({ seq: r.seq }), this.deps.cursors, scope, req.cursorTtl);
    await this.#recordRead(actor, TRAIL_READ, [query.identityId ?? null], {
      view: 'page',
      records: page.items.length,
    });
    return page;
  }

  /**
   * The trail as NDJSON, ascending: one record per line, read STREAM_BATCH at a time as the client
   * takes them (a slow reader holds no more than one batch in memory). The read is recorded before
   * the first line leaves (a stream cut short has still been read in part), and the stream ends
   * just before that record: every earlier seq has committed by then, since appends hold the
   * chain's head lock until they commit.
   */
  async auditStream(identityId: string | null, afterSeq: number, actor: string): Promise<Readable> {
    const { audit, database } = this.deps;
    const own = await this.#recordRead(actor, TRAIL_READ, [identityId], { view: 'stream', afterSeq });
    async function* lines(): AsyncGenerator<string> {
      let after = afterSeq;
      for (;;) {
        const batch = await audit.batch(database.db, { identityId, afterSeq: after, limit: STREAM_BATCH });
        const before = batch.filter((r) => r.seq < own);
        if (before.length > 0) yield `${before.map((r) => JSON.stringify(r)).join('\n')}\n`;
        if (before.length < STREAM_BATCH) return;
        after = before[before.length - 1].seq;
      }
    }
    return Readable.from(lines(), { objectMode: false });
  }

  /**
   * The person's live sessions (the account's own list: sessions/repository.ts), newest first,
   * with device, address and last activity; an unknown identity answers 404. Audited like the
   * detail, before anything is answered (one record per page, view `sessions`).
   */
  async sessions(scope: CursorScope, identityId: string, query: SessionsQuery, actor: string) {
    const { db } = this.deps.database;
    const identity = await findIdentity(db, identityId);
    if (!identity) throw new Problem('admin.identity_not_found');
    const now = this.deps.clock.now();
    const { items, pageInfo } = await keysetPage(
      this.deps.cursors,
      scope,
      query,
      (window) => liveSessionsPage(db, identity.id, now, window),
      (r) => r.createdAt,
    );
    await this.#recordRead(actor, IDENTITY_READ, [identity.id], { view: 'sessions' });
    return {
      items: items.map((r) => ({
        id: r.id,
        createdAt: new Date(r.createdAt).toISOString(),
        lastActiveAt: new Date(r.lastActiveAt).toISOString(),
        sessionExpiresAt: new Date(r.expiresAt).toISOString(),
        method: r.method,
        device: describeDevice(r.userAgent),
        ipAddress: r.ipAddress,
      })),
      pageInfo,
    };
  }

  /**
   * The person's organizations (those not disabled: the account's own list, organizations/
   * repository.ts) with their role, newest membership first; 404 for an unknown identity. Audited
   * like the detail (view `organizations`).
   */
  async organizations(scope: CursorScope, identityId: string, query: SessionsQuery, actor: string) {
    const { db } = this.deps.database;
    const identity = await findIdentity(db, identityId);
    if (!identity) throw new Problem('admin.identity_not_found');
    const { items, pageInfo } = await keysetPage(
      this.deps.cursors,
      scope,
      query,
      (window) => membershipsPage(db, identity.id, window),
      (r) => r.createdAt,
    );
    await this.#recordRead(actor, IDENTITY_READ, [identity.id], { view: 'organizations' });
    return {
      items: items.map((m) => ({
        id: m.id,
        name: m.name,
        slug: m.slug,
        role: m.role,
        requireSecondFactor: m.requireSecondFactor,
        joinedAt: new Date(m.createdAt).toISOString(),
      })),
      pageInfo,
    };
  }

  /**
   * A page of a person's own list, read by the caller's `list` (the connected apps: oidc/clients.ts,
   * the list the person sees), after the identity is known (404 otherwise) and audited like the
   * detail with `view`, before anything is answered.
   */
  async personList<T>(
    identityId: string,
    actor: string,
    view: string,
    list: (identityId: string) => Promise<{ items: T[]; pageInfo: PageInfo }>,
  ): Promise<{ items: T[]; pageInfo: PageInfo }> {
    const identity = await findIdentity(this.deps.database.db, identityId);
    if (!identity) throw new Problem('admin.identity_not_found');
    const result = await list(identity.id);
    await this.#recordRead(actor, IDENTITY_READ, [identity.id], { view });
    return result;
  }

  /**
   * One read record per target, in one transaction; the seq of the last (0 when there is none).
   * Details say what was read, never the data itself.
   */
  async #recordRead(
    actor: string,
    name: string,
    targets: Array<string | null>,
    details: NonNullable<AuditEvent['details']>,
  ): Promise<number> {
    if (targets.length === 0) return 0;
    return this.deps.database.db.transaction().execute(async (trx) => {
      let seq = 0;
      for (const target of targets) {
        ({ seq } = await this.deps.audit.append(trx, { name, actor, target, outcome: 'success', details }));
      }
      return seq;
    });
  }

  /**
   * One operator write: lock the identity row, run the caller's `check` (the person's own
   * deletion), refuse an unknown (404) or erased (409) identity, act, and append the audit record
   * last (it holds the chain's head lock until commit).
   */
  async #write(
    identityId: string,
    actor: string,
    name: string,
    act: (trx: Executor, now: Date, identity: IdentityRow) => Promise<WriteOutcome>,
    check?: WriteCheck,
  ): Promise<number> {
    return this.deps.database.db.transaction().execute(async (trx) => {
      const identity = await lockIdentity(trx, identityId);
      if (check) await check(trx, identity);
      if (!identity) throw new Problem('admin.identity_not_found');
      if (identity.erasedAt !== null) throw new Problem('admin.identity_erased');
      const now = this.deps.clock.now();
      const { details, ended, changed, sessions } = await act(trx, now, identity);
      const { events } = this.deps;
      if (sessions) await sessionsEnded(events, trx, actor, identityId, sessions.ids, sessions.reason);
      const type = IDENTITY_EVENTS[name];
      const after = type && changed !== false ? await identityDetail(trx, identityId, now) : undefined;
      if (type && after) await events.append(trx, { type, actor, identityId, data: listItem(after) });
      await this.deps.audit.append(trx, { name, actor, target: identityId, outcome: 'success', details });
      return ended;
    });
  }
}
