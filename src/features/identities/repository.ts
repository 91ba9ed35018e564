import { type Expression, type ExpressionBuilder, sql } from 'kysely';
import { jsonBuildObject } from 'kysely/helpers/postgres';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { DB } from '../../platform/db/schema.js';
import { isLocale, type Locale } from '../../shared/locales.js';
import type { IdentifierType, NormalisedIdentifier } from './identifier.js';
import { deletePicture } from './picture-repository.js';
import type { ProfileNames } from './profile.js';

export interface IdentifierRow {
  id: string;
  identityId: string;
  type: 'email' | 'phone';
  value: string;
  verifiedAt: Date | null;
}

export interface IdentityRow {
  id: string;
  passwordHash: string | null;
  sessionEpoch: number;
  failedAttempts: number;
  lockedUntil: Date | null;
  /** Set by an operator: every sign-in of this identity is refused (docs/admin.md, "Disable and enable"). */
  disabledAt: Date | null;
  /** Set by an operator's erasure: nothing but the bare id is left, and nothing changes it again. */
  erasedAt: Date | null;
  /** The identity's language (identities.locale): its messages are written in it. */
  locale: string;
  /** The identity's name (migration 0029; identities/profile.ts). */
  givenName: string | null;
  familyName: string | null;
  displayName: string | null;
}

/** An identifiers row under the domain's names (IdentifierRow). */
const identifierColumns = [
  'id',
  'identity_id as identityId',
  'type',
  'value',
  'verified_at as verifiedAt',
] as const;

/** An identities row under the domain's names (IdentityRow). */
const identityColumns = [
  'id',
  'password_hash as passwordHash',
  'session_epoch as sessionEpoch',
  'failed_attempts as failedAttempts',
  'locked_until as lockedUntil',
  'disabled_at as disabledAt',
  'erased_at as erasedAt',
  'locale',
  'given_name as givenName',
  'family_name as familyName',
  'display_name as displayName',
] as const;

/** One identifier as the admin API lists it (json_build_object's shape). */
export interface IdentifierJson {
  id: string;
  type: IdentifierType;
  value: string;
  /** As json_build_object renders a timestamptz. */
  verifiedAt: string | null;
}

/** An identity as the admin API lists it (and as its events show it). */
export interface IdentityListRow {
  id: string;
  createdAt: Date;
  /** The identity's language (migration 0027). */
  locale: string;
  /** The identity's name (migration 0029; identities/profile.ts). */
  givenName: string | null;
  familyName: string | null;
  displayName: string | null;
  disabledAt: Date | null;
  erasedAt: Date | null;
  identifiers: IdentifierJson[];
}

/** The name columns of the identity aliased `i`, under the domain's names (ProfileNames). */
export const profileColumns = [
  'i.given_name as givenName',
  'i.family_name as familyName',
  'i.display_name as displayName',
] as const;

/** A query over the identities aliased `i`. */
export type OverIdentities = ExpressionBuilder<DB & { i: DB['identities'] }, 'i'>;

/** The identity's live identifiers (verified or pending), oldest first, for a query where `i` is the identity. */
export function liveIdentifiers(eb: OverIdentities) {
  return eb.fn
    .coalesce(
      eb
        .selectFrom('identifiers as f')
        .select((eb) =>
          eb.fn
            .agg<IdentifierJson[]>('json_agg', [
              jsonBuildObject({
                id: eb.ref('f.id'),
                type: eb.ref('f.type'),
                value: eb.ref('f.value'),
                verifiedAt: eb.ref('f.verified_at'),
              }),
            ])
            .orderBy('f.created_at')
            .orderBy('f.id')
            .as('identifiers'),
        )
        .whereRef('f.identity_id', '=', 'i.id')
        .where('f.removed_at', 'is', null)
        .$asScalar(),
      eb.cast<IdentifierJson[]>(eb.val('[]'), 'json'),
    )
    .as('identifiers');
}

/**
 * The first verified identifier of the identity `identityId` refers to (the earliest verified,
 * then by id; removed ones never): the one the service names a person by in member lists, the
 * operators' list and an invitation's inviter. A scalar subquery of the caller's query; select
 * `f.type` or `f.value` from it.
 */
