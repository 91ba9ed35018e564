import { integer, section, text } from './schema.js';

/** What an operator tunes to run it: the shutdown wait, the audit anchor, delivery, metrics. */
export const operations = section({
  variables: {
    SHUTDOWN_TIMEOUT_MS: integer(10000, 0, 600000, {
      description: 'how long SIGTERM waits for in-flight requests before exiting 1',
    }),
    AUDIT_HEAD_LOG_SECONDS: integer(3600, 0, 86400, {
      description:
        'how often the audit head (sequence, seal, head seal and the `anchor` that `audit:verify --expect-head` takes) is written to the log, to anchor the chain outside the database; also once at start-up; `0` never',
    }),
    NOTIFY_TIMEOUT_MS: integer(10000, 100, 120000, {
      description: 'SMTP connection/greeting/socket timeout and webhook total timeout',
    }),
    METRICS_PORT: integer(0, 0, 65535, {
      description:
        "port of a separate listener serving Prometheus text at `GET /metrics` (see [operations](operations.md#metrics)); never served on the API's port; `0` off (every metric call is then a no-op)",
      shown: '`0` (off)',
    }),
    // Loopback by default, like ADMIN_HOST: the metrics name routes, rates and refusals, which are for
    // the operator, not for whoever reaches HOST.
    METRICS_HOST: text('127.0.0.1', {
      description:
        'address the metrics listener binds; keep it private (set it to reach the metrics from a scraper on another host)',
    }),
  },
  map: (e) => ({
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    /** How often the audit head is written to the log, in seconds (0: never). */
    auditHeadLogSeconds: e.AUDIT_HEAD_LOG_SECONDS,
    /** Out-of-band delivery timeout (SMTP connection, greeting and socket; SMS webhook total). */
    notifyTimeoutMs: e.NOTIFY_TIMEOUT_MS,
    /** The Prometheus listener (GET /metrics), apart from the API; port 0: off. */
    metrics: { host: e.METRICS_HOST, port: e.METRICS_PORT },
  }),
});
