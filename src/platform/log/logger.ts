import { hostname } from 'node:os';
import type { Writable } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { routePatternOf } from '../http/route-pattern.js';

// Secrets can only reach a log line through headers or bodies; neither is logged, and these paths
// are censored in case a future log call includes them.
const REDACT = [
  'req.headers.authorization',
  'req.headers["x-elevation-token"]',
  'req.headers.cookie',
  'err.detail',
  // PGlite's query errors carry the bound values (sealed secrets, labels, addresses).
  'err.params',
  'err.cause.params',
  'password',
  'code',
  'token',
  '*.password',
  '*.newPassword',
  '*.currentPassword',
  '*.code',
  '*.refreshToken',
  '*.accessToken',
  '*.idToken',
];

/**
 * A request's logger (Fastify's `request.log`), made only if the request logs something. Fastify
 * builds a child logger for every request; with pino that copies the bindings and the redaction
 * set-up each time, although almost no request logs anything but its access line, which has its
 * own logger. The child is made, with the request id bound, on the first call.
 */
class LazyRequestLogger {
  #real: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: pino.Bindings,
    private readonly options: pino.ChildLoggerOptions,
  ) {}
  private get real(): Logger {
    this.#real ??= this.parent.child(this.bindings, this.options);
    return this.#real;
  }
  get level(): string {
    return this.#real?.level ?? this.options.level ?? this.parent.level;
  }
  set level(level: string) {
    this.real.level = level;
  }
  isLevelEnabled(level: string): boolean {
    return (this.#real ?? this.parent).isLevelEnabled(level);
  }
  fatal(...args: Parameters<Logger['fatal']>): void {
    this.real.fatal(...args);
  }
  error(...args: Parameters<Logger['error']>): void {
    this.real.error(...args);
  }
  warn(...args: Parameters<Logger['warn']>): void {
    this.real.warn(...args);
  }
  info(...args: Parameters<Logger['info']>): void {
    this.real.info(...args);
  }
  debug(...args: Parameters<Logger['debug']>): void {
    this.real.debug(...args);
  }
  trace(...args: Parameters<Logger['trace']>): void {
    this.real.trace(...args);
  }
  silent(): void {}
  /** A child is lazy too: Fastify makes each request's logger with this (below). */
  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): LazyRequestLogger {
    return new LazyRequestLogger(this.real, bindings, options ?? {});
  }
}

/**
 * The logger handed to Fastify (`loggerInstance`). Fastify makes every request's logger with its
 * own `child()`, which is lazy here. Through Fastify's default child-logger factory, not a
 * `childLoggerFactory` option: Fastify checks a custom factory's every result for the seven logger
 * methods, a filter with a closure per request (about 0.9% of a health answer's CPU in a profile).
 */
export function lazyLogger(logger: Logger): FastifyBaseLogger {
  return new LazyRequestLogger(logger, {}, {}) as unknown as FastifyBaseLogger;
}

export interface ServiceLogger {
  logger: Logger;
  /** The access lines (installAccessLog), on the same destination and level as `logger`. */
  access: AccessLog;
  /**
   * Writes out whatever is buffered, synchronously: on a fatal error, or when a shutdown runs out
   * of time. Lines of a write still in flight on the destination's thread can come out after the
   * ones this writes.
   */
  flush(): void;
  /**
   * Writes out everything, in order, and resolves once it is written: the end of a graceful
   * shutdown. The logger writes nothing more after it.
   */
  drain(): Promise<void>;
}

/**
 * The access line's writer. Its fields are fixed and hold no secret by construction, so it needs
 * neither pino's redaction (wildcard paths checked on every line: about 10 µs of the 15 a line
 * first took) nor its general serialiser: the line is written by hand, in pino's own format (the
 * same keys in the same order as `logger.info({...}, 'request')` would write, so one parser reads
 * every line), straight into the logger's destination, which gathers the lines that arrive while a
 * write is in flight into the next one. docs/performance.md has the measurements.
 */