export function firstVerifiedIdentifier<T extends DB>(
  eb: ExpressionBuilder<T, keyof T>,
  identityId: Expression<string>,
) {
  return (eb as unknown as ExpressionBuilder<DB, never>)
    .selectFrom('identifiers as f')
    .where('f.identity_id', '=', identityId)
    .where('f.verified_at', 'is not', null)
    .where('f.removed_at', 'is', null)
    .orderBy('f.verified_at')
    .orderBy('f.id')
    .limit(1);
}

/** The identity as the admin API lists it, read in the caller's transaction (events). */
export function identityListed(trx: Executor, identityId: string): Promise<IdentityListRow | undefined> {
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
    ])
    .where('i.id', '=', identityId)
    .executeTakeFirst();
}

/**
 * The nil UUID: no identity or identifier has it, so a statement keyed by it matches nothing. A
 * refusal for an address no account holds runs its statements keyed by NOBODY, so it costs what a
 * refusal for an account costs (equal time).
 */
export const NOBODY = '00000000-0000-0000-0000-000000000000';

/** The live (not removed) identifier row for a normalised address, whoever owns it. */
export async function findIdentifier(
  trx: Executor,
  ident: NormalisedIdentifier,
): Promise<IdentifierRow | undefined> {
  return trx
    .selectFrom('identifiers')
    .select(identifierColumns)
    .$narrowType<{ type: IdentifierRow['type'] }>()
    .where('type', '=', ident.type)
    .where('value', '=', ident.value)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

/** What a password sign-in needs of an address, in one statement: its identity, epoch and hash. */
export interface PasswordHolder {
  identityId: string;
  verifiedAt: Date | null;
  passwordHash: string | null;
  sessionEpoch: number;
  disabledAt: Date | null;
}

export async function findPasswordHolder(
  trx: Executor,
  ident: NormalisedIdentifier,
): Promise<PasswordHolder | undefined> {
  return trx
    .selectFrom('identifiers as i')
    .innerJoin('identities as p', 'p.id', 'i.identity_id')
    .select([
      'i.identity_id as identityId',
      'i.verified_at as verifiedAt',
      'p.password_hash as passwordHash',
      'p.session_epoch as sessionEpoch',
      'p.disabled_at as disabledAt',
    ])
    .where('i.type', '=', ident.type)
    .where('i.value', '=', ident.value)
    .where('i.removed_at', 'is', null)
    .executeTakeFirst();
}

export async function findIdentity(
  trx: Executor,
  id: string,
  forUpdate = false,
): Promise<IdentityRow | undefined> {
  const q = trx.selectFrom('identities').select(identityColumns).where('id', '=', id);
  return (forUpdate ? q.forUpdate() : q).executeTakeFirst();
}

/** Locks the identity row: the first lock of anything that counts or rewrites an identity's set. */
export async function lockIdentity(trx: Executor, id: string): Promise<IdentityRow | undefined> {
  return findIdentity(trx, id, true);
}

/** The first verified identifier of each of `identityIds` (as firstVerifiedIdentifier picks it), in one statement. */
export async function firstVerifiedIdentifiersOf(
  trx: Executor,
  identityIds: readonly string[],
): Promise<Map<string, { type: IdentifierType; value: string }>> {
  if (identityIds.length === 0) return new Map();
  const rows = await trx
    .selectFrom('identifiers')
    .distinctOn('identity_id')
    .select(['identity_id', 'type', 'value'])
    .where('identity_id', 'in', identityIds)
    .where('verified_at', 'is not', null)
    .where('removed_at', 'is', null)
    .orderBy('identity_id')
    .orderBy('verified_at')
    .orderBy('id')
    .execute();
  return new Map(rows.map((r) => [r.identity_id, { type: r.type as IdentifierType, value: r.value }]));
}

export async function verifiedIdentifiers(trx: Executor, identityId: string): Promise<IdentifierRow[]> {
  return trx
    .selectFrom('identifiers')
    .select(identifierColumns)
    .$narrowType<{ type: IdentifierRow['type'] }>()
    .where('identity_id', '=', identityId)
    .where('verified_at', 'is not', null)
    .where('removed_at', 'is', null)
    .orderBy('verified_at')
    .orderBy('id')
    .execute();
}

/**
 * Ends every session of an identity that was issued before now: bumping the epoch kills sessions
 * still committing with the old one (docs/decisions.md, "Sessions", session epoch: sign-out
 * everywhere vs in-flight sign-ins).
 */
export async function bumpSessionEpoch(trx: Executor, identityId: string): Promise<number> {
  const rows = await trx
    .updateTable('identities')
    .set((eb) => ({ session_epoch: eb('session_epoch', '+', eb.lit(1)) }))
    .where('id', '=', identityId)
    .returning('session_epoch')
    .execute();
  return rows[0].session_epoch;
}

export interface IdentitySummary {
  identifiers: IdentifierRow[];
  /** The ways the identity can prove itself (`methods`: docs/api.md, "2. Who am I"), in a fixed order. */
  methods: string[];
}

export interface SummaryColumns {
  has_password: boolean;
  second_factor: boolean;
  provider: boolean;
  passkey: boolean;
  identifiers: { id: string; type: 'email' | 'phone'; value: string; verified_at: string }[];
}

/**
 * The columns of an identity summary, for a query where `i` is the identities row: verified
 * identifiers and active methods come back with whatever else that query reads, in one round trip
 * (the session context is on the hot path). Each feature that adds a kind of method adds its
 * clause here.
 */
// raw: a column list spliced into the sessions repository's own raw query (a RawBuilder fragment), with json_agg(... ORDER BY)
export const summaryColumns = sql`
  i.password_hash IS NOT NULL AS has_password,
  EXISTS (SELECT 1 FROM second_factors t WHERE t.identity_id = i.id
          AND t.verified_at IS NOT NULL AND t.revoked_at IS NULL) AS second_factor,
  EXISTS (SELECT 1 FROM provider_links l WHERE l.identity_id = i.id AND l.removed_at IS NULL) AS provider,
  EXISTS (SELECT 1 FROM passkeys k WHERE k.identity_id = i.id AND k.removed_at IS NULL) AS passkey,
  COALESCE((SELECT json_agg(json_build_object('id', f.id, 'type', f.type, 'value', f.value,
                                              'verified_at', f.verified_at) ORDER BY f.verified_at, f.id)
            FROM identifiers f
            WHERE f.identity_id = i.id AND f.verified_at IS NOT NULL AND f.removed_at IS NULL),
           '[]'::json) AS identifiers`;

export function toSummary(identityId: string, row: SummaryColumns): IdentitySummary {
  const identifiers = row.identifiers.map((f) => ({
    id: f.id,
    identityId,
    type: f.type,
    value: f.value,
    verifiedAt: new Date(f.verified_at),
  }));
  const methods: string[] = [];
  if (row.has_password) methods.push('password');
  if (identifiers.some((f) => f.type === 'email')) methods.push('email');
  if (identifiers.some((f) => f.type === 'phone')) methods.push('phone');
  if (row.provider) methods.push('provider');
  if (row.passkey) methods.push('passkey');
  if (row.second_factor) methods.push('second_factor');
  return { identifiers, methods };
}

export async function insertIdentity(
  trx: Executor,
  identity: { id: string; createdAt: Date; locale?: Locale; names?: ProfileNames },
): Promise<void> {
  await trx
    .insertInto('identities')
    .values({
      id: identity.id,
      created_at: identity.createdAt,
      ...(identity.locale ? { locale: identity.locale } : {}),
      ...(identity.names
        ? {
            given_name: identity.names.givenName,
            family_name: identity.names.familyName,
            display_name: identity.names.displayName,
          }
        : {}),
    })
    .execute();
}

/** The identity's language (identities.locale): its messages are written in it. English when unknown. */
export async function identityLocale(exec: Executor, identityId: string): Promise<Locale> {
  const row = await exec
    .selectFrom('identities')
    .select('locale')
    .where('id', '=', identityId)
    .executeTakeFirst();
  return localeOf(row);
}

/** The language of an identity row already read (English when unknown). */
export function localeOf(row: { locale: string } | undefined): Locale {
  return isLocale(row?.locale) ? row.locale : 'en';
}

/**
 * Keeps `locale` as the identity's language; true when it changed (an unchanged language writes
 * nothing, so the hosted pages may say theirs on every visit).
 */
export async function setIdentityLocale(trx: Executor, identityId: string, locale: Locale): Promise<boolean> {
  const result = await trx
    .updateTable('identities')
    .set({ locale })
    .where('id', '=', identityId)
    .where('locale', '<>', locale)
    .where('erased_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Sets the given fields of the identity's name (undefined leaves one as it is, null clears it); true
 * when one changed (the same name again writes nothing). Never an erased identity.
 */
export async function setIdentityNames(
  trx: Executor,
  identityId: string,
  change: Partial<ProfileNames>,
): Promise<boolean> {
  const set = {
    ...(change.givenName !== undefined ? { given_name: change.givenName } : {}),
    ...(change.familyName !== undefined ? { family_name: change.familyName } : {}),
    ...(change.displayName !== undefined ? { display_name: change.displayName } : {}),
  };
  const entries = Object.entries(set) as [keyof typeof set, string | null][];
  if (entries.length === 0) return false;
  const result = await trx
    .updateTable('identities')
    .set(set)
    .where('id', '=', identityId)
    .where('erased_at', 'is', null)
    .where((eb) => eb.or(entries.map(([column, value]) => eb(column, 'is distinct from', value))))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Only for an identity this transaction created and that lost the race for its identifier or link. */
export async function deleteFreshIdentity(trx: Executor, id: string): Promise<void> {
  await trx.deleteFrom('identities').where('id', '=', id).execute();
}

/**
 * Sets the identity's password. With `onlyIfUnset` it only fills a pending identity's empty
 * password (a confirmed sign-up) and answers false when one is already set.
 */
export async function setPassword(
  trx: Executor,
  identityId: string,
  passwordHash: string,
  now: Date,
  opts: { onlyIfUnset?: boolean } = {},
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('identities')
      .set({ password_hash: passwordHash, password_changed_at: now })
      .where('id', '=', identityId)
      .$if(opts.onlyIfUnset === true, (q) => q.where('password_hash', 'is', null))
      .returning('id'),
  );
}

export async function removePassword(trx: Executor, identityId: string, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('identities')
      .set({ password_hash: null, password_changed_at: now })
      .where('id', '=', identityId)
      .where('password_hash', 'is not', null)
      .returning('id'),
  );
}

/** The identity-wide lock's counter, read under the row lock (identities/lock.ts). */
/** What one counted failure did to an identity's lock (countLockFailure). */
export interface LockCount {
  /** The lock was running before this failure. */
  wasLocked: boolean;
  /** The lock's end after this failure; null when unlocked. */
  lockedUntil: Date | null;
}

/**
 * Counts one failure on the identity's lock in one statement, and returns the lock as it was and
 * as it is. The row is locked FOR UPDATE in the subquery, so concurrent failures count one by one
 * and exactly one of them sees the count cross `threshold` (PostgreSQL 15 has no OLD in RETURNING:
 * the subquery carries the old values). A lock that ran out starts the count again; a running lock
 * keeps its end. An identity that does not exist counts nothing, in the same statement, so a caller
 * with nobody to charge does the same work as one with somebody (equal time).
 */
export async function countLockFailure(
  trx: Executor,
  identityId: string,
  now: Date,
  threshold: number,
  lockUntil: Date,
): Promise<LockCount | undefined> {
  const old = trx
    .selectFrom('identities')
    .select(['id', 'failed_attempts', 'locked_until'])
    .where('id', '=', identityId)
    .forUpdate()
    .as('old');
  // The updated row `i` and the old values `old`, as the SET and RETURNING clauses below see them.
  type Old = Pick<DB['identities'], 'id' | 'failed_attempts' | 'locked_until'>;
  type Eb = ExpressionBuilder<DB & { i: DB['identities']; old: Old }, 'i' | 'old'>;
  const running = (eb: Eb) => eb('old.locked_until', '>', eb.cast<Date>(eb.val(now), 'timestamptz'));
  const failures = (eb: Eb) =>
    eb
      .case()
      .when(running(eb))
      .then(eb('old.failed_attempts', '+', eb.lit(1)))
      .when('old.locked_until', 'is not', null)
      .then(eb.lit(1))
      .else(eb('old.failed_attempts', '+', eb.lit(1)))
      .end();
  return trx
    .updateTable('identities as i')
    .from(old)
    .set((eb) => ({
      failed_attempts: failures(eb),
      locked_until: eb
        .case()
        .when(running(eb))
        .then(eb.ref('old.locked_until'))
        .when(failures(eb), '>=', eb.cast<number>(eb.val(threshold), 'int4'))
        .then(eb.cast<Date>(eb.val(lockUntil), 'timestamptz'))
        .else(null)
        .end(),
    }))
    .whereRef('i.id', '=', 'old.id')
    .returning((eb) => [
      eb.fn.coalesce(running(eb), eb.lit(false)).$castTo<boolean>().as('wasLocked'),
      'i.locked_until as lockedUntil',
    ])
    .executeTakeFirst();
}

/**
 * Claims a normalised address for an identity: unverified (a sign-up) or already verified (a
 * sign-in method proven by its code). The partial unique index decides between concurrent claims:
 * a loser waits for the winner's commit and gets undefined, never an error, so it can go on to
 * read the winner's row in the same transaction.
 */
export async function claimIdentifier(
  trx: Executor,
  row: { id: string; identityId: string; identifier: NormalisedIdentifier; now: Date; verified: boolean },
): Promise<string | undefined> {
  const verifiedAt = row.verified ? row.now : null;
  const inserted = await trx
    .insertInto('identifiers')
    .values({
      id: row.id,
      identity_id: row.identityId,
      type: row.identifier.type,
      value: row.identifier.value,
      created_at: row.now,
      verified_at: verifiedAt,
    })
    .onConflict((oc) => oc.columns(['type', 'value']).where('removed_at', 'is', null).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted?.id;
}

/**
 * Claims an unverified address together with a new identity, in one statement: both rows are
 * written when the address is free, neither when a live row holds it (false). Nothing is written
 * and dropped when the claim is lost, so a lost claim and a won one cost alike (the identity's
 * foreign key is checked at the end of the statement, once both rows exist).
 */
export async function claimAddressWithIdentity(
  trx: Executor,
  row: {
    identityId: string;
    identifierId: string;
    identifier: NormalisedIdentifier;
    now: Date;
    locale: Locale;
  },
): Promise<boolean> {
  const inserted = await trx
    .with('claimed', (db) =>
      db
        .insertInto('identifiers')
        .values({
          id: row.identifierId,
          identity_id: row.identityId,
          type: row.identifier.type,
          value: row.identifier.value,
          created_at: row.now,
          verified_at: null,
        })
        .onConflict((oc) => oc.columns(['type', 'value']).where('removed_at', 'is', null).doNothing())
        .returning('id'),
    )
    .insertInto('identities')
    .columns(['id', 'created_at', 'locale'])
    .expression((eb) =>
      eb
        .selectFrom('claimed')
        .select([
          eb.val(row.identityId).as('id'),
          eb.val(row.now).as('created_at'),
          eb.val(row.locale).as('locale'),
        ]),
    )
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

/**
 * False when the identifier was verified or removed meanwhile (or, with `identityId`, belongs to
 * another identity): the confirmation must not proceed.
 */
export async function markIdentifierVerified(
  trx: Executor,
  identifierId: string,
  now: Date,
  identityId?: string,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('identifiers')
      .set({ verified_at: now })
      .where('id', '=', identifierId)
      .$if(Boolean(identityId), (q) => q.where('identity_id', '=', identityId!))
      .where('verified_at', 'is', null)
      .where('removed_at', 'is', null)
      .returning('id'),
  );
}

/**
 * Removes a live identifier: a verified one of its owner (`identityId`), or with `pendingOnly` a
 * registration that was never confirmed (it yields to the identity that proved the address from
 * a session). False when nothing matched. The caller revokes the codes in flight to it.
 */
export async function removeIdentifier(
  trx: Executor,
  identifierId: string,
  now: Date,
  which: { identityId: string } | { pendingOnly: true },
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('identifiers')
      .set({ removed_at: now })
      .where('id', '=', identifierId)
      .where((eb) =>
        'identityId' in which ? eb('identity_id', '=', which.identityId) : eb('verified_at', 'is', null),
      )
      .where('removed_at', 'is', null)
      .returning('id'),
  );
}

export async function clearLockCounter(trx: Executor, identityId: string): Promise<void> {
  await trx
    .updateTable('identities')
    .set((eb) => ({ failed_attempts: eb.lit(0), locked_until: null }))
    .where('id', '=', identityId)
    .execute();
}

/** An operator's disablement; the first time is kept. False when it was disabled already. */
export async function disableIdentity(trx: Executor, identityId: string, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('identities')
      .set({ disabled_at: now })
      .where('id', '=', identityId)
      .where('disabled_at', 'is', null)
      .returning('id'),
  );
}

/** An operator's enablement; an erased identity stays disabled. False when nothing changed. */
export async function enableIdentity(trx: Executor, identityId: string): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('identities')
      .set({ disabled_at: null })
      .where('id', '=', identityId)
      .where('disabled_at', 'is not', null)
      .where('erased_at', 'is', null)
      .returning('id'),
  );
}

