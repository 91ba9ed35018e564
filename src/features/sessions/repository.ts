import { randomUUID } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { SessionState as GuardSessionState } from '../../platform/http/auth.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../platform/pagination/repository.js';
import { type SummaryColumns, summaryColumns } from '../identities/repository.js';

/** The guard's session state (platform/http/auth.ts) with the session's id and refresh generation. */
export interface SessionState extends GuardSessionState {
  id: string;
  generation: number;
}

export interface NewSession {
  id: string;
  identityId: string;
  epoch: number;
  method: string;
  channel: 'email' | 'phone' | null;
  connectionId: string | null;
  now: Date;
  expiresAt: Date;
  refreshHash: string;
  ip: string | null;
  userAgent: string | null;
}

/**
 * Opens a session through its identity's row, only while the identity is not disabled; false when
 * it is. FOR KEY SHARE waits for an operator's disablement or erasure holding the row FOR UPDATE
 * and then re-reads it, so a session (and the address it came from) is never written for an
 * identity disabled or erased meanwhile.
 */
export async function insertSession(trx: Executor, s: NewSession): Promise<boolean> {
  const inserted = await trx
    .insertInto('sessions')
    .columns([
      'id',
      'identity_id',
      'epoch',
      'method',
      'channel',
      'sso_connection_id',
      'created_at',
      'expires_at',
      'generation',
      'ip_address',
      'user_agent',
    ])
    .expression((eb) =>
      eb
        .selectFrom('identities')
        .select([
          eb.val(s.id).as('id'),
          'id as identity_id',
          eb.val(s.epoch).as('epoch'),
          eb.val(s.method).as('method'),
          eb.val(s.channel).as('channel'),
          eb.val(s.connectionId).as('sso_connection_id'),
          eb.val(s.now).as('created_at'),
          eb.val(s.expiresAt).as('expires_at'),
          eb.lit(1).as('generation'),
          eb.val(s.ip).as('ip_address'),
          eb.val(s.userAgent).as('user_agent'),
        ])
        .where('id', '=', s.identityId)
        .where('disabled_at', 'is', null)
        .forKeyShare(),
    )
    .returning('id')
    .execute();
  if (inserted.length === 0) return false;
  await trx
    .insertInto('refresh_tokens')
    .values({ hash: s.refreshHash, session_id: s.id, generation: 1, created_at: s.now })
    .execute();
  return true;
}

/** The session joined to its identity's epoch, by the session's primary key. */
function stateOf(trx: Executor, sessionId: string) {
  return trx
    .selectFrom('sessions as s')
    .innerJoin('identities as i', 'i.id', 's.identity_id')
    .leftJoin('organization_memberships as m', (join) =>
      join
        .onRef('m.organization_id', '=', 's.active_organization_id')
        .onRef('m.identity_id', '=', 's.identity_id'),
    )
    .leftJoin('organizations as o', (join) =>
      join.onRef('o.id', '=', 'm.organization_id').on('o.disabled_at', 'is', null),
    )
    .select([
      's.id',
      's.identity_id as identityId',
      's.epoch',
      'i.session_epoch as identityEpoch',
      's.expires_at as expiresAt',
      's.revoked_at as revokedAt',
      's.generation',
      'o.id as activeOrganizationId',
      (eb) => eb.case().when('o.id', 'is not', null).then(eb.ref('m.role')).end().as('organizationRole'),
    ])
    .where('s.id', '=', sessionId);
}

// raw: the guard's columns and joins, shared by its two template reads below (stateOf is their
// builder twin, for the rarer locked read). The membership and organization are primary-key
// lookups in the same statement: the current role costs no extra round trip.
const STATE_COLUMNS = sql`s.id, s.identity_id AS "identityId", s.epoch, i.session_epoch AS "identityEpoch",
      s.expires_at AS "expiresAt", s.revoked_at AS "revokedAt", s.generation,
      o.id AS "activeOrganizationId", CASE WHEN o.id IS NOT NULL THEN m.role END AS "organizationRole"`;
