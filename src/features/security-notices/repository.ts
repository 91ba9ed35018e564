import type { Db, Executor } from '../../platform/db/database.js';

/**
 * Which bound a notice counts against: security changes and new sign-ins each have a window of
 * their own per identity, so a burst of one never holds back the first message of the other.
 */
export type NoticeStream = 'change' | 'sign_in';

/** A queued notice, as the dispatcher reads it. */
export interface QueuedNotice {
  id: string;
  kind: string;
  /** The session a sign-in notice is about; null for a change. */
  sessionId: string | null;
  occurredAt: Date;
  device: string | null;
  ipAddress: string | null;
  sealedDestination: string | null;
}

/** Queues one notice: a change in the transaction that makes it, a sign-in after its answer. */
export async function insertNotice(
  trx: Executor,
  row: {
    id: string;
    identityId: string;
    stream: NoticeStream;
    kind: string;
    sessionId: string | null;
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
      stream: row.stream,
      kind: row.kind,
      session_id: row.sessionId,
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
 * The compare-and-set that makes one message per window: opens a window of the stream ending at
 * `endsAt` for an identity with notices of that stream queued, unless one is open at `now`. Of two
 * instances racing, the second waits on the first's row and then finds the window open: exactly
 * one claims it.
 */
export async function claimWindow(
  trx: Executor,
  identityId: string,
  stream: NoticeStream,
  now: Date,
  endsAt: Date,
): Promise<boolean> {
  // An upsert whose update applies only to an ended window, the insert only with notices queued.
  const rows = await trx
    .insertInto('security_notice_windows')
    .columns(['identity_id', 'stream', 'ends_at'])
    .expression(
      trx
        .selectNoFrom((eb) => [
          eb.val(identityId).as('identity_id'),
          eb.val(stream).as('stream'),
          eb.val(endsAt).as('ends_at'),
        ])
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('security_notices')
              .select('identity_id')
              .where('identity_id', '=', identityId)
              .where('stream', '=', stream),
          ),
        ),
    )
    .onConflict((oc) =>
      oc
        .columns(['identity_id', 'stream'])
        .doUpdateSet((eb) => ({ ends_at: eb.ref('excluded.ends_at') }))
        .where('security_notice_windows.ends_at', '<=', now),
    )
    .returning('identity_id')
    .execute();
  return rows.length === 1;
}

/** Takes every queued notice of the identity's stream off the queue, oldest first. */
export async function takeQueued(
  trx: Executor,
  identityId: string,
  stream: NoticeStream,
): Promise<QueuedNotice[]> {
  const rows = await trx
    .deleteFrom('security_notices')
    .where('identity_id', '=', identityId)
    .where('stream', '=', stream)
    .returning(['id', 'kind', 'session_id', 'occurred_at', 'device', 'ip_address', 'sealed_destination'])
    .execute();
  return rows
    .map((r) => ({
      id: r.id,
      kind: r.kind,
      sessionId: r.session_id,
      occurredAt: new Date(r.occurred_at),
      device: r.device,
      ipAddress: r.ip_address,
      sealedDestination: r.sealed_destination,
    }))
    .sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime() || a.id.localeCompare(b.id));
}

/** Identities and streams with notices queued and no window of that stream open at `now`. */
export async function dueStreams(
  db: Db,
  now: Date,
  limit: number,
): Promise<{ identityId: string; stream: NoticeStream }[]> {
  const rows = await db
    .selectFrom('security_notices as n')
    .leftJoin('security_notice_windows as w', (join) =>
      join.onRef('w.identity_id', '=', 'n.identity_id').onRef('w.stream', '=', 'n.stream'),
    )
    .select(['n.identity_id', 'n.stream'])
    .distinct()
    .where((eb) => eb.or([eb('w.ends_at', 'is', null), eb('w.ends_at', '<=', now)]))
    .limit(limit)
    .execute();
  return rows.map((r) => ({ identityId: r.identity_id, stream: r.stream as NoticeStream }));
}

/** Ended windows with nothing of their stream queued behind them: an absent window means the same. */
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
            .whereRef('n.identity_id', '=', 'w.identity_id')
            .whereRef('n.stream', '=', 'w.stream'),
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

/** The notices queued and not yet sent, and the oldest one's instant (the health page). */
export async function queuedNoticeDepth(db: Executor): Promise<{ pending: number; oldestAt: Date | null }> {
  const r = await db
    .selectFrom('security_notices')
    .select((eb) => [
      eb.fn.countAll<number>().as('pending'),
      eb.fn.min<Date | null>('occurred_at').as('oldest'),
    ])
    .executeTakeFirstOrThrow();
  return { pending: Number(r.pending), oldestAt: r.oldest === null ? null : new Date(r.oldest) };
}