/**
 * Erasure of the identity's own rows (the caller holds the row lock and has already deleted the
 * challenges that name its identifiers): every identifier, live or removed, is deleted, and the
 * identity keeps only its id, its creation time, its epoch and the instants it was disabled and
 * erased: no password, no lock, no name, no picture. Answers how many identifiers were deleted.
 */
export async function eraseIdentity(trx: Executor, identityId: string, now: Date): Promise<number> {
  const gone = await trx
    .deleteFrom('identifiers')
    .where('identity_id', '=', identityId)
    .returning('id')
    .execute();
  // The picture is the person's face: it goes with the name (migration 0030).
  await deletePicture(trx, identityId);
  await trx
    .updateTable('identities')
    .set((eb) => ({
      password_hash: null,
      password_changed_at: null,
      given_name: null,
      family_name: null,
      display_name: null,
      failed_attempts: eb.lit(0),
      locked_until: null,
      disabled_at: eb.fn.coalesce('disabled_at', eb.val(now)),
      erased_at: now,
    }))
    .where('id', '=', identityId)
    .execute();
  return gone.length;
}

/**
 * Replaces an imported password hash by the service's Argon2id at a successful sign-in, by
 * compare-and-set on the hash that was verified: a password changed or recovered meanwhile is kept
 * (false), never overwritten by the old password's new hash.
 */
