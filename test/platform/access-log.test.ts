import { hostname } from 'node:os';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessLog, fastifyLogger, LINE_BATCH, LineBatcher } from '../../src/platform/log/logger.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPerson, type Person, signIn } from '../helpers/identities.js';

/**
 * Issue 12 item 1: one access line per request (request id, method, route pattern, status,
 * duration, client address), and nothing a client sent in headers, bodies or the query string.
 */

let t: TestApp;
let person: Person;

beforeAll(async () => {
  t = await createTestApp();
  person = await createPerson(t.ctx);
});
afterAll(async () => {
  await t.close();
});

interface Line {
  msg: string;
  reqId?: string;
  method?: string;
  route?: string | null;
  status?: number;
  ms?: number;
  ip?: string;
  level: number;
}

function linesSince(offset: number): Line[] {
  return t
    .logs()
    .slice(offset)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);
}

describe('access log', () => {
  it('writes exactly one line per request, with the route pattern and never the values sent', async () => {
    const grant = await signIn(t.app, person);
    const start = t.logs().length;
    const cursorSecret = 'c2VjcmV0LWN1cnNvci12YWx1ZQ';
    const history = await t.app.inject({
      method: 'GET',
      url: `/api/v1/sign-ins/history?limit=5&cursor=${cursorSecret}`,
      headers: { authorization: `Bearer ${grant.accessToken}`, 'user-agent': 'ua-marker-4711' },
    });
    const refused = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: person.email, password: 'wrong-password-marker' },
    });
    expect(refused.statusCode).toBe(401);
    const lines = linesSince(start);
    const access = lines.filter((l) => l.msg === 'request');
    expect(access).toHaveLength(2);
    expect(access[0]).toMatchObject({
      reqId: history.headers['x-request-id'],
      method: 'GET',
      route: '/api/v1/sign-ins/history',
      status: history.statusCode,
      ip: '127.0.0.1',
    });
    expect(access[1]).toMatchObject({
      reqId: refused.headers['x-request-id'],
      method: 'POST',
      route: '/api/v1/sign-ins',
      status: 401,
    });
    for (const line of access) expect(line.ms).toBeGreaterThanOrEqual(0);
    // At the default level (info) the arrival line is not written: one line, not Fastify's two.
    expect(lines.filter((l) => l.msg === 'incoming request')).toEqual([]);
    const text = t.logs().slice(start);
    for (const secret of [
      grant.accessToken,
      cursorSecret,
      'ua-marker-4711',
      'wrong-password-marker',
      person.email,
    ]) {
      expect(text).not.toContain(secret);
    }
  });

  it('names a request no route matched without its path', async () => {
    const start = t.logs().length;
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/no-such-route/person@example.com' });
    expect(res.statusCode).toBe(404);
    const [line] = linesSince(start).filter((l) => l.msg === 'request');
    expect(line).toMatchObject({ method: 'GET', route: null, status: 404 });
    expect(t.logs().slice(start)).not.toContain('person@example.com');
  });
});

