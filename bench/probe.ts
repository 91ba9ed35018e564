/**
 * An open-loop prober for the health answer's latency under load. One GET is due every
 * 1000/rate ms whatever the answers before it did, and each latency is counted from the moment its
 * request was due, so a stall of the service delays every request due during it, as it would a
 * monitor's or a person's, and nothing is left out (no coordinated omission). A late timer in this
 * process counts against the service too: the figure can only overstate.
 *
 * Why not autocannon's `overallRate`: it sends each connection's share of a second's requests back
 * to back at the start of the second, and corrects coordinated omission with an expected interval
 * of `Math.ceil(1 / rate)`, rate being requests per second per connection, so 1 ms where 20 ms is
 * meant: one answer of L ms is recorded as L answers, and a round's "p99" is within a few ms of its
 * slowest answer (docs/decisions.md, "The sign-in door landed; the health figure measured
 * open-loop").
 */
import http from 'node:http';

export interface ProbeResult {
  /** Answers received (any status). */
  count: number;
  /** Answers not 200, and requests that failed. */
  errors: number;
  p50: number;
  p99: number;
  max: number;
}

/** `sockets` keep-alive connections; a request due while all are busy waits for one, and that wait counts. */
export async function probe(
  url: string,
  opts: { seconds: number; rate: number; sockets?: number },
): Promise<ProbeResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.sockets ?? 4 });
  const latencies: number[] = [];
  let errors = 0;
  const interval = 1000 / opts.rate;
  const total = Math.round(opts.seconds * opts.rate);
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      new Promise<void>((done) => {
        const req = http.get(url, { agent }, (res) => {
          if (res.statusCode !== 200) errors++;
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - due);
            done();
          });
        });
        req.on('error', () => {
          errors++;
          done();
        });
      }),
    );
  }
  await Promise.all(pending);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] ?? Number.NaN;
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    count: latencies.length,
    errors,
    p50: round(at(0.5)),
    p99: round(at(0.99)),
    max: round(latencies[latencies.length - 1] ?? Number.NaN),
  };
}
