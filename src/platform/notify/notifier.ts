import { maskRecipient } from './mask.js';
import { appendToOutbox, outboxPath } from './outbox.js';
import { createSmsChannel, type SmsChannel } from './sms.js';
import { createSmtpChannel, type SmtpChannel } from './smtp.js';
import {
  type ChannelOutcome,
  type ChannelType,
  type DeliveryResult,
  type NotifyLog,
  notDelivered,
  type OutboundMessage,
} from './types.js';

export { maskRecipient } from './mask.js';
export type { ChannelType, DeliveryResult, OutboundMessage } from './types.js';

export interface NotifierOptions {
  production: boolean;
  /** The outbox is `<dataDir>/outbox.jsonl` (the directory is created if missing). */
  dataDir: string;
  smtpUrl?: string;
  mailFrom: string;
  smsWebhookUrl?: string;
  /** Default 10000: connection, greeting and socket timeouts for SMTP, total timeout for the webhook. */
  timeoutMs?: number;
  log?: NotifyLog;
}

export interface Notifier {
  /** Synchronous: whether a message of this type can be handed to a channel at all. */
  canDeliver(type: ChannelType): boolean;
  /** Never throws. */
  send(message: OutboundMessage): Promise<DeliveryResult>;
  close(): Promise<void>;
}

export const DEFAULT_TIMEOUT_MS = 10_000;

const silentLog: NotifyLog = { info() {}, warn() {} };

export function createNotifier(opts: NotifierOptions): Notifier {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const log = opts.log ?? silentLog;
  const smtp: SmtpChannel | undefined = opts.smtpUrl
    ? createSmtpChannel({ url: opts.smtpUrl, from: opts.mailFrom, timeoutMs })
    : undefined;
  const sms: SmsChannel | undefined = opts.smsWebhookUrl
    ? createSmsChannel({ url: opts.smsWebhookUrl, timeoutMs })
    : undefined;
  // the development outbox stands in for a missing channel, never in production
  const outboxAllowed = !opts.production;

  function channelFor(type: ChannelType): { send(m: OutboundMessage): Promise<ChannelOutcome> } | undefined {
    if (type === 'email') return smtp;
    if (type === 'phone') return sms;
    return undefined;
  }

  function canDeliver(type: ChannelType): boolean {
    if (type !== 'email' && type !== 'phone') return false;
    return channelFor(type) !== undefined || outboxAllowed;
  }

  async function deliver(message: OutboundMessage): Promise<ChannelOutcome> {
    if (message.type !== 'email' && message.type !== 'phone') {
      return notDelivered(true, { errorClass: 'UnknownChannelType' });
    }
    const channel = channelFor(message.type);
    if (channel) return channel.send(message);
    if (outboxAllowed) {
      const outcome = await appendToOutbox(opts.dataDir, message);
      if (outcome.status === 'DELIVERED') {
        log.info(
          { type: message.type, to: maskRecipient(message.to), outbox: outboxPath(opts.dataDir) },
          'message written to the development outbox',
        );
      }
      return outcome;
    }
    return notDelivered(true, { errorClass: 'NoChannel' });
  }

  return {
    canDeliver,
    async send(message) {
      let outcome: ChannelOutcome;
      try {
        outcome = await deliver(message);
      } catch {
        // not expected: every channel reports its failures as a result
        outcome = notDelivered(false, { errorClass: 'UnexpectedError' });
      }
      const { status, resendable, failure } = outcome;
      // only the type, a masked recipient, the outcome and error codes: never the text
      const entry: Record<string, unknown> = {
        type: message?.type,
        to: maskRecipient(String(message?.to ?? '')),
        status,
        resendable,
      };
      try {
        if (status === 'DELIVERED') {
          log.info(entry, 'message delivered');
        } else {
          log.warn({ ...entry, error: failure }, 'message not delivered');
        }
      } catch {
        // a failing logger must not turn a delivery into an exception
      }
      return { status, resendable };
    },
    async close() {
      await smtp?.close();
    },
  };
}
