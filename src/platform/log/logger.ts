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
 * The logger handed to Fastify (`loggerInstance`). Fastify asks it for a child logger on every
 * request, bound to the request's id, and this one answers with itself: a child per request, even
 * a lazy one made only when it logged, cost the floor 0.35 to 0.7 µs per answer
 * (docs/performance.md, "Seventh round"), and almost no request logs anything but its access line,
 * which names the request. The service's own request-scoped lines name it themselves (`reqId`,
 * where pino puts a binding: `requestFields`); what Fastify itself logs through a request's logger
 * (a reply sent twice, say) goes out without it. A child with options of its own (a route's log
 * level) is a real one. Through Fastify's default child-logger factory, not a
 * `childLoggerFactory` option: Fastify checks a custom factory's every result for the seven logger
 * methods, a filter with a closure per request (about 0.9% of a health answer's CPU in a profile).
 */
class FastifyLogger {
  constructor(private readonly real: Logger) {}
  get level(): string {
    return this.real.level;
  }
  set level(level: string) {
    this.real.level = level;
  }
  isLevelEnabled(level: string): boolean {
    return this.real.isLevelEnabled(level);
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
  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): FastifyLogger {
    if (options?.level === undefined && options?.serializers === undefined) return this;
    return new FastifyLogger(this.real.child(bindings, options));
  }
}

export function fastifyLogger(logger: Logger): FastifyBaseLogger {
  return new FastifyLogger(logger) as unknown as FastifyBaseLogger;
}

/** The fields that name a request on a line of its own, first, as a bound request id would be. */
export function requestFields(request: { id: string }, fields: Record<string, unknown> = {}) {
  return { reqId: request.id, ...fields };
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
 * Where access lines are encoded: a byte buffer, room made before each line. The LineBatcher is
 * one; a text stream (tests hand their own) is adapted to it by TextLines.
 */
export interface ByteLines {
  /** Makes room for `max` more bytes and answers the buffer to write them into, from `used` on. */
  room(max: number): Buffer;
  /** Where the next line starts in the buffer `room` answered. */
  readonly used: number;
  /** The line written since `room` ends at `end` (exclusive). */
  commit(end: number): void;
}

/** A text stream as ByteLines: each line decoded and written on its own. */
class TextLines implements ByteLines {
  #buffer = Buffer.alloc(512);
  readonly used = 0;
  constructor(private readonly out: { write(chunk: string): unknown }) {}
  room(max: number): Buffer {
    if (this.#buffer.length < max) this.#buffer = Buffer.alloc(max);
    return this.#buffer;
  }
  commit(end: number): void {
    this.out.write(this.#buffer.toString('utf8', 0, end));
  }
}

const bytesOf = (text: string) => Buffer.from(text, 'utf8');
const LINE_HEAD = bytesOf('{"level":30,"time":');
const MS_KEY = bytesOf(',"ms":');
const IP_KEY = bytesOf(',"ip":');
const LINE_TAIL = bytesOf(',"msg":"request"}\n');
/** The most bytes an integer or a duration takes as text here. */
const NUMBER_MAX = 32;

/**
 * The access line's writer. Its fields are fixed and hold no secret by construction, so it needs
 * neither pino's redaction (wildcard paths checked on every line: about 10 µs of the 15 a line
 * first took) nor its general serialiser: the line is written by hand, in pino's own format (the
 * same keys in the same order as `logger.info({...}, 'request')` would write, so one parser reads
 * every line), as bytes straight into the buffer the next write to stdout takes. No string is made
 * for a line: strings held until a write, then joined and encoded, cost more than the line itself
 * (docs/performance.md, "Seventh round").
 */
export class AccessLog {
  readonly #out: ByteLines;
  readonly #level: string;
  readonly #bindings: string;
  /** `,"pid":…,"hostname":…` and the listener's bindings, then `,"reqId":`, encoded once. */
  readonly #afterTime: Buffer;
  /**
   * `,"method":…,"route":…,"status":` by route pattern and method, encoded once: a bounded set (the
   * routes' patterns, null for an answer no route gave, and the methods Node's parser admits).
   */
  readonly #middles = new Map<string | null, Map<string, Buffer>>();
  /** The millisecond of the last line and its digits: many lines share one. */
  #time = -1;
  #timeText = '';
  constructor(out: ByteLines | { write(chunk: string): unknown }, level: string, bindings = '') {
    this.#out = 'room' in out ? out : new TextLines(out);
    this.#level = level;
    this.#bindings = bindings;
    // pino's base bindings, then the listener's own.
    this.#afterTime = bytesOf(
      `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}${bindings},"reqId":`,
    );
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
  /**
   * One request's line (info). The strings are escaped as JSON; the numbers are written as
   * JavaScript writes them (`ms` as given: the caller rounds it).
   */
  line(reqId: string, method: string, route: string | null, status: number, ms: number, ip: string): void {
    const middle = this.#middle(route, method);
    const now = Date.now();
    if (now !== this.#time) {
      this.#time = now;
      this.#timeText = String(now);
    }
    const max =
      LINE_HEAD.length +
      NUMBER_MAX +
      this.#afterTime.length +
      textMax(reqId) +
      middle.length +
      NUMBER_MAX +
      MS_KEY.length +
      NUMBER_MAX +
      IP_KEY.length +
      textMax(ip) +
      LINE_TAIL.length;
    const out = this.#out;
    const buffer = out.room(max);
    let at = out.used;
    at = putBytes(buffer, at, LINE_HEAD);
    at = putAscii(buffer, at, this.#timeText);
    at = putBytes(buffer, at, this.#afterTime);
    at = putText(buffer, at, reqId);
    at = putBytes(buffer, at, middle);
    at = putNumber(buffer, at, status);
    at = putBytes(buffer, at, MS_KEY);
    at = putNumber(buffer, at, ms);
    at = putBytes(buffer, at, IP_KEY);
    at = putText(buffer, at, ip);
    at = putBytes(buffer, at, LINE_TAIL);
    out.commit(at);
  }
  #middle(route: string | null, method: string): Buffer {
    let byMethod = this.#middles.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.#middles.set(route, byMethod);
    }
    let middle = byMethod.get(method);
    if (middle === undefined) {
      middle = bytesOf(`,"method":${JSON.stringify(method)},"route":${JSON.stringify(route)},"status":`);
      byMethod.set(method, middle);
    }
    return middle;
  }
}

/** The most bytes `text` takes as a JSON string: `\uXXXX` for each unit at worst, and the quotes. */
const textMax = (text: string) => text.length * 6 + 2;

function putBytes(buffer: Buffer, at: number, bytes: Buffer): number {
  buffer.set(bytes, at);
  return at + bytes.length;
}

/** `text`, known to be ASCII, byte for byte. */
function putAscii(buffer: Buffer, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) buffer[at + i] = text.charCodeAt(i);
  return at + text.length;
}

/**
 * `text` as a JSON string. Printable ASCII other than `"` and `\` stands for itself, which is what
 * a request id and an address are: checked here and copied byte for byte, without a call into
 * JSON.stringify (a call into the engine's runtime per field, about a quarter of the line's cost);
 * anything else is escaped by JSON.stringify.
 */
function putText(buffer: Buffer, at: number, text: string): number {
  buffer[at] = 0x22;
  const start = at + 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
      return at + buffer.write(JSON.stringify(text), at, 'utf8');
    }
    buffer[start + i] = c;
  }
  buffer[start + text.length] = 0x22;
  return start + text.length + 1;
}

/**
 * `n` as `String(n)` writes it. Without a string for the common cases: a small whole number (a
 * status) and a duration in hundredths (what the access hook passes); anything else through String.
 */
function putNumber(buffer: Buffer, at: number, n: number): number {
  if (n >= 0 && n < 0x3fffffff && (n | 0) === n) return putDigits(buffer, at, n);
  const hundredths = Math.round(n * 100);
  if (n > 0 && hundredths < 0x3fffffff && hundredths / 100 === n) {
    // A decimal of at most two places is its own shortest form, which is what String writes.
    let end = putDigits(buffer, at, (hundredths / 100) | 0);
    const fraction = hundredths % 100;
    if (fraction !== 0) {
      buffer[end++] = 0x2e;
      buffer[end++] = 0x30 + ((fraction / 10) | 0);
      if (fraction % 10 !== 0) buffer[end++] = 0x30 + (fraction % 10);
    }
    return end;
  }
  return putAscii(buffer, at, String(n));
}

/** A non-negative small integer's decimal digits. */
function putDigits(buffer: Buffer, at: number, n: number): number {
  let digits = 1;
  for (let rest = n; rest >= 10; rest = (rest / 10) | 0) digits++;
  let i = at + digits;
  let rest = n;
  do {
    buffer[--i] = 0x30 + (rest % 10);
    rest = (rest / 10) | 0;
  } while (rest > 0);
  return at + digits;
}

/** How long a busy log may hold its lines, and how much it gathers before it writes at once. */
export const LINE_BATCH = { holdMs: 10, bytes: 64 * 1024 };
/** A batch's buffer: LINE_BATCH.bytes and room for the line that reaches them. */
const BATCH_CAPACITY = LINE_BATCH.bytes + 4 * 1024;

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
 * Gathers log lines, as bytes, into fewer writes. Each write to the asynchronous destination hands
 * a buffer to another thread and back, which cost 2.3 to 5 µs of CPU per line when every request's
 * line went on its own (docs/performance.md); gathered, that cost is shared by up to 64 KiB of
 * lines. Lines are encoded into the batch's buffer as they come (an access line by AccessLog,
 * pino's as UTF-8), and each write hands that buffer over and starts a new one: no line is held
 * as a string, joined or encoded again. A quiet log is not held: a line with no write in the last
 * LINE_BATCH.holdMs goes out as soon as the current event-loop turn ends, as it did unbatched. A
 * busy log writes every LINE_BATCH.bytes, or LINE_BATCH.holdMs after its last write, whichever
 * comes first; a write cancels the flush that was scheduled for the lines it took, so the lines
 * after it wait for a batch of their own. Order is kept: every line of the process, access lines
 * and pino's alike, passes here. flush() hands everything over at once (shutdown, a fatal error).
 */
export class LineBatcher implements ByteLines {
  #buffer = Buffer.allocUnsafeSlow(BATCH_CAPACITY);
  #used = 0;
  /** Cancels the scheduled flush; undefined while none is scheduled. */
  #cancelScheduled: (() => void) | undefined;
  #lastWrite = Number.NEGATIVE_INFINITY;
  readonly #flushNow = () => {
    this.flush();
  };
  constructor(
    private readonly out: { write(chunk: Buffer): unknown },
    private readonly timing: BatchTiming = realTiming,
  ) {}

  get used(): number {
    return this.#used;
  }

  room(max: number): Buffer {
    if (this.#used + max > this.#buffer.length) {
      this.flush();
      // A line longer than a batch (a large error's stack, say) gets a buffer of its own.
      if (max > this.#buffer.length) this.#buffer = Buffer.allocUnsafeSlow(max);
    }
    return this.#buffer;
  }

  commit(end: number): void {
    this.#used = end;
    if (end >= LINE_BATCH.bytes) {
      this.flush();
    } else if (this.#cancelScheduled === undefined) {
      const since = this.timing.now() - this.#lastWrite;
      this.#cancelScheduled =
        since >= LINE_BATCH.holdMs
          ? this.timing.soon(this.#flushNow)
          : this.timing.later(this.#flushNow, LINE_BATCH.holdMs - since);
    }
  }

  /** A line as text (pino's stream interface): encoded as UTF-8 into the batch. */
  write(line: string): boolean {
    const buffer = this.room(Buffer.byteLength(line));
    this.commit(this.#used + buffer.write(line, this.#used, 'utf8'));
    return true;
  }

  /**
   * Hands the gathered lines to the destination in one write, and cancels the flush scheduled for
   * them. `done` (pino's `logger.flush(cb)` passes one) is called once they are handed over.
   */
  flush(done?: () => void): void {
    this.#cancelScheduled?.();
    this.#cancelScheduled = undefined;
    if (this.#used > 0) {
      const chunk = this.#buffer.subarray(0, this.#used);
      // The destination holds the chunk until its write is done: the next lines go to a new buffer.
      this.#buffer = Buffer.allocUnsafeSlow(BATCH_CAPACITY);
      this.#used = 0;
      this.#lastWrite = this.timing.now();
      this.out.write(chunk);
    }
    done?.();
  }
}

/**
 * The service's logger. To stdout through an asynchronous destination (SonicBoom, taking bytes)
 * behind a LineBatcher: a log line never waits for the terminal or the pipe on the request's path;
 * lines are gathered into writes of up to 64 KiB, and while a write is in flight the destination
 * holds the next ones, so at rest no line waits and under load many lines cost one write. flush()
 * writes what is gathered and held synchronously, at shutdown and on a fatal error. Tests hand in
 * their own stream, written line by line.
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
  const destination = pino.destination({ dest: 1, sync: false, contentMode: 'buffer' });
  // In buffer mode SonicBoom's write takes a Buffer; its types know only the text mode.
  const lines = new LineBatcher(destination as unknown as { write(chunk: Buffer): unknown });
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
        requestFields(request, { method: request.method, route: request.routeOptions.url ?? null }),
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
