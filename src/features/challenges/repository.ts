import type { ExpressionBuilder } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';
import type { DB } from '../../platform/db/schema.js';
import type { IdentifierType, NormalisedIdentifier } from '../identities/identifier.js';

export type ChallengePurpose = 'sign_up' | 'sign_in_method' | 'password_recovery' | 'step_up' | 'sign_in';
export type StepUpChannel = 'second_factor' | 'identifier' | 'recovery_code';

/** One shape for every purpose; the columns a purpose does not use are null (migration 0007). */
export interface ChallengeRow {
  id: string;
  identityId: string;
  /** The address the code went to (sign-up, recovery, sign-in, step-up by identifier). */
  identifierId: string | null;
  /** Step-up only: the session that started it. */
  sessionId: string | null;
  purpose: ChallengePurpose;
  channel: StepUpChannel | null;
  /** Keyed hash of the code; null only for a step-up answered by the authenticator. */
  codeHash: string | null;
  /** Sign-up only: the password sent with this registration (docs/api.md, "1. Sign up"). */
  passwordHash: string | null;
  /** Sign-in method only: the address the code will add once confirmed. */
  identifierType: IdentifierType | null;
  identifierValue: string | null;
  attempts: number;
  maxAttempts: number;
  expiresAt: Date;
  spentAt: Date | null;
  revokedAt: Date | null;
  /** Sign-in only, once spent by its link: whether the browser that opened it had asked for it. */
  linkBrowser: 'same' | 'other' | null;
}

export interface NewChallenge {
  id: string;
  identityId: string;
  purpose: ChallengePurpose;
  codeHash: string | null;
  maxAttempts: number;
  now: Date;
  expiresAt: Date;
  identifierId?: string;
  sessionId?: string;
  channel?: StepUpChannel;
  passwordHash?: string;
  address?: NormalisedIdentifier;
}

/** Whose challenges: an identifier's (sign-up, recovery) or an identity's (sign-in methods). */
export type ChallengeOwner = { identifierId: string } | { identityId: string };

/** Which live challenges a revocation retires. */
export type RevocationScope =
  /** Everything sent to an address (it was removed or retired), or one purpose of it but one. */
  | { identifierId: string; purpose?: ChallengePurpose; exceptId?: string }
  /** One purpose of an identity, optionally only those naming an address to add. */
  | { identityId: string; purpose: ChallengePurpose; address?: NormalisedIdentifier }
  /** A session's step-ups: only the newest can be answered. */
  | { sessionId: string };

type Challenges = ExpressionBuilder<DB, 'challenges'>;

/** A challenge under the domain's names: every read selects exactly these. */
const COLUMNS = [
  'id',
  'identity_id as identityId',
  'identifier_id as identifierId',
  'session_id as sessionId',
  'purpose',
  'channel',
  'code_hash as codeHash',
  'password_hash as passwordHash',
  'identifier_type as identifierType',
  'identifier_value as identifierValue',
  'attempts',
  'max_attempts as maxAttempts',
  'expires_at as expiresAt',
  'spent_at as spentAt',
  'revoked_at as revokedAt',
  'link_browser as linkBrowser',
] as const;

/** The columns the database types as text, narrowed to the values the writes put there. */
type ChallengeEnums = Pick<ChallengeRow, 'purpose' | 'channel' | 'identifierType' | 'linkBrowser'>;

function ownedBy(eb: Challenges, owner: ChallengeOwner) {
  return 'identifierId' in owner
    ? eb('identifier_id', '=', owner.identifierId)
    : eb('identity_id', '=', owner.identityId);
}

/**
 * Answerable at `now`: the one definition of a live challenge, shared by every statement below. The
 * columns are qualified, so a statement joining other tables to `challenges` uses it unchanged.
 */
function answerable(eb: Challenges, now: Date) {
  return eb.and([
    eb('challenges.spent_at', 'is', null),
    eb('challenges.revoked_at', 'is', null),
    eb('challenges.expires_at', '>', now),
    eb('challenges.attempts', '<', eb.ref('challenges.max_attempts')),
  ]);
}

export async function insertChallenge(trx: Executor, c: NewChallenge): Promise<void> {
  await trx
    .insertInto('challenges')
    .values({
      id: c.id,
      identity_id: c.identityId,
      identifier_id: c.identifierId ?? null,
      session_id: c.sessionId ?? null,
      purpose: c.purpose,
      channel: c.channel ?? null,
      code_hash: c.codeHash,
      password_hash: c.passwordHash ?? null,
      identifier_type: c.address?.type ?? null,
      identifier_value: c.address?.value ?? null,
      attempts: 0,
      max_attempts: c.maxAttempts,
      created_at: c.now,
      expires_at: c.expiresAt,
    })
    .execute();
}