describe('the access line written by hand (AccessLog)', () => {
  it("is pino's line: the same keys in the same order, strings escaped, the listener named", () => {
    const written: string[] = [];
    const out = { write: (chunk: string) => written.push(chunk) };
    const log = new AccessLog(out, 'info');
    log.line('id-1', 'GET', '/a/"quoted"\\path', 200, 1.25, '::1');
    log.forListener('admin').line('id-2', 'POST', null, 404, 0, '127.0.0.1');
    expect(written).toHaveLength(2);
    for (const line of written) expect(line.endsWith('}\n')).toBe(true);
    const [first, second] = written.map((l) => JSON.parse(l));
    expect(Object.keys(first)).toEqual([
      'level',
      'time',
      'pid',
      'hostname',
      'reqId',
      'method',
      'route',
      'status',
      'ms',
      'ip',
      'msg',
    ]);
    expect(first).toMatchObject({
      level: 30,
      pid: process.pid,
      hostname: hostname(),
      reqId: 'id-1',
      route: '/a/"quoted"\\path',
      status: 200,
      ms: 1.25,
      ip: '::1',
      msg: 'request',
    });
    expect(Math.abs(first.time - Date.now())).toBeLessThan(5000);
    expect(second).toMatchObject({ listener: 'admin', method: 'POST', route: null, status: 404 });
  });

  it('keeps each line its own when the route and method parts are reused across lines', () => {
    const written: string[] = [];
    const log = new AccessLog({ write: (chunk: string) => written.push(chunk) }, 'info');
    const answered: [string, string | null, number][] = [
      ['GET', '/a', 200],
      ['POST', '/a', 201],
      ['GET', '/b/:id', 404],
      ['GET', '/a', 304],
      ['POST', null, 404],
      ['GET', null, 400],
    ];
    answered.forEach(([method, route, status], i) => {
      log.line(`id-"${i}"`, method, route, status, i, '10.0.0.1');
    });
    expect(written.map((l) => JSON.parse(l))).toEqual(
      answered.map(([method, route, status], i) =>
        expect.objectContaining({ reqId: `id-"${i}"`, method, route, status, ms: i, ip: '10.0.0.1' }),
      ),
    );
  });

  it('quotes strings exactly as JSON.stringify does, in every string field', () => {
    const samples = [
      '',
      'a971d39d-9d24-4a21-9f7f-0ef0deea0d71',
      '::ffff:127.0.0.1',
      '/a/"quoted"\\path',
      'say "hi"',
      'back\\slash',
      'tab\there',
      'line\nbreak',
      '\u0000\u001f\u007f',
      'caf\u00e9',
      'emoji \u{1f510}',
      'lone \ud800 surrogate',
      '</script>',
    ];
    const written: string[] = [];
    const log = new AccessLog({ write: (chunk: string) => written.push(chunk) }, 'info');
    for (const text of samples) {
      log.line(text, text, text, 200, 1, text);
      const q = JSON.stringify(text);
      expect(written.at(-1)).toContain(`,"reqId":${q},"method":${q},"route":${q},"status":200,`);
      expect(written.at(-1)).toContain(`,"ip":${q},"msg":"request"}`);
    }
  });

  it('writes the line as bytes into a batch, strings as JSON.stringify and numbers as String write them', () => {
    const viaText: string[] = [];
    const viaBytes: string[] = [];
    const text = new AccessLog({ write: (chunk: string) => viaText.push(chunk) }, 'info');
    const batcher = new LineBatcher({ write: (chunk: Buffer) => viaBytes.push(chunk.toString('utf8')) });
    const bytes = new AccessLog(batcher, 'info').forListener('admin');
    const textAdmin = text.forListener('admin');
    const durations = [
      0,
      0.01,
      0.1,
      0.5,
      0.52,
      1.25,
      9.99,
      12.3,
      100,
      1234.56,
      2 ** 31,
      1.005,
      1e-7,
      0.125,
      -1,
    ];
    const cases: [string, string, string | null, number, number, string][] = durations.map((ms, i) => [
      `id-${i}`,
      'GET',
      '/a/:id',
      200 + i,
      ms,
      '127.0.0.1',
    ]);
    cases.push(['id "quoted" \u00e9', 'PATCH', '/caf\u00e9/"x"', 1_000_000, 3.5, 'caf\u00e9\u0001']);
    cases.push(['', 'GET', null, 0, 0.2, '']);
    cases.push(['back\\slash', 'GET', '/tab\there', 404, 7, 'a\\b']);
    for (const c of cases) {
      bytes.line(...c);
      textAdmin.line(...c);
    }
    batcher.flush();
    const lines = viaBytes.join('').split('\n').filter(Boolean);
    expect(lines).toHaveLength(cases.length);
    lines.forEach((line, i) => {
      const [reqId, method, route, status, ms, ip] = cases[i] as (typeof cases)[number];
      // The line as JSON.stringify and String would write it, the time aside.
      const q = (s: string) => JSON.stringify(s);
      const expected =
        `{"level":30,"pid":${process.pid},"hostname":${q(hostname())},"listener":"admin","reqId":${q(reqId)},` +
        `"method":${q(method)},"route":${route === null ? 'null' : q(route)},"status":${status},"ms":${ms},` +
        `"ip":${q(ip)},"msg":"request"}`;
      expect(line.replace(/"time":\d+,/, '')).toBe(expected);
      expect(viaText[i]?.replace(/"time":\d+,/, '')).toBe(`${expected}\n`);
      expect(line).toContain(`"status":${String(status)},"ms":${String(ms)},"ip":`);
      expect(JSON.parse(line)).toMatchObject({ reqId, method, route, status, ms, ip, listener: 'admin' });
    });
  });

  it('follows the level: info and finer write, warn and silent do not', () => {
    const out = { write: () => 0 };
    expect(new AccessLog(out, 'info').isLevelEnabled('info')).toBe(true);
    expect(new AccessLog(out, 'info').isLevelEnabled('debug')).toBe(false);
    expect(new AccessLog(out, 'debug').isLevelEnabled('debug')).toBe(true);
    expect(new AccessLog(out, 'warn').isLevelEnabled('info')).toBe(false);
    expect(new AccessLog(out, 'silent').isLevelEnabled('info')).toBe(false);
  });
});

