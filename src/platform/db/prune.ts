import type { FastifyInstance } from 'fastify';

/** A delete of rows that can no longer change an answer, run now and then while the app runs. */
export interface Prune {
  /** Seconds between two runs. */
  everySeconds: number;
  /** Run once when the app is ready (awaited before it answers), not only after the first interval. */
  atStart: boolean;
  run(): Promise<unknown>;
  /** A failed run is told here and tried again at the next tick; it never stops the timer. */
  failed(err: unknown): void;
}

/**
 * Runs a prune with the app's lifecycle: from `onReady` (once at once when `atStart`), every
 * `everySeconds` on a timer that never keeps the process alive, stopped by `onClose`. Every
 * instance may run it: a prune only ever deletes dead rows. What it deletes is the caller's
 * (the OpenID Provider's sweep, the rate limits' sweep).
 */
export function installPrune(app: FastifyInstance, prune: Prune): void {
  let timer: NodeJS.Timeout | undefined;
  const tick = () => prune.run().catch((err: unknown) => prune.failed(err));
  app.addHook('onReady', async () => {
    if (prune.atStart) await tick();
    timer = setInterval(tick, prune.everySeconds * 1000);
    timer.unref();
  });
  app.addHook('onClose', async () => {
    if (timer) clearInterval(timer);
  });
}
