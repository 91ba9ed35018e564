import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';

export type WebAuthnPurpose = 'registration' | 'sign_in' | 'step_up';

export interface PasskeyRow {
  id: string;
  identityId: string;
  credentialId: string;
  publicKey: Buffer;
  signCount: number;
  transports: string[];
  backupEligible: boolean;
  backedUp: boolean;
  label: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  removedAt: Date | null;
}

export async function insertChallenge(
  trx: Executor,
  c: {
    id: string;
    purpose: WebAuthnPurpose;
    hash: string;
    sessionId: string | null;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await trx
    .insertInto('webauthn_challenges')
    .values({
      id: c.id,
      purpose: c.purpose,
      challenge_hash: c.hash,
      session_id: c.sessionId,
      created_at: c.now,
      expires_at: c.expiresAt,
    })
    .execute();
}

/**
 * Bounded clean-up with each issuance (sign-in options need no session, so nothing else bounds
 * the table). An expired challenge is refused like an unknown one, so deleting it changes no
 * answer. SKIP LOCKED: concurrent clean-ups never wait on each other.
 */
export async function pruneExpiredChallenges(trx: Executor, now: Date, batch = 100): Promise<void> {
  await trx
    .deleteFrom('webauthn_challenges')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('webauthn_challenges')
        .select('id')
        .where('expires_at', '<=', now)
        .orderBy('expires_at')
        .limit(batch)
        .forUpdate()
        .skipLocked(),
    )
    .execute();
}

/**
 * Compare-and-set (docs/architecture.md, "The request path"): of every act presenting one
 * challenge, exactly one spends it; the others wait on the row lock, re-read it spent, and get
 * false. The purpose and, for a registration or step-up, the session must match, so a challenge
 * never serves another act.
 */
export async function spendChallenge(
  trx: Executor,
  c: { hash: string; purpose: WebAuthnPurpose; sessionId: string | null; now: Date },
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('webauthn_challenges')
      .set({ spent_at: c.now })
      .where('challenge_hash', '=', c.hash)
      .where('purpose', '=', c.purpose)
      .where('session_id', 'is not distinct from', c.sessionId)
      .where('spent_at', 'is', null)
      .where('expires_at', '>', c.now)
      .returning('id'),
  );
}

export async function insertPasskey(
  trx: Executor,
  p: {
    id: string;
    identityId: string;
    credentialId: string;
    publicKey: Uint8Array;
    signCount: number;
    transports: string[];
    backupEligible: boolean;
    backedUp: boolean;
    aaguid: string;
    label: string | null;
    now: Date;
  },
): Promise<boolean> {
  // A credential already live (on this identity or another) is not registered twice.
  return changedOne(
    trx
      .insertInto('passkeys')
      .values({
        id: p.id,
        identity_id: p.identityId,
        credential_id: p.credentialId,
        public_key: Buffer.from(p.publicKey),
        sign_count: p.signCount,
        transports: p.transports,
        backup_eligible: p.backupEligible,
        backed_up: p.backedUp,
        aaguid: p.aaguid,
        label: p.label,
        created_at: p.now,
      })
      .onConflict((oc) => oc.column('credential_id').where('removed_at', 'is', null).doNothing())
      .returning('id'),
  );
}

/** A passkey row under the domain's names. */
function selectPasskeys(trx: Executor) {
  return trx
    .selectFrom('passkeys')
    .select([
      'id',
      'identity_id as identityId',
      'credential_id as credentialId',
      'public_key as publicKey',
      'sign_count as signCount',
      'transports',
      'backup_eligible as backupEligible',
      'backed_up as backedUp',
      'label',
      'created_at as createdAt',
      'last_used_at as lastUsedAt',
      'removed_at as removedAt',
    ]);
}

/** The identity's live passkeys, oldest first (excludeCredentials, the removal rule). */
export function livePasskeys(trx: Executor, identityId: string): Promise<PasskeyRow[]> {
  return selectPasskeys(trx)
    .where('identity_id', '=', identityId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** One passkey row by id, live or removed (its events). */
export function passkeyById(trx: Executor, id: string): Promise<PasskeyRow | undefined> {
  return selectPasskeys(trx).where('id', '=', id).executeTakeFirst();
}

/** The newest row of a credential id, live or removed (a removed one is refused and recorded). */
export async function passkeyByCredential(
  trx: Executor,
  credentialId: string,
): Promise<PasskeyRow | undefined> {
  return selectPasskeys(trx)
    .where('credential_id', '=', credentialId)
    .orderBy((eb) => eb('removed_at', 'is', null), 'desc')
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * After a verified assertion, in the act's transaction (compare-and-set on the row): the counter
 * must move forward unless the passkey is backup-eligible (synced passkeys may report zero or an
 * older count) or both counts are zero (an authenticator without a counter); the backup state and
 * use time follow. False when the passkey was removed meanwhile or a concurrent use recorded the
 * same or a higher count first (a cloned authenticator).
 */
export async function recordUse(
  trx: Executor,
  u: { id: string; signCount: number; backedUp: boolean; now: Date },
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('passkeys')
      .set((eb) => ({
        sign_count: eb.fn<number>('greatest', ['sign_count', eb.val(u.signCount)]),
        backed_up: u.backedUp,
        last_used_at: u.now,
      }))
      .where('id', '=', u.id)
      .where('removed_at', 'is', null)
      .where((eb) =>
        eb.or([
          eb.ref('backup_eligible'),
          eb('sign_count', '<', u.signCount),
          eb.and([
            eb('sign_count', '=', eb.lit(0)),
            eb(eb.cast<number>(eb.val(u.signCount), 'bigint'), '=', eb.lit(0)),
          ]),
        ]),
      )
      .returning('id'),
  );
}

export async function removePasskey(
  trx: Executor,
  id: string,
  identityId: string,
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('passkeys')
      .set({ removed_at: now })
      .where('id', '=', id)
      .where('identity_id', '=', identityId)
      .where('removed_at', 'is', null)
      .returning('id'),
  );
}

/**
 * Erasure: every passkey of the identity, removed ones too, and the WebAuthn challenges bound to
 * its sessions.
 */
export async function deleteIdentityPasskeys(trx: Executor, identityId: string): Promise<void> {
  await trx
    .deleteFrom('webauthn_challenges')
    .where('session_id', 'in', (eb) =>
      eb.selectFrom('sessions').select('id').where('identity_id', '=', identityId),
    )
    .execute();
  await trx.deleteFrom('passkeys').where('identity_id', '=', identityId).execute();
}
