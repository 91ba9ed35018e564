export type ChannelType = 'email' | 'phone';

export interface OutboundMessage {
  to: string;
  type: ChannelType;
  subject: string;
  text: string;
}

export interface DeliveryResult {
  status: 'DELIVERED' | 'NOT_DELIVERED';
  resendable: boolean;
}

/** pino-like logger: only the first argument (an object) and a fixed message are ever passed. */
export interface NotifyLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

/**
 * Fields that describe why a delivery failed without carrying any content: error class, error
 * codes, SMTP reply code and command name, HTTP status. Never a message text or a server reply.
 */
export type FailureInfo = Record<string, string | number>;

/** What a channel reports: the result, plus loggable failure details. */
export interface ChannelOutcome extends DeliveryResult {
  failure?: FailureInfo;
}

export const DELIVERED: ChannelOutcome = { status: 'DELIVERED', resendable: false };

export function notDelivered(resendable: boolean, failure?: FailureInfo): ChannelOutcome {
  return failure ? { status: 'NOT_DELIVERED', resendable, failure } : { status: 'NOT_DELIVERED', resendable };
}

/** Keeps a string field only when it looks like an identifier (an error code, a class name). */
export function safeToken(value: unknown): string | undefined {
  return typeof value === 'string' && /^[A-Za-z0-9_ -]{1,40}$/.test(value) ? value : undefined;
}