export async function upgradePasswordHash(
  trx: Executor,
  identityId: string,
  verified: string,
  upgraded: string,
): Promise<boolean> {
  const row = await trx
    .updateTable('identities')
    .set({ password_hash: upgraded })
    .where('id', '=', identityId)
    .where('password_hash', '=', verified)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** An identity brought by an import (docs/import.md), written as it was in the source. */
export interface ImportedIdentityRow {
  id: string;
  externalId: string | null;
  createdAt: Date;
  passwordHash: string | null;
  names: ProfileNames;
  locale: Locale | null;
  identifiers: { id: string; type: IdentifierType; value: string; verifiedAt: Date | null }[];
}

/** Many imported identities and their identifiers in two statements (the import's batch). */
export async function insertImportedIdentities(trx: Executor, rows: ImportedIdentityRow[]): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .insertInto('identities')
    .values(
      rows.map((r) => ({
        id: r.id,
        created_at: r.createdAt,
        password_hash: r.passwordHash,
        password_changed_at: r.passwordHash ? r.createdAt : null,
        given_name: r.names.givenName,
        family_name: r.names.familyName,
        display_name: r.names.displayName,
        external_id: r.externalId,
        ...(r.locale ? { locale: r.locale } : {}),
      })),
    )
    .execute();
  await trx
    .insertInto('identifiers')
    .values(
      rows.flatMap((r) =>
        r.identifiers.map((f) => ({
          id: f.id,
          identity_id: r.id,
          type: f.type,
          value: f.value,
          created_at: r.createdAt,
          verified_at: f.verifiedAt,
        })),
      ),
    )
    .execute();
}

