import type { Executor } from '../../platform/db/database.js';
import type { KeysetWindow } from '../../platform/pagination/page.js';
import { afterPosition, rowsToFetch } from '../../platform/pagination/repository.js';
import type { IdentifierType } from '../identities/identifier.js';
import {
  type IdentityListRow,
  liveIdentifiers,
  type OverIdentities,
  profileColumns,
} from '../identities/repository.js';

export type { IdentityListRow };

/** Reads only: every write of an operator goes through the owning table's repository. */

/** Which identities a search names: one normalised identifier, a prefix of one, or all of them. */
export type IdentityFilter =
  | { kind: 'exact'; type: IdentifierType; value: string }
  | { kind: 'prefix'; pattern: string }
  | { kind: 'external'; externalId: string }
  | { kind: 'all' };

/** An identity search that names identifiers (every other search matches all identities). */
function matching(eb: OverIdentities, filter: Exclude<IdentityFilter, { kind: 'all' | 'external' }>) {
  const live = eb
    .selectFrom('identifiers as f')
    .select(eb.lit(1).as('one'))
    .whereRef('f.identity_id', '=', 'i.id')
    .where('f.removed_at', 'is', null);
  if (filter.kind === 'exact') {
    return eb.exists(live.where('f.type', '=', filter.type).where('f.value', '=', filter.value));
  }
  // The pattern is escaped by the caller (LIKE's default escape character is the backslash);
  // the index (value text_pattern_ops) serves LIKE 'x%'.
  return eb.exists(live.where('f.value', 'like', filter.pattern));
}

/**
 * Newest first, the id as unique tiebreak: a keyset page ordered by (created_at DESC, id DESC), the
 * rows strictly after the previous page's last row, one row past the page.
 */
export async function identitiesPage(
  trx: Executor,
  filter: IdentityFilter,
  window: KeysetWindow,
): Promise<IdentityListRow[]> {
  let query = trx
    .selectFrom('identities as i')
    .select((eb) => [
      'i.id',
      'i.created_at as createdAt',
      'i.locale',
      ...profileColumns,
      'i.disabled_at as disabledAt',
      'i.erased_at as erasedAt',
      liveIdentifiers(eb),
    ]);
  // An imported identity by its source's id: one probe of identities_external_id.
  if (filter.kind === 'external') query = query.where('i.external_id', '=', filter.externalId);
  else if (filter.kind !== 'all') query = query.where((eb) => matching(eb, filter));
  return query
    .where(afterPosition('i.created_at', window, 'i.id'))
    .orderBy('i.created_at', 'desc')
    .orderBy('i.id', 'desc')
    .limit(rowsToFetch(window))
    .execute();
}

export interface IdentityDetailRow extends IdentityListRow {
  /** The id of the identity's picture (migration 0030), null when it has none. */
  pictureId: string | null;
  failedAttempts: number;
  lockedUntil: Date | null;
  liveSessions: number;
  lastSignInAt: Date | null;
  recoveryCodes: number;
}

/** One identity as an operator sees it, in one statement; undefined when no such identity. */
export async function identityDetail(
  trx: Executor,
  identityId: string,
  now: Date,
): Promise<IdentityDetailRow | undefined> {
  return trx
    .selectFrom('identities as i')
    .select((eb) => [
      'i.id',
      'i.created_at as createdAt',
      'i.locale',
      ...profileColumns,
      'i.disabled_at as disabledAt',
      'i.erased_at as erasedAt',
      liveIdentifiers(eb),
      eb
        .selectFrom('identity_pictures as p')
        .select('p.id')
        .whereRef('p.identity_id', '=', 'i.id')
        .$asScalar()
        .as('pictureId'),
      'i.failed_attempts as failedAttempts',
      'i.locked_until as lockedUntil',
      eb
        .selectFrom('sessions as s')
        .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
        .whereRef('s.identity_id', '=', 'i.id')
        .where('s.revoked_at', 'is', null)
        .where('s.expires_at', '>', now)
        .whereRef('s.epoch', '=', 'i.session_epoch')
        .$asScalar()
        .$notNull()
        .as('liveSessions'),
      eb
        .selectFrom('sign_in_attempts as a')
        .select((eb) => eb.fn.max('a.occurred_at').as('t'))
        .whereRef('a.identity_id', '=', 'i.id')
        .where('a.outcome', '=', 'succeeded')
        .$asScalar()
        .as('lastSignInAt'),
      eb
        .selectFrom('recovery_codes as c')
        .select((eb) => eb.cast<number>(eb.fn.countAll(), 'integer').as('n'))
        .whereRef('c.identity_id', '=', 'i.id')
        .where('c.used_at', 'is', null)
        .where('c.revoked_at', 'is', null)
        .$asScalar()
        .$notNull()
        .as('recoveryCodes'),
    ])
    .where('i.id', '=', identityId)
    .executeTakeFirst();
}

/** The identity's sessions an operator's act is about to end: unrevoked and unexpired (events). */
export async function endingSessionIds(trx: Executor, identityId: string, now: Date): Promise<string[]> {
  const rows = await trx
    .selectFrom('sessions')
    .select('id')
    .where('identity_id', '=', identityId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .execute();
  return rows.map((r) => r.id);
}