// raw: the FROM clause of the same two reads.
const STATE_FROM = sql`sessions s JOIN identities i ON i.id = s.identity_id
      LEFT JOIN organization_memberships m
        ON m.organization_id = s.active_organization_id AND m.identity_id = s.identity_id
      LEFT JOIN organizations o ON o.id = m.organization_id AND o.disabled_at IS NULL`;

/** The guard's read: one primary-key lookup of the session joined to its identity's epoch. */
export async function sessionState(trx: Executor, sessionId: string): Promise<SessionState | undefined> {
  // raw: the guard's read on every authenticated request; a template costs nothing to build,
  // where the builder compiles the statement anew each time (measured in bench/analysis.md).
  const r = await sql<SessionState>`
    SELECT ${STATE_COLUMNS}
    FROM ${STATE_FROM}
    WHERE s.id = ${sessionId}`.execute(trx);
  return r.rows[0];
}

/** The session context lists at most this many memberships (GET /organizations pages them all). */
export const CONTEXT_ORGANIZATIONS = 100;

/** One of the identity's organizations as the session context lists it. */
export interface ContextOrganization {
  id: string;
  name: string;
  slug: string;
  role: string;
  /** The SCIM groups it belongs to there that the organization maps to no role (docs/scim.md). */
  groups: string[];
}

/**
 * The display names of the SCIM groups an identity belongs to in an organization, those the
 * organization maps to no role (a mapped group shows as the role), as a JSON array, by name: read
 * here, in the context's one statement, rather than through the SCIM repository, which sits above.
 */
// raw: a correlated subquery spliced into the context's raw statement and the grant's claims.
export function plainGroups(organizationId: RawBuilder<unknown>, identityId: RawBuilder<unknown>) {
  return sql<
    string[]
  >`(SELECT COALESCE(json_agg(g.display_name ORDER BY lower(g.display_name), g.id), '[]'::json)
      FROM scim_group_members gm JOIN scim_groups g ON g.id = gm.group_id
      WHERE gm.organization_id = ${organizationId} AND gm.identity_id = ${identityId}
        AND NOT EXISTS (SELECT 1 FROM scim_group_roles r WHERE r.organization_id = g.organization_id
                        AND lower(r.group_key) IN (lower(g.display_name), lower(g.external_id))))`;
}

/** The guard's row with all GET /session/context answers: summary and memberships. */
export type SessionContextRow = SessionState &
  SummaryColumns & {
    organizations: ContextOrganization[];
    /** The connection an `sso` session was opened through (docs/sso.md), while it exists. */
    ssoConnectionId: string | null;
    ssoConnectionName: string | null;
    ssoOrganizationId: string | null;
  };

/**
 * GET /session/context in one statement (one prepared round trip): the guard's read, the identity
 * summary, and the identity's newest CONTEXT_ORGANIZATIONS memberships in enabled organizations,
 * newest first (the order GET /organizations pages them in), aggregated in a lateral subquery.
 * Routes that need only the session keep the guard's own read (sessionState).
 */
export async function sessionContext(
  trx: Executor,
  sessionId: string,
): Promise<SessionContextRow | undefined> {
  // raw: summaryColumns (identities/repository.ts) is a raw multi-column fragment a builder select
  // cannot take; the memberships ride along as one JSON column, so the answer is one round trip.
  const r = await sql<SessionContextRow>`
    SELECT ${STATE_COLUMNS}, ${summaryColumns}, mo.organizations, sc.id AS "ssoConnectionId",
      sc.name AS "ssoConnectionName", sc.organization_id AS "ssoOrganizationId"
    FROM ${STATE_FROM}
    LEFT JOIN sso_connections sc ON sc.id = s.sso_connection_id
    CROSS JOIN LATERAL (
      SELECT COALESCE(json_agg(json_build_object('id', x.id, 'name', x.name, 'slug', x.slug, 'role', x.role,
                                                 'groups', x.groups)
                               ORDER BY x.created_at DESC, x.id DESC), '[]'::json) AS organizations
      FROM (SELECT co.id, co.name, co.slug, cm.role, cm.created_at, ${plainGroups(sql`co.id`, sql`s.identity_id`)} AS groups
            FROM organization_memberships cm JOIN organizations co ON co.id = cm.organization_id
            WHERE cm.identity_id = s.identity_id AND co.disabled_at IS NULL
            ORDER BY cm.created_at DESC, co.id DESC
            LIMIT ${CONTEXT_ORGANIZATIONS}) x
    ) mo
    WHERE s.id = ${sessionId}`.execute(trx);
  return r.rows[0];
}

