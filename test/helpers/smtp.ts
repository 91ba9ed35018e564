import type net from 'node:net';
import { SMTPServer } from 'smtp-server';
import { codeIn } from './outbox.js';

export interface ReceivedMail {
  to: string[];
  raw: string;
}

export interface SmtpSink {
  received: ReceivedMail[];
  port: number;
  /** The code in the newest message to `to`; throws when none came. */
  lastCode(to: string): string;
  close(): Promise<void>;
}

/** The body of a raw message (after the header block). */
export function bodyOf(raw: string): string {
  const at = raw.indexOf('\r\n\r\n');
  return at === -1 ? raw : raw.slice(at + 4);
}

/** A real SMTP server on loopback (port 0: any free one) that keeps every message it accepts. */
export async function startSmtpSink(port = 0): Promise<SmtpSink> {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        raw += chunk;
      });
      stream.on('end', () => {
        received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    received,
    port: (server.server.address() as net.AddressInfo).port,
    lastCode(to) {
      const mail = received.filter((m) => m.to.includes(to)).at(-1);
      if (!mail) throw new Error(`no mail for ${to}`);
      return codeIn(bodyOf(mail.raw));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The code in the `count`-th mail the sink received for `to` (some leave just after the answer). */
export async function mailCode(sink: SmtpSink, to: string, count: number): Promise<string> {
  const until = Date.now() + 10_000;
  for (;;) {
    const mine = sink.received.filter((m) => m.to.includes(to));
    if (mine.length >= count) return codeIn(bodyOf(mine[count - 1].raw).replace(/=\r\n/g, ''));
    if (Date.now() > until) throw new Error(`no message #${count} for ${to}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** How many mails the sink received for `to`. */
export const mailCount = (sink: SmtpSink, to: string): number =>
  sink.received.filter((m) => m.to.includes(to)).length;
