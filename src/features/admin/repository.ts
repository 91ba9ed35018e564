import { sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, newestFirst } from '../../platform/pagination/repository.js';
import type { IdentifierType } from '../identities/identifier.js';

/** Reads only: every write of an operator goes through the owning table's repository. */

export interface IdentifierJson {
  id: string;
  type: IdentifierType;
  value: string;
  verified_at: string | null;
}

export interface IdentityListRow {
  id: string;
  created_at: Date;
  disabled_at: Date | null;
  erased_at: Date | null;
  identifiers: IdentifierJson[];
}

/** Which identities a search names: one normalised identifier, a prefix of one, or all of them. */
export type IdentityFilter =
  | { kind: 'exact'; type: IdentifierType; value: string }
  | { kind: 'prefix'; pattern: string }
  | { kind: 'all' };

/** The identity's live identifiers (verified or pending), oldest first, for a query where `i` is the identity. */
const liveIdentifiers = sql`
  COALESCE((SELECT json_agg(json_build_object('id', f.id, 'type', f.type, 'value', f.value,
                                              'verified_at', f.verified_at) ORDER BY f.created_at, f.id)
            FROM identifiers f WHERE f.identity_id = i.id AND f.removed_at IS NULL), '[]'::json)`;

function matching(filter: IdentityFilter) {
  switch (filter.kind) {
    case 'exact':
      return sql`EXISTS (SELECT 1 FROM identifiers f WHERE f.identity_id = i.id AND f.removed_at IS NULL
                         AND f.type = ${filter.type} AND f.value = ${filter.value})`;
    case 'prefix':
      // The pattern is escaped by the caller; the index (value text_pattern_ops) serves LIKE 'x%'.
      return sql`EXISTS (SELECT 1 FROM identifiers f WHERE f.identity_id = i.id AND f.removed_at IS NULL
                         AND f.value LIKE ${filter.pattern} ESCAPE '\\')`;
    case 'all':
      return sql`TRUE`;
  }
}

/** Newest first, the id as unique tiebreak. */
export async function identitiesPage(
  trx: Executor,
  filter: IdentityFilter,
  window: KeysetWindow,
): Promise<IdentityListRow[]> {
  const r = await sql<IdentityListRow>`
    SELECT i.id, i.created_at, i.disabled_at, i.erased_at, ${liveIdentifiers} AS identifiers
    FROM identities i
    WHERE ${matching(filter)} AND ${afterPosition('i.created_at', window, 'i.id')}
    ${newestFirst('i.created_at', window, 'i.id')}`.execute(trx);
  return r.rows;
}

export interface IdentityDetailRow extends IdentityListRow {
  failed_attempts: number;
  locked_until: Date | null;
  live_sessions: number;
  last_sign_in_at: Date | null;
  recovery_codes: number;
}

/** One identity as an operator sees it, in one statement; undefined when no such identity. */
export async function identityDetail(
  trx: Executor,
  identityId: string,
  now: Date,
): Promise<IdentityDetailRow | undefined> {
  const r = await sql<IdentityDetailRow>`
    SELECT i.id, i.created_at, i.disabled_at, i.erased_at, ${liveIdentifiers} AS identifiers,
      i.failed_attempts, i.locked_until,
      (SELECT count(*)::int FROM sessions s WHERE s.identity_id = i.id AND s.revoked_at IS NULL
         AND s.expires_at > ${now} AND s.epoch = i.session_epoch) AS live_sessions,
      (SELECT max(a.occurred_at) FROM sign_in_attempts a
         WHERE a.identity_id = i.id AND a.outcome = 'succeeded') AS last_sign_in_at,
      (SELECT count(*)::int FROM recovery_codes c WHERE c.identity_id = i.id
         AND c.used_at IS NULL AND c.revoked_at IS NULL) AS recovery_codes
    FROM identities i WHERE i.id = ${identityId}`.execute(trx);
  return r.rows[0];
}
