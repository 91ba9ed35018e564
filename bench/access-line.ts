/**
 * What one access line costs (docs/performance.md, "Against bare Fastify"): the same fields written
 * through pino, as the service first wrote them; by hand in pino's format (AccessLog in
 * src/platform/log/logger.ts), each line its own write, as the service wrote them until the third
 * round; by hand as bytes into the LineBatcher's buffers, handed to a destination that takes bytes,
 * as the service writes them now; and by hand into a batch handed to nothing (the encoding alone).
 * All to /dev/null through the same kind of asynchronous destination, in bursts of BURST lines per
 * event-loop turn (default 5) as a loaded server writes them. Process CPU time per line (every
 * thread), three rounds each, alternating. `npx tsx bench/access-line.ts`.
 */
import pino from 'pino';
import { AccessLog, LineBatcher } from '../src/platform/log/logger.js';

const LINES = 200_000;
const BURST = Number(process.env.BURST ?? 5);
const destination = pino.destination({ dest: '/dev/null', sync: false });
const viaPino = pino({ level: 'info' }, destination);
const byHand = new AccessLog(destination, 'info');
const batchedDestination = pino.destination({ dest: '/dev/null', sync: false, contentMode: 'buffer' });
// In buffer mode SonicBoom's write takes a Buffer; its types know only the text mode.
const batched = new AccessLog(
  new LineBatcher(batchedDestination as unknown as { write(chunk: Buffer): unknown }),
  'info',
);
const formatOnly = new AccessLog(new LineBatcher({ write: () => true }), 'info');

/** The same request's line through one AccessLog. */
const lineThrough = (log: AccessLog) => (i: number) =>
  log.line(`0b0e6c0e-6e8e-4c3e-9d9e-${i}`, 'GET', '/health/live', 200, 0.52, '127.0.0.1');

const ways: Record<string, (i: number) => void> = {
  pino: (i) =>
    viaPino.info(
      {
        reqId: `0b0e6c0e-6e8e-4c3e-9d9e-${i}`,
        method: 'GET',
        route: '/health/live',
        status: 200,
        ms: 0.52,
        ip: '127.0.0.1',
      },
      'request',
    ),
  'by hand (AccessLog), a write per line': lineThrough(byHand),
  'by hand, batched (LineBatcher)': lineThrough(batched),
  'by hand, not written (the encoding alone)': lineThrough(formatOnly),
};

async function round(write: (i: number) => void): Promise<number> {
  const before = process.cpuUsage();
  for (let b = 0; b < LINES / BURST; b++) {
    for (let i = 0; i < BURST; i++) write(b * BURST + i);
    await new Promise((r) => setImmediate(r));
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / LINES;
}

const results: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
for (let r = 0; r < 4; r++) {
  for (const [name, write] of Object.entries(ways)) {
    const micros = await round(write);
    // The first round warms the JIT up and is not counted.
    if (r > 0) results[name].push(micros);
  }
}
for (const [name, micros] of Object.entries(results)) {
  process.stdout.write(`${name}: ${micros.map((m) => m.toFixed(2)).join(', ')} µs CPU per line\n`);
}
destination.flushSync();
batchedDestination.flushSync();
