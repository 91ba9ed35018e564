import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';

/** A live link of a provider's subject to an identity. */
export interface ProviderLink {
  id: string;
  identityId: string;
  provider: string;
  subject: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

export async function insertNonce(
  trx: Executor,
  n: { id: string; hash: string; now: Date; expiresAt: Date },
): Promise<void> {
  await trx
    .insertInto('provider_nonces')
    .values({ id: n.id, hash: n.hash, created_at: n.now, expires_at: n.expiresAt })
    .execute();
}

/**
 * Bounded clean-up run with each issuance, so an unauthenticated route cannot grow the table
 * without end. Deleting an expired nonce changes nothing: an unknown nonce is refused exactly like
 * an expired or spent one, so a replayed token stays refused. SKIP LOCKED: concurrent issuances
 * each delete rows nobody else holds, so two clean-ups never wait on (or deadlock with) each other.
 */
export async function pruneExpiredNonces(trx: Executor, now: Date, batch = 100): Promise<void> {
  await trx
    .deleteFrom('provider_nonces')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('provider_nonces')
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
 * Compare-and-set (docs/architecture.md, "The request path"): of every act racing with one nonce,
 * on any route, exactly one gets the row back; the others wait on the row lock, re-read it spent,
 * and get false.
 */
export async function spendNonce(trx: Executor, hash: string, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('provider_nonces')
      .set({ spent_at: now })
      .where('hash', '=', hash)
      .where('spent_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('id'),
  );
}

export async function findLiveLink(
  trx: Executor,
  provider: string,
  subject: string,
): Promise<ProviderLink | undefined> {
  return trx
    .selectFrom('provider_links')
    .select([
      'id',
      'identity_id as identityId',
      'provider',
      'subject',
      'created_at as createdAt',
      'last_used_at as lastUsedAt',
    ])
    .where('provider', '=', provider)
    .where('subject', '=', subject)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

/**
 * Links a subject to an identity. The partial unique index decides between concurrent first
 * visits: the loser waits for the winner's commit and gets undefined, never an error.
 */
export async function insertLink(
  trx: Executor,
  l: { id: string; identityId: string; provider: string; subject: string; now: Date },
): Promise<string | undefined> {
  const r = await trx
    .insertInto('provider_links')
    .values({
      id: l.id,
      identity_id: l.identityId,
      provider: l.provider,
      subject: l.subject,
      created_at: l.now,
    })
    .onConflict((oc) => oc.columns(['provider', 'subject']).where('removed_at', 'is', null).doNothing())
    .returning('id')
    .executeTakeFirst();
  return r?.id;
}

export async function touchLink(trx: Executor, id: string, now: Date): Promise<void> {
  await trx.updateTable('provider_links').set({ last_used_at: now }).where('id', '=', id).execute();
}

export interface LinkRow {
  id: string;
  provider: string;
}

export async function liveLinks(trx: Executor, identityId: string): Promise<LinkRow[]> {
  return trx
    .selectFrom('provider_links')
    .select(['id', 'provider'])
    .where('identity_id', '=', identityId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Compare-and-set: true when this call removed the live link (docs/architecture.md, "The request path"). */
export async function removeLink(
  trx: Executor,
  linkId: string,
  identityId: string,
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('provider_links')
      .set({ removed_at: now })
      .where('id', '=', linkId)
      .where('identity_id', '=', identityId)
      .where('removed_at', 'is', null)
      .returning('id'),
  );
}

/** Erasure: every provider link of the identity (the provider's subject is personal data). */
export async function deleteIdentityLinks(trx: Executor, identityId: string): Promise<void> {
  await trx.deleteFrom('provider_links').where('identity_id', '=', identityId).execute();
}
