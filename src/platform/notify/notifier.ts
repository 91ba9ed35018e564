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

type Purpose = 'sign_up' | 'sign_in_method' | 'password_recovery' | 'step_up' | 'sign_in';

const PURPOSES: Record<Purpose, { subject: string; lead: string }> = {
  sign_up: { subject: 'Your sign-up code', lead: 'Your sign-up verification code is' },
  sign_in_method: {
    subject: 'Your verification code',
    lead: 'Your code to confirm this new sign-in method is',
  },
  password_recovery: { subject: 'Your password recovery code', lead: 'Your password recovery code is' },
  step_up: { subject: 'Your confirmation code', lead: 'Your code to confirm this sensitive action is' },
  sign_in: { subject: 'Your sign-in code', lead: 'Your code to sign in is' },
};

/** Builds the text of a verification message: the code as its own whitespace-separated token. */
export function verificationText(
  purpose: Purpose,
  code: string,
  expiresInMinutes: number,
): { subject: string; text: string } {
  const wording = PURPOSES[purpose];
  if (!wording) throw new TypeError('unknown verification purpose');
  if (code.length === 0 || /\s/.test(code)) throw new TypeError('a verification code is one non-empty token');
  if (!Number.isFinite(expiresInMinutes)) throw new TypeError('expiresInMinutes must be a finite number');
  const minutes = Math.max(1, Math.ceil(expiresInMinutes));
  const unit = minutes === 1 ? 'minute' : 'minutes';
  return {
    subject: wording.subject,
    text: `${wording.lead}\n\n${code}\n\nIt expires in ${minutes} ${unit}. If you did not ask for it, ignore this message.`,
  };
}

type Notice = 'sign_up_existing';

const NOTICES: Record<Notice, { subject: string; text: string }> = {
  // A sign-up by code for an address whose owner may not sign in by code: no code, only the facts.
  sign_up_existing: {
    subject: 'You already have an account',
    text:
      'Someone asked to create an account with this address, but it already has one. ' +
      'Sign in with your password, or recover it if you have forgotten it. ' +
      'If you did not ask for this, ignore this message.',
  },
};

/** The text of a notice that carries no code (a sign-up by code for an existing account). */
export function noticeText(notice: Notice): { subject: string; text: string } {
  const wording = NOTICES[notice];
  if (!wording) throw new TypeError('unknown notice');
  return { ...wording };
}