export async function lockSession(trx: Executor, sessionId: string): Promise<SessionState | undefined> {
  return stateOf(trx, sessionId).forUpdate('s').executeTakeFirst();
}

/**
 * Sets (or clears) the session's active organization, only while the session is live. The
 * sessions_active_membership key refuses an organization the identity does not belong to.
 */
export async function setActiveOrganization(
  trx: Executor,
  sessionId: string,
  organizationId: string | null,
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('sessions')
      .set({ active_organization_id: organizationId })
      .where('id', '=', sessionId)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('id'),
  );
}

/** The session's active organization and the identity's current role in it, for the next token. */
export interface ActiveMembership {
  organizationId: string;
  role: string;
}

export type RenewalOutcome =
  | {
      outcome: 'rotated';
      sessionId: string;
      identityId: string;
      expiresAt: Date;
      organization: ActiveMembership | null;
    }
  | { outcome: 'replayed'; sessionId: string; identityId: string }
  | { outcome: 'refused' };

/**
 * Renewal as one atomic statement, found by the presented token's hash alone. It locks the token
 * and its session (token row, then session row, the same order for every renewal; under READ
 * COMMITTED a row changed by a concurrent commit is re-read after the lock), then either
 * - rotates: spends the presented generation, moves the session to the next and stores the new
 *   token, only if the token is the session's current generation, unspent, and the session is
 *   live (not revoked, not expired, its epoch still the identity's), and answers whose session it
 *   is (to sign the next access token); or
 * - on a spent or older generation, revokes the session (replay), keeping a first reason, and
 *   marks it stolen even when it had already ended otherwise: the OpenID Provider's grants given
 *   in it, offline ones too, end with that mark (docs/decisions.md, "A stolen session ends its
 *   offline grants"); only a replay that revoked the session answers `replayed`;
 * and otherwise (an unknown token, the current token of a dead session) writes nothing.
 */