/** The identities already holding one of these external ids (an import's second run). */
export async function identitiesByExternalId(
  trx: Executor,
  externalIds: string[],
): Promise<Map<string, { id: string; passwordHash: string | null }>> {
  if (externalIds.length === 0) return new Map();
  const rows = await trx
    .selectFrom('identities')
    .select(['id', 'external_id as externalId', 'password_hash as passwordHash'])
    .where('external_id', 'in', externalIds)
    .execute();
  return new Map(rows.map((r) => [r.externalId!, { id: r.id, passwordHash: r.passwordHash }]));
}

/** Which of these normalised addresses a live identifier already holds, and whose. */
export async function liveIdentifiersAmong(
  trx: Executor,
  idents: NormalisedIdentifier[],
): Promise<Map<string, string>> {
  if (idents.length === 0) return new Map();
  // Raw: the builder has no join to unnest() of two bound arrays. A join, not `value IN (…)`: each
  // pair is one probe of identifiers_live_value (or one hash join), never a scan per listed value.
  const { rows } = await sql<{ type: string; value: string; identityId: string }>`
    SELECT i.type, i.value, i.identity_id AS "identityId"
      FROM unnest(${idents.map((i) => i.type)}::text[], ${idents.map((i) => i.value)}::text[]) AS q(type, value)
      JOIN identifiers i ON i.type = q.type AND i.value = q.value AND i.removed_at IS NULL`.execute(trx);
  return new Map(rows.map((r) => [`${r.type}:${r.value}`, r.identityId]));
}