export function findChallenge(trx: Executor, id: string): Promise<ChallengeRow | undefined> {
  return trx
    .selectFrom('challenges')
    .select(COLUMNS)
    .$narrowType<ChallengeEnums>()
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The owner's challenges of one purpose that could still be answered at `now`, oldest first. */
export function liveChallenges(
  trx: Executor,
  purpose: ChallengePurpose,
  owner: ChallengeOwner,
  now: Date,
): Promise<ChallengeRow[]> {
  return trx
    .selectFrom('challenges')
    .select(COLUMNS)
    .$narrowType<ChallengeEnums>()
    .where((eb) => ownedBy(eb, owner))
    .where('purpose', '=', purpose)
    .where((eb) => answerable(eb, now))
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * Compare-and-set: spends the challenge only while it is still answerable at `now`, so of two
 * requests racing with one code exactly one gets true.
 */
export async function spendChallenge(trx: Executor, id: string, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('challenges')
      .set({ spent_at: now })
      .where('id', '=', id)
      .where((eb) => answerable(eb, now))
      .returning('id'),
  );
}

/**
 * Compare-and-set as spendChallenge, for a sign-in code spent by its link: records which browser
 * opened it (migration 0028), so the browser that asked can be told where the sign-in finished.
 */
export async function spendChallengeByLink(
  trx: Executor,
  id: string,
  browser: 'same' | 'other',
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('challenges')
      .set({ spent_at: now, link_browser: browser })
      .where('id', '=', id)
      .where('purpose', '=', 'sign_in')
      .where((eb) => answerable(eb, now))
      .returning('id'),
  );
}

/** One attempt charged on one challenge while it is answerable; false once it no longer is. */
export async function chargeChallenge(trx: Executor, id: string, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('challenges')
      .set((eb) => ({ attempts: eb('attempts', '+', eb.lit(1)) }))
      .where('id', '=', id)
      .where((eb) => answerable(eb, now))
      .returning('id'),
  );
}

/** A failed answer costs one attempt on every live challenge of the owner for that purpose. */
export async function chargeLiveChallenges(
  trx: Executor,
  purpose: ChallengePurpose,
  owner: ChallengeOwner,
  now: Date,
): Promise<number> {
  const charged = await trx
    .updateTable('challenges')
    .set((eb) => ({ attempts: eb('attempts', '+', eb.lit(1)) }))
    .where((eb) => ownedBy(eb, owner))
    .where('purpose', '=', purpose)
    .where((eb) => answerable(eb, now))
    .returning('id')
    .execute();
  return charged.length;
}

export async function revokeChallenges(trx: Executor, scope: RevocationScope, now: Date): Promise<number> {
  let revoke = trx.updateTable('challenges').set({ revoked_at: now });
  if ('sessionId' in scope) {
    revoke = revoke.where('session_id', '=', scope.sessionId);
  } else if ('identifierId' in scope) {
    revoke = revoke.where('identifier_id', '=', scope.identifierId);
    if (scope.purpose) revoke = revoke.where('purpose', '=', scope.purpose);
    if (scope.exceptId) revoke = revoke.where('id', '<>', scope.exceptId);
  } else {
    revoke = revoke.where('identity_id', '=', scope.identityId).where('purpose', '=', scope.purpose);
    if (scope.address) {
      revoke = revoke
        .where('identifier_type', '=', scope.address.type)
        .where('identifier_value', '=', scope.address.value);
    }
  }
  const revoked = await revoke
    .where('spent_at', 'is', null)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return revoked.length;
}

/**
 * Erasure: every challenge of the identity, every challenge sent to one of its identifiers, and
 * every other identity's pending challenge naming one of its addresses (they hold the address and,
 * for sign-ups, a password hash). Runs before the identifiers are deleted (foreign key).
 */
export async function deleteIdentityChallenges(trx: Executor, identityId: string): Promise<number> {
  const deleted = await trx
    .deleteFrom('challenges as c')
    .where((eb) =>
      eb.or([
        eb('c.identity_id', '=', identityId),
        eb(
          'c.identifier_id',
          'in',
          eb
            .selectFrom('identifiers')
            .select('identifiers.id')
            .where('identifiers.identity_id', '=', identityId),
        ),
        eb(
          eb.refTuple('c.identifier_type', 'c.identifier_value'),
          'in',
          eb
            .selectFrom('identifiers')
            .select(['identifiers.type', 'identifiers.value'])
            .where('identifiers.identity_id', '=', identityId)
            .$asTuple('type', 'value'),
        ),
      ]),
    )
    .returning('c.id')
    .execute();
  return deleted.length;
}

/** A live sign-in code with its address and identity, as its link shows and answers it. */
export interface LiveSignInCode {
  id: string;
  identityId: string;
  identifierType: IdentifierType;
  identifierValue: string;
  expiresAt: Date;
  sessionEpoch: number;
  passwordHash: string | null;
  disabledAt: Date | null;
  erasedAt: Date | null;
}

/**
 * The sign-in code `id` while it could still be answered at `now`, with the verified address it was
 * sent to and its identity: one statement (a link's page and its answer read nothing else).
 */
export function findLiveSignInCode(
  exec: Executor,
  id: string,
  now: Date,
): Promise<LiveSignInCode | undefined> {
  return (
    exec
      .selectFrom('challenges')
      .innerJoin('identifiers as i', 'i.id', 'challenges.identifier_id')
      .innerJoin('identities as p', 'p.id', 'challenges.identity_id')
      .select([
        'challenges.id',
        'challenges.identity_id as identityId',
        'i.type as identifierType',
        'i.value as identifierValue',
        'challenges.expires_at as expiresAt',
        'p.session_epoch as sessionEpoch',
        'p.password_hash as passwordHash',
        'p.disabled_at as disabledAt',
        'p.erased_at as erasedAt',
      ])
      .$narrowType<{ identifierType: IdentifierType }>()
      .where('challenges.id', '=', id)
      .where('challenges.purpose', '=', 'sign_in')
      // Its columns are qualified; the joined tables add none the definition reads.
      .where((eb) => answerable(eb as unknown as Challenges, now))
      .where('i.verified_at', 'is not', null)
      .where('i.removed_at', 'is', null)
      .executeTakeFirst()
  );
}