export async function renewSession(
  trx: Executor,
  oldHash: string,
  newHash: string,
  now: Date,
): Promise<RenewalOutcome> {
  // raw: one statement on every renewal (the hottest write): a template costs nothing to build,
  // where the builder compiles this six-step statement anew each time (measured in
  // bench/analysis.md). Rotation and replay detection stay one atomic statement either way.
  const r = await sql<{
    session_id: string | null;
    identity_id: string | null;
    expires_at: Date | null;
    organization_id: string | null;
    organization_role: string | null;
    replayed: number;
    replayed_session: string | null;
    replayed_identity: string | null;
  }>`
    WITH cur AS (
      SELECT t.hash, t.generation AS token_generation, t.spent_at, s.id, s.identity_id, s.generation,
             s.revoked_at, s.expires_at, s.epoch, i.session_epoch, s.active_organization_id
      FROM refresh_tokens t
      JOIN sessions s ON s.id = t.session_id
      JOIN identities i ON i.id = s.identity_id
      WHERE t.hash = ${oldHash}
      FOR UPDATE OF t, s
    ), live AS (
      SELECT * FROM cur
      WHERE spent_at IS NULL AND token_generation = generation AND revoked_at IS NULL
        AND expires_at > ${now} AND epoch = session_epoch
    ), spent AS (
      UPDATE refresh_tokens r SET spent_at = ${now} FROM live WHERE r.hash = live.hash
      RETURNING live.id, live.generation, live.identity_id, live.expires_at, live.active_organization_id
    ), moved AS (
      UPDATE sessions s SET generation = spent.generation + 1, renewed_at = ${now}
      FROM spent WHERE s.id = spent.id
      RETURNING s.id, s.generation
    ), stored AS (
      INSERT INTO refresh_tokens (hash, session_id, generation, created_at)
      SELECT ${newHash}, id, generation, ${now} FROM moved
      RETURNING session_id
    ), replay AS (
      UPDATE sessions s
      SET revoked_at = COALESCE(s.revoked_at, ${now}),
          revoked_reason = CASE WHEN s.revoked_at IS NULL THEN 'refresh_token_replayed' ELSE s.revoked_reason END,
          theft_detected_at = ${now}
      FROM cur
      WHERE s.id = cur.id AND s.theft_detected_at IS NULL
        AND (cur.spent_at IS NOT NULL OR cur.token_generation <> cur.generation)
      RETURNING s.id, s.identity_id, cur.revoked_at IS NULL AS ended
    )
    SELECT stored.session_id, spent.identity_id, spent.expires_at,
           o.id AS organization_id, CASE WHEN o.id IS NOT NULL THEN m.role END AS organization_role,
           (SELECT count(*) FROM replay WHERE ended)::int AS replayed,
           (SELECT id FROM replay WHERE ended) AS replayed_session,
           (SELECT identity_id FROM replay WHERE ended) AS replayed_identity
    FROM (SELECT 1) one
    LEFT JOIN stored ON true
    LEFT JOIN spent ON spent.id = stored.session_id
    LEFT JOIN organization_memberships m
      ON m.organization_id = spent.active_organization_id AND m.identity_id = spent.identity_id
    LEFT JOIN organizations o ON o.id = m.organization_id AND o.disabled_at IS NULL`.execute(trx);
  const row = r.rows[0];
  if (row?.session_id && row.identity_id && row.expires_at) {
    return {
      outcome: 'rotated',
      sessionId: row.session_id,
      identityId: row.identity_id,
      expiresAt: new Date(row.expires_at),
      // The role as it is now: a changed role or a removed membership is in this very token.
      organization:
        row.organization_id && row.organization_role
          ? { organizationId: row.organization_id, role: row.organization_role }
          : null,
    };
  }
  if (row?.replayed === 1 && row.replayed_session && row.replayed_identity) {
    return { outcome: 'replayed', sessionId: row.replayed_session, identityId: row.replayed_identity };
  }
  return { outcome: 'refused' };
}

/**
 * Takes back a rotation whose answer could not be built (the next access token failed to sign),
 * so the client's retry with the token it still holds is a renewal, not a replay that would end
 * its session. One statement: the new token is deleted only while unspent (it never left the
 * process), the session moves back only from the generation that token made, and only then is
 * the presented token unspent again. A revocation in between stays.
 */
export async function undoRenewal(trx: Executor, oldHash: string, newHash: string): Promise<void> {
  await trx
    .with('gone', (db) =>
      db
        .deleteFrom('refresh_tokens')
        .where('hash', '=', newHash)
        .where('spent_at', 'is', null)
        .returning(['session_id', 'generation']),
    )
    .with('back', (db) =>
      db
        .updateTable('sessions as s')
        .from('gone')
        .set((eb) => ({ generation: eb('gone.generation', '-', eb.lit(1)) }))
        .whereRef('s.id', '=', 'gone.session_id')
        .whereRef('s.generation', '=', 'gone.generation')
        .returning('s.id'),
    )
    .updateTable('refresh_tokens as t')
    .set({ spent_at: null })
    .from('back')
    .where('t.hash', '=', oldHash)
    .whereRef('t.session_id', '=', 'back.id')
    .execute();
}

/**
 * Compare-and-set: the first revocation's time and reason are kept. Answers the session's identity
 * and whether it was still unexpired when this revocation ended it; undefined when it had ended already.
 */
export async function revokeSession(
  trx: Executor,
  sessionId: string,
  reason: string,
  now: Date,
): Promise<{ identityId: string; live: boolean } | undefined> {
  const row = await trx
    .updateTable('sessions')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .returning(['identity_id as identityId', 'expires_at as expiresAt'])
    .executeTakeFirst();
  if (!row) return undefined;
  return { identityId: row.identityId, live: new Date(row.expiresAt).getTime() > now.getTime() };
}

