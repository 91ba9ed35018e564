import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import { readHead } from './repository.js';

/**
 * Writes the audit head (sequence, seal and the head's own seal) to the log. Kept outside the
 * database (the log shipped elsewhere), these lines anchor the chain: a copy of the database
 * restored to an earlier head, which the key alone cannot tell, fails
 * `npm run audit:verify -- --expect-head <anchor>` with the last anchor logged. The seals are HMAC
 * outputs, not secrets.
 */
export async function logAuditHead(
  db: Db,
  log: { info(details: object, message: string): void },
): Promise<void> {
  const head = await readHead(db);
  if (!head) return;
  const seq = Number(head.seq);
  // `anchor` is what `npm run audit:verify -- --expect-head` takes.
  log.info(
    { auditHead: { seq, seal: head.seal, headSeal: head.headSeal, anchor: `${seq}:${head.seal}` } },
    'audit head',
  );
}

/** Logs the head every `seconds` while the app runs (0: never), and once at start-up. */
export function installAuditHeadLog(app: FastifyInstance, db: Db, seconds: number): void {
  if (seconds === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    logAuditHead(db, app.log).catch((err: unknown) => {
      app.log.warn({ errClass: (err as Error)?.name }, 'audit head could not be read');
    });
  };
  app.addHook('onReady', async () => {
    tick();
    timer = setInterval(tick, seconds * 1000);
    timer.unref();
  });
  app.addHook('onClose', async () => {
    if (timer) clearInterval(timer);
  });
}
