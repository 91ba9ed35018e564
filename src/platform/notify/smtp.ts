import nodemailer from 'nodemailer';
import {
  type ChannelOutcome,
  DELIVERED,
  type FailureInfo,
  notDelivered,
  type OutboundMessage,
  safeToken,
} from './types.js';

export interface SmtpChannelOptions {
  url: string;
  from: string;
  timeoutMs: number;
}

export interface SmtpChannel {
  send(message: OutboundMessage): Promise<ChannelOutcome>;
  close(): Promise<void>;
}

/** The fields nodemailer attaches to its errors (NodemailerError), read defensively. */
interface SmtpErrorFields {
  name?: unknown;
  code?: unknown;
  originalCode?: unknown;
  errno?: unknown;
  syscall?: unknown;
  responseCode?: unknown;
  command?: unknown;
  timeoutType?: unknown;
  cause?: unknown;
}

/** System error codes that prove no TCP session was ever established. */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_NODATA']);
/** Connect-time failures that only prove it when they happened while connecting. */
const CONNECT_SYSCALL_FAILURES = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);
/** Commands answered before the message data is sent. */
const ENVELOPE_COMMANDS = new Set(['MAIL FROM', 'RCPT TO', 'DATA']);
/** Session set-up steps (and sends refused locally): a failure there comes before the envelope. */
const SETUP_COMMANDS = new Set(['EHLO', 'HELO', 'LHLO', 'STARTTLS', 'API']);

/**
 * Decides whether a failed SMTP send proves the message never left (resendable) from the fields
 * nodemailer sets on its errors. Anything that could have happened after the server received the
 * message data (the reply to the final '.', a timeout, a dropped connection) is not resendable.
 */
export function classifySmtpError(err: unknown): ChannelOutcome {
  const e = (typeof err === 'object' && err !== null ? err : {}) as SmtpErrorFields;
  const code = safeToken(e.code);
  const originalCode = safeToken(e.originalCode);
  const command = safeToken(e.command);
  const responseCode = typeof e.responseCode === 'number' ? e.responseCode : undefined;
  const timeoutType = safeToken(e.timeoutType);

  const failure: FailureInfo = { channel: 'smtp', errorClass: safeToken(e.name) ?? 'Error' };
  if (code) failure.code = code;
  if (originalCode) failure.originalCode = originalCode;
  if (responseCode !== undefined) failure.responseCode = responseCode;
  if (command) failure.command = command;
  if (timeoutType) failure.timeoutType = timeoutType;

  return notDelivered(neverLeft(e, code, originalCode, command, responseCode), failure);
}

function neverLeft(
  e: SmtpErrorFields,
  code: string | undefined,
  originalCode: string | undefined,
  command: string | undefined,
  responseCode: number | undefined,
): boolean {
  // every timeout is ambiguous: the server may have the data and not have answered yet
  if (code === 'ETIMEDOUT' || originalCode === 'ETIMEDOUT') return false;

  const systemCodes = [originalCode, code, safeToken((e.cause as { code?: unknown } | undefined)?.code)];
  if (systemCodes.some((c) => c !== undefined && NEVER_CONNECTED.has(c))) return true;
  if (
    e.syscall === 'connect' &&
    systemCodes.some((c) => c !== undefined && CONNECT_SYSCALL_FAILURES.has(c))
  ) {
    return true;
  }

  switch (code) {
    case 'EDNS':
      return true;
    case 'EENVELOPE':
      // a refusal of MAIL FROM / RCPT TO / DATA, or an envelope nodemailer refused to send
      return responseCode === undefined
        ? command === 'API'
        : responseCode >= 400 &&
            responseCode < 600 &&
            command !== undefined &&
            ENVELOPE_COMMANDS.has(command);
    case 'EMESSAGE':
      // 'DATA' is the reply to the final '.', the server had the whole message
      return command === 'API' || command === 'MAIL FROM';
    case 'EAUTH':
    case 'ENOAUTH':
    case 'ETLS':
    case 'EREQUIRETLS':
    case 'ECONFIG':
      // authentication and TLS come before the envelope
      return true;
    case 'ECONNECTION':
    case 'EPROTOCOL':
      // refused at EHLO; a drop or a reply seen on 'CONN' may come at any stage
      return command !== undefined && SETUP_COMMANDS.has(command);
    default:
      return false;
  }
}

export function createSmtpChannel(opts: SmtpChannelOptions): SmtpChannel {
  // One pooled transport for the life of the process.
  const transport = nodemailer.createTransport({
    url: opts.url,
    pool: true,
    maxConnections: 5,
    // nodemailer only requeues a message whose reused connection was found closed before a byte
    // of it was sent; every other failure is reported to the caller, who decides about a resend
    maxRequeues: 2,
    idleTimeout: 30_000,
    connectionTimeout: opts.timeoutMs,
    greetingTimeout: opts.timeoutMs,
    socketTimeout: opts.timeoutMs,
    // nodemailer's own logs can carry server replies and message data
    logger: false,
    debug: false,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  // errors are reported per message; an unhandled 'error' event must not crash the process
  transport.on('error', () => {});

  let closed = false;
  return {
    async send(message) {
      if (closed) return notDelivered(true, { channel: 'smtp', errorClass: 'Closed' });
      try {
        await transport.sendMail({
          from: opts.from,
          to: message.to,
          subject: message.subject,
          text: message.text,
        });
        return DELIVERED;
      } catch (err) {
        return classifySmtpError(err);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      transport.close();
    },
  };
}