/** What a revocation of an identity's sessions ended. */
export interface RevokedSessions {
  /** Every row revoked (expired ones included). */
  count: number;
  /** The ids of those that were live (unexpired): one `session.ended` each. */
  live: string[];
}

/**
 * Revokes every unrevoked session of the identity (but `exceptSessionId`), telling how many and
 * which of them were live (events).
 */
export async function revokeIdentitySessions(
  trx: Executor,
  identityId: string,
  reason: string,
  now: Date,
  exceptSessionId?: string,
): Promise<RevokedSessions> {
  const revoked = await trx
    .updateTable('sessions')
    .set({ revoked_at: now, revoked_reason: reason })
    .where('identity_id', '=', identityId)
    .where('revoked_at', 'is', null)
    .$if(Boolean(exceptSessionId), (qb) => qb.where('id', '<>', exceptSessionId as string))
    .returning(['id', 'expires_at as expiresAt'])
    .execute();
  return {
    count: revoked.length,
    live: revoked.filter((r) => new Date(r.expiresAt).getTime() > now.getTime()).map((r) => r.id),
  };
}

/** Moves one session to the identity's current epoch (password change keeps the caller alive). */
export async function adoptEpoch(trx: Executor, sessionId: string, epoch: number): Promise<void> {
  await trx.updateTable('sessions').set({ epoch }).where('id', '=', sessionId).execute();
}

export interface Attempt {
  id: string;
  occurredAt: Date;
  method: string;
  outcome: 'succeeded' | 'refused';
  ipAddress: string | null;
  userAgent: string | null;
  noticeSentAt: Date | null;
}

export async function recordAttempt(
  trx: Executor,
  a: {
    /** Given when the row is to be found again (a provisional refusal, deleted on success). */
    id?: string;
    identityId: string;
    /** The session a successful attempt opened. */
    sessionId?: string;
    now: Date;
    method: string;
    outcome: 'succeeded' | 'refused';
    ip: string | null;
    userAgent: string | null;
  },
): Promise<void> {
  // Written through the identity's row: keyed by NOBODY it writes nothing, in the same statement.
  // An erased identity keeps no address or user agent, so nothing is recorded against it; FOR KEY
  // SHARE waits for an erasure in flight (which holds the row FOR UPDATE) and re-reads the row.
  await trx
    .insertInto('sign_in_attempts')
    .columns([
      'id',
      'identity_id',
      'session_id',
      'occurred_at',
      'method',
      'outcome',
      'ip_address',
      'user_agent',
    ])
    .expression((eb) =>
      eb
        .selectFrom('identities')
        .select([
          eb.val(a.id ?? randomUUID()).as('id'),
          'id as identity_id',
          eb.val(a.sessionId ?? null).as('session_id'),
          eb.val(a.now).as('occurred_at'),
          eb.val(a.method).as('method'),
          eb.val(a.outcome).as('outcome'),
          eb.val(a.ip).as('ip_address'),
          eb.val(a.userAgent).as('user_agent'),
        ])
        .where('id', '=', a.identityId)
        .where('erased_at', 'is', null)
        .forKeyShare(),
    )
    .execute();
}

/** Withdraws a provisional refusal once the attempt it stood for succeeded. */
export async function withdrawAttempt(trx: Executor, id: string): Promise<void> {
  await trx.deleteFrom('sign_in_attempts').where('id', '=', id).execute();
}