describe('the logger handed to Fastify (fastifyLogger)', () => {
  it("answers a request's child with itself, and a child with a level of its own with a real one", () => {
    const lines: string[] = [];
    const root = fastifyLogger(pino({ level: 'info' }, { write: (l: string) => lines.push(l) }));
    // What Fastify asks for on every request: the request id bound, no options.
    expect(root.child({ reqId: 'r-1' }, {})).toBe(root);
    const quiet = root.child({ reqId: 'r-2' }, { level: 'error' });
    expect(quiet).not.toBe(root);
    quiet.info('not written');
    quiet.error('written');
    root.info({ reqId: 'r-3' }, 'own');
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ reqId: 'r-2', msg: 'written' }),
      expect.objectContaining({ reqId: 'r-3', msg: 'own' }),
    ]);
  });
});

describe('the line batcher in front of stdout (LineBatcher)', () => {
  /** The batcher's clock and schedulers, driven by the test: nothing waits on real time. */
  function harness() {
    const written: string[] = [];
    /** The buffers handed over, as they are now (a later line must not have changed one). */
    const chunks: Buffer[] = [];
    const pending: { fn: () => void; ms?: number }[] = [];
    let now = 1_000;
    const batcher = new LineBatcher(
      {
        write: (chunk: Buffer) => {
          chunks.push(chunk);
          written.push(chunk.toString('utf8'));
        },
      },
      {
        now: () => now,
        soon: (fn) => schedule({ fn }),
        later: (fn, ms) => schedule({ fn, ms }),
      },
    );
    function schedule(entry: { fn: () => void; ms?: number }): () => void {
      pending.push(entry);
      return () => {
        const at = pending.indexOf(entry);
        if (at >= 0) pending.splice(at, 1);
      };
    }
    const runScheduled = () => {
      for (const { fn } of pending.splice(0)) fn();
    };
    const advance = (ms: number) => {
      now += ms;
    };
    return { batcher, written, chunks, pending, runScheduled, advance };
  }

  it('lets a line of a quiet log out as soon as the current turn ends, not later', () => {
    const h = harness();
    h.batcher.write('a\n');
    expect(h.written).toEqual([]);
    expect(h.pending).toHaveLength(1);
    expect(h.pending[0]?.ms).toBeUndefined();
    h.runScheduled();
    expect(h.written).toEqual(['a\n']);
  });

  it('gathers the lines of a busy log into one write, at most holdMs after the last write', () => {
    const h = harness();
    h.batcher.write('a\n');
    h.runScheduled();
    h.advance(3);
    h.batcher.write('b\n');
    h.batcher.write('c\n');
    h.batcher.write('d\n');
    // One timer for the three, due holdMs after the last write (3 ms of it already gone).
    expect(h.pending).toEqual([{ fn: expect.any(Function), ms: LINE_BATCH.holdMs - 3 }]);
    expect(h.written).toEqual(['a\n']);
    h.runScheduled();
    expect(h.written).toEqual(['a\n', 'b\nc\nd\n']);
  });

  it('writes at once when LINE_BATCH.bytes are gathered, and cancels the flush scheduled for them', () => {
    const h = harness();
    const line = `${'x'.repeat(1023)}\n`;
    const count = LINE_BATCH.bytes / line.length;
    for (let i = 0; i < count; i++) h.batcher.write(line);
    expect(h.written).toEqual([line.repeat(count)]);
    expect(h.pending).toEqual([]);
    h.runScheduled();
    expect(h.written).toHaveLength(1);
  });

  it('the lines after a write by size wait for a batch of their own, holdMs after that write', () => {
    const h = harness();
    const line = `${'x'.repeat(1023)}\n`;
    h.batcher.write('a\n');
    h.runScheduled();
    h.advance(2);
    // A busy log: a flush is due holdMs after the write of 'a', then the size bound is reached.
    for (let i = 0; i < LINE_BATCH.bytes / line.length; i++) h.batcher.write(line);
    expect(h.written).toHaveLength(2);
    h.advance(1);
    h.batcher.write('b\n');
    // One flush scheduled, the new one: holdMs after the size write, not the old one's due time.
    expect(h.pending).toEqual([{ fn: expect.any(Function), ms: LINE_BATCH.holdMs - 1 }]);
    h.runScheduled();
    expect(h.written).toHaveLength(3);
    expect(h.written[2]).toBe('b\n');
  });

  it('flush() hands over whatever is gathered, in order, and keeps order with the lines after it', () => {
    const h = harness();
    h.batcher.write('1\n');
    h.batcher.write('2\n');
    h.batcher.flush();
    expect(h.written).toEqual(['1\n2\n']);
    h.batcher.flush();
    expect(h.written).toEqual(['1\n2\n']);
    h.batcher.write('3\n');
    h.runScheduled();
    expect(h.written.join('')).toBe('1\n2\n3\n');
  });

  it("serves as pino's stream: logger.flush(cb) hands the lines over and calls back", async () => {
    const h = harness();
    const logger = pino({ level: 'info' }, h.batcher);
    logger.info({ n: 1 }, 'one');
    logger.info({ n: 2 }, 'two');
    expect(h.written).toEqual([]);
    await new Promise<void>((resolve, reject) => logger.flush((err) => (err ? reject(err) : resolve())));
    expect(h.written).toHaveLength(1);
    expect(
      h.written[0]
        ?.split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).msg),
    ).toEqual(['one', 'two']);
  });
  it('encodes text lines as UTF-8 and hands each batch over in a buffer no later line touches', () => {
    const h = harness();
    h.batcher.write('caf\u00e9 \u{1f510}\n');
    h.batcher.flush();
    const first = Buffer.from(h.chunks[0] as Buffer);
    h.batcher.write('z'.repeat(200) + '\n');
    new AccessLog(h.batcher, 'info').line('id', 'GET', '/a', 200, 1, '::1');
    h.batcher.flush();
    expect(h.written[0]).toBe('caf\u00e9 \u{1f510}\n');
    expect(Buffer.compare(h.chunks[0] as Buffer, first)).toBe(0);
    expect(h.chunks[0]?.length).toBe(Buffer.byteLength('caf\u00e9 \u{1f510}\n'));
    expect(h.written[1]?.startsWith(`${'z'.repeat(200)}\n{"level":30`)).toBe(true);
  });

  it('gives a line longer than a batch a write of its own, after the lines before it', () => {
    const h = harness();
    const long = `${'\u00e9'.repeat(LINE_BATCH.bytes)}\n`;
    h.batcher.write('before\n');
    h.batcher.write(long);
    h.batcher.write('after\n');
    h.batcher.flush();
    expect(h.written.join('')).toBe(`before\n${long}after\n`);
    expect(h.written[0]).toBe('before\n');
  });
});