export class AccessLog {
  readonly #out: { write(chunk: string): unknown };
  readonly #level: string;
  readonly #bindings: string;
  readonly #prefix: string;
  /**
   * `,"method":…,"route":…,"status":` by route pattern and method, made once: a bounded set (the
   * routes' patterns, null for an answer no route gave, and the methods Node's parser admits).
   */
  readonly #middles = new Map<string | null, Map<string, string>>();
  constructor(out: { write(chunk: string): unknown }, level: string, bindings = '') {
    this.#out = out;
    this.#level = level;
    this.#bindings = bindings;
    // pino's base bindings, then the listener's own.
    this.#prefix = `"pid":${process.pid},"hostname":${JSON.stringify(hostname())}${bindings}`;
  }
  /** The same writer for another listener: its lines also name it (`"listener":"admin"`). */
  forListener(listener: string): AccessLog {
    return new AccessLog(this.#out, this.#level, `${this.#bindings},"listener":${JSON.stringify(listener)}`);
  }
  /** Whether lines at `level` are written at the configured level (silent writes none). */
  isLevelEnabled(level: 'info' | 'debug'): boolean {
    const configured = pino.levels.values[this.#level];
    return configured !== undefined && pino.levels.values[level] >= configured;
  }
  /** One request's line (info). The strings are escaped as JSON; the numbers are numbers. */
  line(reqId: string, method: string, route: string | null, status: number, ms: number, ip: string): void {
    let byMethod = this.#middles.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.#middles.set(route, byMethod);
    }
    let middle = byMethod.get(method);
    if (middle === undefined) {
      middle = `,"method":${jsonText(method)},"route":${route === null ? 'null' : jsonText(route)},"status":`;
      byMethod.set(method, middle);
    }
    this.#out.write(
      `{"level":30,"time":${Date.now()},${this.#prefix},"reqId":${jsonText(reqId)}${middle}${status},"ms":${ms},"ip":${jsonText(ip)},"msg":"request"}\n`,
    );
  }
}

/**
 * `text` as a JSON string. Printable ASCII other than `"` and `\` stands for itself, which is what
 * a request id and an address are: checked here and quoted, without a call into JSON.stringify
 * (a call into the engine's runtime per field, about a quarter of the line's cost); anything else
 * is escaped by JSON.stringify.
 */
export function jsonText(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return JSON.stringify(text);
  }
  return `"${text}"`;
}

/** How long a busy log may hold its lines, and how much it gathers before it writes at once. */
export const LINE_BATCH = { holdMs: 10, bytes: 16 * 1024 };

/** The batcher's clock and schedulers; each scheduler answers the function that cancels it. */
interface BatchTiming {
  now(): number;
  /** Runs `fn` once the current event-loop turn is over. */
  soon(fn: () => void): () => void;
  /** Runs `fn` after `ms` milliseconds. */
  later(fn: () => void, ms: number): () => void;
}

