import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Resolves a host name to every address it has (injected by tests). */
export type Resolve = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolve: Resolve = (host) => dnsLookup(host, { all: true, verbatim: true });

/** The most of an answer's body read: nothing of it is kept, only its status and headers. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** Loopback, private, link-local (the cloud metadata address included), or any other special use. */
export function publicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

export interface SendOptions {
  /** false: https only, and only to public addresses after resolution (WEBHOOK_PRIVATE_ADDRESSES). */
  privateAddresses: boolean;
  resolve: Resolve;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Keep the answer's body (up to the cap) in `body`: a synchronous hook's answer is read. */
  readBody?: boolean;
}

export type SendOutcome =
  | {
      kind: 'answered';
      status: number;
      retryAfter: string | null;
      /** With `readBody`: the answer's text, or null when it was not read whole (over the cap, or cut off). */
      body?: string | null;
    }
  | { kind: 'refused'; reason: 'scheme' | 'address' }
  | { kind: 'failed'; reason: 'timeout' | 'network' | 'aborted' | 'internal' };

class AddressRefused extends Error {}

/**
 * Connections kept open between attempts, one pool per rule (a socket opened under the permissive
 * rule is never lent to a call under the strict one). A kept socket stays on the address its
 * lookup checked when it opened, so reusing it cannot reach a new answer of the DNS. Idle sockets
 * close after 4 s, before a receiver's usual 5 s keep-alive ends them under a request.
 */
const POOL = { keepAlive: true, maxSockets: 64, timeout: 4_000 } as const;
const agents = {
  strict: { http: new http.Agent(POOL), https: new https.Agent(POOL) },
  private: { http: new http.Agent(POOL), https: new https.Agent(POOL) },
};

/**
 * One POST, no redirect followed, at most `timeoutMs` in all. Under the production rule the URL
 * must be https and every address its host resolves to now must be public; the connection goes
 * to one of those very addresses (the check is the lookup the socket uses), so a second answer of
 * the DNS cannot point it elsewhere.
 */
export async function postOnce(
  target: string,
  headers: Record<string, string>,
  body: string,
  opts: SendOptions,
): Promise<SendOutcome> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return { kind: 'refused', reason: 'scheme' };
  }
  if (url.protocol !== 'https:' && !(opts.privateAddresses && url.protocol === 'http:')) {
    return { kind: 'refused', reason: 'scheme' };
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!opts.privateAddresses && isIP(host) && !publicAddress(host))
    return { kind: 'refused', reason: 'address' };
  const lookup: LookupFunction = (hostname, options, callback) => {
    opts.resolve(hostname).then(
      (all) => {
        if (all.length === 0) return callback(new Error('no address'), '', 4);
        if (!opts.privateAddresses && !all.every((a) => publicAddress(a.address)))
          return callback(new AddressRefused('address refused'), '', 4);
        const wanted =
          options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all;
        const usable = wanted.length > 0 ? wanted : all;
        if (options.all) return (callback as (e: null, a: typeof all) => void)(null, usable);
        callback(null, usable[0].address, usable[0].family);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 4),
    );
  };
  const signals = [AbortSignal.timeout(opts.timeoutMs), ...(opts.signal ? [opts.signal] : [])];
  const signal = AbortSignal.any(signals);
  const client = url.protocol === 'https:' ? https : http;
  const pool = agents[opts.privateAddresses ? 'private' : 'strict'];
  const agent = url.protocol === 'https:' ? pool.https : pool.http;
  return new Promise<SendOutcome>((resolve) => {
    let settled = false;
    const done = (o: SendOutcome) => {
      if (settled) return;
      settled = true;
      resolve(o);
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
        lookup,
        signal,
        agent,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : null;
        let read = 0;
        const chunks: Buffer[] = [];
        const answered = (body: string | null): SendOutcome =>
          opts.readBody
            ? { kind: 'answered', status, retryAfter, body }
            : { kind: 'answered', status, retryAfter };
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) {
            res.destroy();
            done(answered(null));
            return;
          }
          if (opts.readBody) chunks.push(chunk);
        });
        res.on('end', () => done(answered(Buffer.concat(chunks).toString('utf8'))));
        res.on('error', () => done(answered(null)));
      },
    );
    req.on('error', (err) => {
      if (err instanceof AddressRefused || (err as { cause?: unknown }).cause instanceof AddressRefused) {
        return done({ kind: 'refused', reason: 'address' });
      }
      if (opts.signal?.aborted) return done({ kind: 'failed', reason: 'aborted' });
      if (signal.aborted) return done({ kind: 'failed', reason: 'timeout' });
      done({ kind: 'failed', reason: 'network' });
    });
    req.end(body);
  });
}
