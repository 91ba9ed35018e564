/**
 * What the service reports about itself as it works: the events an operator counts. Features and
 * platform modules call these; with metrics off (no METRICS_PORT) they are the silent ones below,
 * so reporting costs a call to an empty function.
 */
export interface Signals {
  /** A request refused by a limit, before its secret was looked at: `route:<pattern>`, `guesses:<kind>`, `messages`. */
  refused(rule: string): void;
  /** The identity-wide lock tripped. */
  lockTripped(): void;
  /** Sessions ended, by the reason stored with them. */
  sessionsRevoked(reason: string, count: number): void;
  /** An out-of-band message handed to its channel, or not. */
  delivered(channel: string, outcome: string): void;
  /** Milliseconds an Argon2id operation waited for its turn. */
  argon2Waited(ms: number): void;
  /**
   * A synchronous hook called: its outcome (allowed, refused, timeout, failed) and its duration;
   * without a duration, a count only (`dropped_claim`: a reserved claim a hook tried to set).
   */
  hookCalled(hook: string, outcome: string, seconds?: number): void;
  /**
   * A webhook attempt recorded: `delivered`, `retry` (failed, another attempt is due) or `dead`;
   * the milliseconds the receiver took to answer (null when it did not answer).
   */
  webhookAttempted(outcome: 'delivered' | 'retry' | 'dead', latencyMs: number | null): void;
}

export const silentSignals: Signals = {
  refused() {},
  lockTripped() {},
  sessionsRevoked() {},
  delivered() {},
  argon2Waited() {},
  hookCalled() {},
  webhookAttempted() {},
};