/** `--update`: an imported identity's names, locale and password hash as the source has them now. */
export async function updateImportedIdentity(
  trx: Executor,
  id: string,
  values: { names: ProfileNames; locale: Locale | null; passwordHash?: string | null },
): Promise<void> {
  await trx
    .updateTable('identities')
    .set({
      given_name: values.names.givenName,
      family_name: values.names.familyName,
      display_name: values.names.displayName,
      ...(values.locale ? { locale: values.locale } : {}),
      ...(values.passwordHash !== undefined ? { password_hash: values.passwordHash } : {}),
    })
    .where('id', '=', id)
    .execute();
}

/** What an export writes of identities: a keyset page after `afterId`, with their identifiers. */
export async function identitiesForExport(
  trx: Executor,
  afterId: string | null,
  limit: number,
): Promise<
  {
    id: string;
    externalId: string | null;
    createdAt: Date;
    passwordHash: string | null;
    givenName: string | null;
    familyName: string | null;
    displayName: string | null;
    locale: string;
    identifiers: { type: IdentifierType; value: string; verified: boolean }[];
  }[]
> {
  let q = trx
    .selectFrom('identities as p')
    .select((eb) => [
      'p.id',
      'p.external_id as externalId',
      'p.created_at as createdAt',
      'p.password_hash as passwordHash',
      'p.given_name as givenName',
      'p.family_name as familyName',
      'p.display_name as displayName',
      'p.locale',
      eb
        .selectFrom('identifiers as i')
        .whereRef('i.identity_id', '=', 'p.id')
        .where('i.removed_at', 'is', null)
        // No row: json_agg is null, read as [] below.
        .select((i) =>
          i.fn
            .jsonAgg(
              jsonBuildObject({
                type: i.ref('i.type'),
                value: i.ref('i.value'),
                verified: i('i.verified_at', 'is not', null),
              }),
            )
            .orderBy('i.created_at')
            .orderBy('i.id')
            .as('agg'),
        )
        .as('identifiers'),
    ])
    .where('p.erased_at', 'is', null)
    .orderBy('p.id')
    .limit(limit);
  if (afterId) q = q.where('p.id', '>', afterId);
  const rows = await q.execute();
  return rows.map((r) => ({
    ...r,
    identifiers: (r.identifiers ?? []) as { type: IdentifierType; value: string; verified: boolean }[],
  }));
}