const realTiming: BatchTiming = {
  now: () => performance.now(),
  soon: (fn) => {
    const immediate = setImmediate(fn);
    return () => clearImmediate(immediate);
  },
  later: (fn, ms) => {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};

/**
 * Gathers log lines into fewer writes. Each write to the asynchronous destination hands a buffer to
 * another thread and back, which cost 2.3 to 5 µs of CPU per line when every request's line went
 * on its own (docs/performance.md); gathered, that cost is shared by up to 16 KiB of lines. A quiet log
 * is not held: a line with no write in the last LINE_BATCH.holdMs goes out as soon as the current
 * event-loop turn ends, as it did unbatched. A busy log writes every LINE_BATCH.bytes, or
 * LINE_BATCH.holdMs after its last write, whichever comes first; a write cancels the flush that was
 * scheduled for the lines it took, so the lines after it wait for a batch of their own. Order is
 * kept: every line of the process, access lines and pino's alike, passes here. flush() hands
 * everything over at once (shutdown, a fatal error).
 */
export class LineBatcher {
  #lines: string[] = [];
  #bytes = 0;
  /** Cancels the scheduled flush; undefined while none is scheduled. */
  #cancelScheduled: (() => void) | undefined;
  #lastWrite = Number.NEGATIVE_INFINITY;
  readonly #flushNow = () => {
    this.flush();
  };
  constructor(
    private readonly out: { write(chunk: string): unknown },
    private readonly timing: BatchTiming = realTiming,
  ) {}

  write(line: string): boolean {
    this.#lines.push(line);
    this.#bytes += line.length;
    if (this.#bytes >= LINE_BATCH.bytes) {
      this.flush();
    } else if (this.#cancelScheduled === undefined) {
      const since = this.timing.now() - this.#lastWrite;
      this.#cancelScheduled =
        since >= LINE_BATCH.holdMs
          ? this.timing.soon(this.#flushNow)
          : this.timing.later(this.#flushNow, LINE_BATCH.holdMs - since);
    }
    return true;
  }

  /**
   * Hands the gathered lines to the destination in one write, and cancels the flush scheduled for
   * them. `done` (pino's `logger.flush(cb)` passes one) is called once they are handed over.
   */
  flush(done?: () => void): void {
    this.#cancelScheduled?.();
    this.#cancelScheduled = undefined;
    if (this.#lines.length > 0) {
      const chunk = this.#lines.join('');
      this.#lines = [];
      this.#bytes = 0;
      this.#lastWrite = this.timing.now();
      this.out.write(chunk);
    }
    done?.();
  }
}

/**
 * The service's logger. To stdout through an asynchronous destination (SonicBoom) behind a
 * LineBatcher: a log line never waits for the terminal or the pipe on the request's path; lines
 * are gathered into writes of up to 16 KiB, and while a write is in flight the destination buffers
 * the next ones, so at rest no line waits and under load many lines cost one write. flush() writes
 * what is gathered and buffered synchronously, at shutdown and on a fatal error. Tests hand in their
 * own stream, written line by line.
 */
export function createLogger(level: string, stream?: Writable): ServiceLogger {
  const options = { level, redact: { paths: REDACT, censor: '[redacted]' } };
  if (stream) {
    return {
      logger: pino(options, stream),
      access: new AccessLog(stream, level),
      flush: () => {},
      drain: async () => {},
    };
  }
  const destination = pino.destination({ dest: 1, sync: false });
  const lines = new LineBatcher(destination);
  return {
    logger: pino(options, lines),
    access: new AccessLog(lines, level),
    flush: () => {
      try {
        lines.flush();
        destination.flushSync();
      } catch {
        // Not ready yet (nothing was ever written), already drained, or stdout is gone: nothing
        // more can be done.
      }
    },
    drain: () =>
      new Promise<void>((resolve) => {
        lines.flush();
        // Ended, the destination writes what it holds behind the write in flight, then closes
        // (stdout itself stays open). A synchronous flush here wrote its lines before those of the
        // write in flight: "stopped" came out before "shutting down" in about one shutdown in three.
        destination.once('close', () => resolve());
        destination.once('error', () => resolve());
        destination.end();
      }),
  };
}

/**
 * One access line per request, when its answer has gone out: request id (on every line of the
 * request), method, route pattern, status, duration and client address. Never headers, bodies or
 * the query string, which carry credentials and personal data. The request's arrival is a debug
 * line, whose hook is installed only when the level is debug or finer.
 */
export function installAccessLog(app: FastifyInstance, access: AccessLog): void {
  if (access.isLevelEnabled('debug')) {
    app.addHook('onRequest', (request, _reply, done) => {
      request.log.debug(
        { method: request.method, route: request.routeOptions.url ?? null },
        'incoming request',
      );
      done();
    });
  }
  if (!access.isLevelEnabled('info')) return;
  app.addHook('onResponse', (request, reply, done) => {
    access.line(
      request.id,
      request.method,
      routePatternOf(request) ?? null,
      reply.statusCode,
      Math.round(reply.elapsedTime * 100) / 100,
      request.ip,
    );
    done();
  });
}
