import { createHash } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';

/** What the range check needs: the API's base address and how long to wait for it. */
export interface BreachRangeOptions {
  /** BREACHED_PASSWORDS_RANGE_URL: the base; `GET <base>/range/<5 hex>` is asked. */
  url: string;
  /** BREACHED_PASSWORDS_TIMEOUT_MS: the whole request, headers and body. */
  timeoutMs: number;
  log: Pick<FastifyBaseLogger, 'warn'>;
  /** The HTTP client (tests keep the global one and point `url` at a loopback stub). */
  fetch?: typeof fetch;
}

/** Whether a password appears in a breach corpus; false when it cannot be told. */
export interface BreachCheck {
  isBreached(password: string): Promise<boolean>;
}

/** A range answer is about 800 to 1,000 lines of 40 characters; anything far larger is not one. */
const MAX_RANGE_BYTES = 1 << 20;
const PREFIX_LENGTH = 5;

/**
 * The k-anonymity range protocol of Have I Been Pwned's Pwned Passwords (and of the mirrors that
 * serve it): the SHA-1 of the password in upper-case hex, of which only the first five characters
 * leave the service; the answer lists every known hash with that prefix as `SUFFIX:COUNT` lines,
 * compared here. `Add-Padding: true` asks for padding lines (count 0) so that the size of the answer
 * does not tell an observer the prefix; they are ignored. A timeout, a network error, a status other
 * than 200 or an oversized answer lets the password through and is logged without the password,
 * its hash or its prefix (docs/security.md, "Breached passwords").
 */
export class BreachRange implements BreachCheck {
  readonly #base: string;
  constructor(private readonly options: BreachRangeOptions) {
    this.#base = options.url.replace(/\/+$/, '');
  }

  async isBreached(password: string): Promise<boolean> {
    const hash = createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
    const prefix = hash.slice(0, PREFIX_LENGTH);
    const suffix = hash.slice(PREFIX_LENGTH);
    const started = performance.now();
    let body: string;
    try {
      const res = await (this.options.fetch ?? fetch)(`${this.#base}/range/${prefix}`, {
        headers: { 'add-padding': 'true', accept: 'text/plain' },
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      if (res.status !== 200) {
        await res.body?.cancel().catch(() => undefined);
        return this.#letThrough('status', started, res.status);
      }
      const declared = Number(res.headers.get('content-length') ?? 0);
      if (declared > MAX_RANGE_BYTES) {
        await res.body?.cancel().catch(() => undefined);
        return this.#letThrough('too_large', started);
      }
      body = await res.text();
      if (body.length > MAX_RANGE_BYTES) return this.#letThrough('too_large', started);
    } catch (err) {
      const name = (err as Error)?.name;
      return this.#letThrough(
        name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'error',
        started,
      );
    }
    for (const line of body.split('\n')) {
      const colon = line.indexOf(':');
      if (colon !== suffix.length) continue;
      if (line.slice(0, colon).toUpperCase() !== suffix) continue;
      // Padding lines carry a count of 0: made up to hide the answer's size, never a breach.
      const count = Number.parseInt(line.slice(colon + 1).trim(), 10);
      return Number.isFinite(count) && count > 0;
    }
    return false;
  }

  #letThrough(reason: 'timeout' | 'error' | 'status' | 'too_large', started: number, status?: number): false {
    this.options.log.warn(
      { breachCheck: reason, ...(status ? { status } : {}), ms: Math.round(performance.now() - started) },
      'breached-password range check failed: the password was let through',
    );
    return false;
  }
}

/** No range API configured: only the bundled list (src/shared/password-policy.ts) is consulted. */
export const noBreachRange: BreachCheck = { isBreached: async () => false };