/** Newest first with the id as unique tiebreak. */
export async function attemptsPage(
  trx: Executor,
  identityId: string,
  window: KeysetWindow,
): Promise<Attempt[]> {
  return trx
    .selectFrom('sign_in_attempts')
    .select([
      'id',
      'occurred_at as occurredAt',
      'method',
      'outcome',
      'ip_address as ipAddress',
      'user_agent as userAgent',
      'notice_sent_at as noticeSentAt',
    ])
    .$narrowType<{ outcome: Attempt['outcome'] }>()
    .where('identity_id', '=', identityId)
    .where(afterPosition('occurred_at', window))
    .orderBy('occurred_at', 'desc')
    .orderBy('id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

export interface LiveSession {
  id: string;
  createdAt: Date;
  lastActiveAt: Date;
  expiresAt: Date;
  method: string;
  ipAddress: string | null;
  userAgent: string | null;
}

/**
 * The identity's live sessions (the guard's rule: not revoked, not expired, on the identity's
 * epoch), newest first with the id as tiebreak. Last active is the last renewal, else the sign-in.
 */
export async function liveSessionsPage(
  trx: Executor,
  identityId: string,
  now: Date,
  window: KeysetWindow,
): Promise<LiveSession[]> {
  return trx
    .selectFrom('sessions as s')
    .innerJoin('identities as i', 'i.id', 's.identity_id')
    .select((eb) => [
      's.id',
      's.created_at as createdAt',
      eb.fn.coalesce('s.renewed_at', 's.created_at').as('lastActiveAt'),
      's.expires_at as expiresAt',
      's.method',
      's.ip_address as ipAddress',
      's.user_agent as userAgent',
    ])
    .where('s.identity_id', '=', identityId)
    .where('s.revoked_at', 'is', null)
    .where('s.expires_at', '>', now)
    .whereRef('s.epoch', '=', 'i.session_epoch')
    .where(afterPosition('s.created_at', window, 's.id'))
    .orderBy('s.created_at', 'desc')
    .orderBy('s.id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

/**
 * Compare-and-set: ends one live session of this identity (owner's revocation). False for an id
 * that names nothing live of this identity: unknown, another identity's, already ended, expired,
 * or dead by an epoch move; the caller answers all of them alike.
 */
export async function revokeOwnSession(
  trx: Executor,
  sessionId: string,
  identityId: string,
  reason: string,
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('sessions as s')
      .set({ revoked_at: now, revoked_reason: reason })
      .from('identities as i')
      .where('s.id', '=', sessionId)
      .where('s.identity_id', '=', identityId)
      .whereRef('i.id', '=', 's.identity_id')
      .where('s.revoked_at', 'is', null)
      .where('s.expires_at', '>', now)
      .whereRef('s.epoch', '=', 'i.session_epoch')
      .returning('s.id'),
  );
}

export interface SignInOrigin {
  ipAddress: string | null;
  userAgent: string | null;
  lastAt: Date;
}

/**
 * The distinct places (address, user agent) the identity signed in from successfully, other than
 * the session `except`, each with when it was last used, most recent first.
 */
export async function signInOrigins(
  trx: Executor,
  identityId: string,
  except: string,
  limit: number,
): Promise<SignInOrigin[]> {
  return trx
    .selectFrom('sign_in_attempts')
    .select((eb) => [
      'ip_address as ipAddress',
      'user_agent as userAgent',
      eb.fn.max('occurred_at').as('lastAt'),
    ])
    .where('identity_id', '=', identityId)
    .where('outcome', '=', 'succeeded')
    .where((eb) => eb('session_id', 'is distinct from', eb.cast<string>(eb.val(except), 'uuid')))
    .groupBy(['ip_address', 'user_agent'])
    .orderBy('lastAt', 'desc')
    .limit(limit)
    .execute();
}

/** Records on the sign-in's history entry that a new-sign-in notice went out. */
export async function markNoticeSent(trx: Executor, sessionId: string, now: Date): Promise<void> {
  await trx
    .updateTable('sign_in_attempts')
    .set({ notice_sent_at: now })
    .where('session_id', '=', sessionId)
    .execute();
}

// Any fixed number distinct from the migration lock: instances racing to create the first key.
const KEY_CREATION_LOCK = 727_011_002;

/** Serialises key creation across instances until the transaction ends. */
export async function lockKeyCreation(trx: Executor): Promise<void> {
  await trx
    .selectNoFrom((eb) => eb.fn<void>('pg_advisory_xact_lock', [eb.val(KEY_CREATION_LOCK)]).as('locked'))
    .execute();
}

export interface SealedSigningKey {
  kid: string;
  sealedPrivateJwk: string;
}

export async function liveSigningKeys(trx: Executor): Promise<SealedSigningKey[]> {
  return trx
    .selectFrom('signing_keys')
    .select(['kid', 'sealed_private_jwk as sealedPrivateJwk'])
    .where('retired_at', 'is', null)
    .orderBy('created_at')
    .orderBy('kid')
    .execute();
}

export async function insertSigningKey(
  trx: Executor,
  k: { kid: string; sealedPrivateJwk: string; publicJwk: Record<string, unknown>; now: Date },
): Promise<void> {
  await trx
    .insertInto('signing_keys')
    .values({
      kid: k.kid,
      sealed_private_jwk: k.sealedPrivateJwk,
      // JSON text: PostgreSQL parses it into the jsonb column.
      public_jwk: JSON.stringify(k.publicJwk),
      created_at: k.now,
    })
    .execute();
}

/** Erasure (after its sessions were ended): no session of the identity keeps where it came from. */
export async function eraseSessionOrigins(trx: Executor, identityId: string): Promise<void> {
  await trx
    .updateTable('sessions')
    .set({ ip_address: null, user_agent: null })
    .where('identity_id', '=', identityId)
    .where((eb) => eb.or([eb('ip_address', 'is not', null), eb('user_agent', 'is not', null)]))
    .execute();
}

/** Erasure: the identity's sign-in history keeps its instants and outcomes, not its addresses. */
export async function eraseAttemptOrigins(trx: Executor, identityId: string): Promise<void> {
  await trx
    .updateTable('sign_in_attempts')
    .set({ ip_address: null, user_agent: null })
    .where('identity_id', '=', identityId)
    .where((eb) => eb.or([eb('ip_address', 'is not', null), eb('user_agent', 'is not', null)]))
    .execute();
}

export interface LiveSessionByToken {
  sessionId: string;
  identityId: string;
  method: string;
  channel: string | null;
  ssoConnectionId: string | null;
  createdAt: Date;
  expiresAt: Date;
  epoch: number;
}

/**
 * The live session whose current refresh token hashes to `hash`, read without rotating it: the
 * hosted pages' cookie names a session this way for the OpenID Provider's interactions. A spent
 * token, another generation, a revoked, expired or out-of-epoch session, or a disabled identity
 * all answer nothing.
 */
export async function liveSessionByRefreshHash(
  trx: Executor,
  hash: string,
  now: Date,
): Promise<LiveSessionByToken | undefined> {
  const row = await trx
    .selectFrom('refresh_tokens as t')
    .innerJoin('sessions as s', 's.id', 't.session_id')
    .innerJoin('identities as i', 'i.id', 's.identity_id')
    .select([
      's.id as sessionId',
      's.identity_id as identityId',
      's.method',
      's.channel',
      's.sso_connection_id as ssoConnectionId',
      's.created_at as createdAt',
      's.expires_at as expiresAt',
      's.epoch',
    ])
    .where('t.hash', '=', hash)
    .where('t.spent_at', 'is', null)
    .whereRef('t.generation', '=', 's.generation')
    .where('s.revoked_at', 'is', null)
    .where('s.expires_at', '>', now)
    .whereRef('s.epoch', '=', 'i.session_epoch')
    .where('i.disabled_at', 'is', null)
    .executeTakeFirst();
  return row ? { ...row, createdAt: new Date(row.createdAt), expiresAt: new Date(row.expiresAt) } : undefined;
}

/** The access-token signing keys in use: ids and ages only (the health page). */
export async function liveSigningKeyAges(trx: Executor): Promise<{ kid: string; createdAt: Date }[]> {
  return trx
    .selectFrom('signing_keys')
    .select(['kid', 'created_at as createdAt'])
    .where('retired_at', 'is', null)
    .orderBy('created_at')
    .orderBy('kid')
    .execute();
}
