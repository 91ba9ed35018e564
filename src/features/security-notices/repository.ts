import { sql } from 'kysely';
import type { Db, Executor } from '../../platform/db/database.js';

/** A queued change, as the dispatcher reads it. */
export interface QueuedNotice {
  id: string;
  kind: string;
  occurredAt: Date;
  device: string | null;
  ipAddress: string | null;
  sealedDestination: string | null;
}

/** Queues one change, in the transaction that makes it. */
export async function insertNotice(
  trx: Executor,
  row: {
    id: string;
    identityId: string;
    kind: string;
    occurredAt: Date;
    device: string | null;
    ipAddress: string | null;
    sealedDestination: string | null;
  },
): Promise<void> {
  await trx
    .insertInto('security_notices')
    .values({
      id: row.id,
      identity_id: row.identityId,
      kind: row.kind,
      occurred_at: row.occurredAt,
      device: row.device,
      ip_address: row.ipAddress,
      sealed_destination: row.sealedDestination,
    })
    .execute();
}

/** A removed identifier's type and value (the row stays, marked removed). */
export async function identifierById(
  trx: Executor,
  identityId: string,
  id: string,
): Promise<{ type: string; value: string } | undefined> {
  return trx
    .selectFrom('identifiers')
    .select(['type', 'value'])
    .where('id', '=', id)
    .where('identity_id', '=', identityId)
    .executeTakeFirst();
}

/**
 * The compare-and-set that makes one message per window: opens a window ending at `endsAt` for
 * an identity with queued changes, unless one is open at `now`. Of two instances racing, the
 * second waits on the first's row and then finds the window open: exactly one claims it.
 */
export async function claimWindow(
  trx: Executor,
  identityId: string,
  now: Date,
  endsAt: Date,
): Promise<boolean> {
  const { rows } = await sql<{ identity_id: string }>`
    INSERT INTO security_notice_windows (identity_id, ends_at)
    SELECT ${identityId}, ${endsAt}
    WHERE EXISTS (SELECT 1 FROM security_notices WHERE identity_id = ${identityId})
    ON CONFLICT (identity_id) DO UPDATE SET ends_at = excluded.ends_at
      WHERE security_notice_windows.ends_at <= ${now}
    RETURNING identity_id`.execute(trx);
  return rows.length === 1;
}

/** Takes every queued change of the identity off the queue, oldest first. */
export async function takeQueued(trx: Executor, identityId: string): Promise<QueuedNotice[]> {
  const rows = await trx
    .deleteFrom('security_notices')
    .where('identity_id', '=', identityId)
    .returning(['id', 'kind', 'occurred_at', 'device', 'ip_address', 'sealed_destination'])
    .execute();
  return rows
    .map((r) => ({
      id: r.id,
      kind: r.kind,
      occurredAt: new Date(r.occurred_at),
      device: r.device,
      ipAddress: r.ip_address,
      sealedDestination: r.sealed_destination,
    }))
    .sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime() || a.id.localeCompare(b.id));
}

/** Identities with queued changes and no window open at `now`. */
export async function dueIdentities(db: Db, now: Date, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('security_notices as n')
    .leftJoin('security_notice_windows as w', 'w.identity_id', 'n.identity_id')
    .select('n.identity_id')
    .distinct()
    .where((eb) => eb.or([eb('w.ends_at', 'is', null), eb('w.ends_at', '<=', now)]))
    .limit(limit)
    .execute();
  return rows.map((r) => r.identity_id);
}

/** Ended windows with nothing queued behind them: an absent window means the same. */
export async function sweepWindows(db: Db, now: Date): Promise<number> {
  const rows = await db
    .deleteFrom('security_notice_windows as w')
    .where('w.ends_at', '<=', now)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('security_notices as n')
            .select('n.id')
            .whereRef('n.identity_id', '=', 'w.identity_id'),
        ),
      ),
    )
    .returning('w.identity_id')
    .execute();
  return rows.length;
}

/** An erased identity keeps nothing queued: no address, device or network of it stays here. */
export async function forgetIdentity(trx: Executor, identityId: string): Promise<void> {
  await trx.deleteFrom('security_notices').where('identity_id', '=', identityId).execute();
  await trx.deleteFrom('security_notice_windows').where('identity_id', '=', identityId).execute();
}
