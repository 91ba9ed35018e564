import {
  type ChannelOutcome,
  DELIVERED,
  type FailureInfo,
  notDelivered,
  type OutboundMessage,
  safeToken,
} from './types.js';

/** Failures (fetch's `cause.code`) that prove the request never reached the gateway. */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_NODATA']);

export interface SmsChannelOptions {
  url: string;
  timeoutMs: number;
}

export interface SmsChannel {
  send(message: OutboundMessage): Promise<ChannelOutcome>;
}

/**
 * SMS gateway webhook: POST `{ "to", "text" }` as JSON; any 2xx is a delivery.
 * A 4xx/5xx answer or a connection that was never established is resendable; a timeout or a
 * connection lost after the request went out is not.
 */
export function createSmsChannel(opts: SmsChannelOptions): SmsChannel {
  return {
    async send(message) {
      const signal = AbortSignal.timeout(opts.timeoutMs);
      let response: Response;
      try {
        response = await fetch(opts.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ to: message.to, text: message.text }),
          redirect: 'manual',
          signal,
        });
      } catch (err) {
        return classifyFetchError(err);
      }
      // the answer is not needed; release the connection
      await response.body?.cancel().catch(() => {});
      const { status } = response;
      if (status >= 200 && status < 300) return DELIVERED;
      const failure: FailureInfo = { channel: 'sms', errorClass: 'HttpStatus', httpStatus: status };
      return notDelivered(status >= 400 && status < 600, failure);
    },
  };
}

export function classifyFetchError(err: unknown): ChannelOutcome {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { name?: unknown; cause?: unknown };
  const failure: FailureInfo = { channel: 'sms', errorClass: safeToken(e.name) ?? 'Error' };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') {
    return notDelivered(false, failure);
  }
  const codes = causeCodes(e.cause);
  if (codes.length > 0) failure.code = codes[0] as string;
  const resendable = codes.length > 0 && codes.every((c) => NEVER_CONNECTED.has(c));
  return notDelivered(resendable, failure);
}

/** The system error codes under fetch's `cause`, including those of an AggregateError. */
function causeCodes(cause: unknown): string[] {
  if (typeof cause !== 'object' || cause === null) return [];
  const c = cause as { code?: unknown; errors?: unknown };
  const own = safeToken(c.code);
  if (own) return [own];
  if (Array.isArray(c.errors)) {
    return c.errors.flatMap((inner) => {
      const code = safeToken((inner as { code?: unknown } | null)?.code);
      return code ? [code] : [];
    });
  }
  return [];
}
