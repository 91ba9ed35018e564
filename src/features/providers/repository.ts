import { sql } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';

export interface ProviderLinkRow {
  id: string;
  identity_id: string;
  provider: string;
  subject: string;
  created_at: Date;
  last_used_at: Date | null;
}

export async function insertNonce(
  trx: Executor,
  n: { id: string; hash: string; now: Date; expiresAt: Date },
): Promise<void> {
  await sql`
    INSERT INTO provider_nonces (id, hash, created_at, expires_at)
    VALUES (${n.id}, ${n.hash}, ${n.now}, ${n.expiresAt})`.execute(trx);
}

/**
 * Bounded clean-up run with each issuance, so an unauthenticated route cannot grow the table
 * without end. Deleting an expired nonce changes nothing: an unknown nonce is refused exactly like
 * an expired or spent one, so a replayed token stays refused. SKIP LOCKED: concurrent issuances
 * each delete rows nobody else holds, so two clean-ups never wait on (or deadlock with) each other.
 */
export async function pruneExpiredNonces(trx: Executor, now: Date, batch = 100): Promise<void> {
  await sql`
    DELETE FROM provider_nonces WHERE id IN (
      SELECT id FROM provider_nonces WHERE expires_at <= ${now} ORDER BY expires_at LIMIT ${batch}
      FOR UPDATE SKIP LOCKED)`.execute(trx);
}

/**
 * Compare-and-set (concurrency guide): of every act racing with one nonce, on any route, exactly
 * one gets the row back; the others wait on the row lock, re-read it spent, and get false.
 */
export function spendNonce(trx: Executor, hash: string, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE provider_nonces SET spent_at = ${now}
    WHERE hash = ${hash} AND spent_at IS NULL AND expires_at > ${now}
    RETURNING id`,
  );
}

export async function findLiveLink(
  trx: Executor,
  provider: string,
  subject: string,
): Promise<ProviderLinkRow | undefined> {
  const r = await sql<ProviderLinkRow>`
    SELECT id, identity_id, provider, subject, created_at, last_used_at FROM provider_links
    WHERE provider = ${provider} AND subject = ${subject} AND removed_at IS NULL`.execute(trx);
  return r.rows[0];
}

/**
 * Links a subject to an identity. The partial unique index decides between concurrent first
 * visits: the loser waits for the winner's commit and gets undefined, never an error.
 */
export async function insertLink(
  trx: Executor,
  l: { id: string; identityId: string; provider: string; subject: string; now: Date },
): Promise<string | undefined> {
  const r = await sql<{ id: string }>`
    INSERT INTO provider_links (id, identity_id, provider, subject, created_at)
    VALUES (${l.id}, ${l.identityId}, ${l.provider}, ${l.subject}, ${l.now})
    ON CONFLICT (provider, subject) WHERE removed_at IS NULL DO NOTHING
    RETURNING id`.execute(trx);
  return r.rows[0]?.id;
}

export async function touchLink(trx: Executor, id: string, now: Date): Promise<void> {
  await sql`UPDATE provider_links SET last_used_at = ${now} WHERE id = ${id}`.execute(trx);
}

export interface LinkRow {
  id: string;
  provider: string;
}

export async function liveLinks(trx: Executor, identityId: string): Promise<LinkRow[]> {
  const r = await sql<LinkRow>`
    SELECT id, provider FROM provider_links
    WHERE identity_id = ${identityId} AND removed_at IS NULL ORDER BY created_at, id`.execute(trx);
  return r.rows;
}

export function removeLink(trx: Executor, linkId: string, identityId: string, now: Date): Promise<boolean> {
  return changedOne(
    trx,
    sql`
    UPDATE provider_links SET removed_at = ${now}
    WHERE id = ${linkId} AND identity_id = ${identityId} AND removed_at IS NULL
    RETURNING id`,
  );
}

/** Erasure: every provider link of the identity (the provider's subject is personal data). */
export async function deleteIdentityLinks(trx: Executor, identityId: string): Promise<void> {
  await sql`DELETE FROM provider_links WHERE identity_id = ${identityId}`.execute(trx);
}
