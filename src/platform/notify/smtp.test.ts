import { once } from 'node:events';
import net from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/helpers/net.js';
import { createNotifier, type Notifier } from './notifier.js';
import { type CodePurpose, codeMessage } from './templates.js';

/** A code message in English from an unbranded service (templates.test.ts walks every language). */
const verificationText = (purpose: CodePurpose, code: string, minutes: number) =>
  codeMessage('en', { name: 'Your account', named: false }, purpose, code, minutes);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  // notifiers first (they close their pooled connections), then the servers
  while (cleanups.length > 0) await cleanups.pop()?.();
});

interface Received {
  from: string | undefined;
  to: string[];
  raw: string;
}

/** A real smtp-server on a loopback port. */
async function startSmtpServer(options: Partial<SMTPServerOptions> = {}) {
  const received: Received[] = [];
  let connections = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    closeTimeout: 200,
    onConnect(_session, cb) {
      connections++;
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined,
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        cb();
      });
    },
    ...options,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as net.AddressInfo).port;
  cleanups.unshift(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port, received, connections: () => connections };
}

/** A plain TCP server; sockets are destroyed on cleanup. */
async function startTcpServer(onSocket: (socket: net.Socket) => void) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    onSocket(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.unshift(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as net.AddressInfo).port;
}

function notifierFor(smtpUrl: string, timeoutMs = 2000): Notifier {
  const notifier = createNotifier({
    production: true,
    dataDir: '/nonexistent-outbox-must-not-be-used',
    smtpUrl,
    mailFrom: 'Identity <no-reply@example.com>',
    timeoutMs,
  });
  cleanups.push(() => notifier.close());
  return notifier;
}

function bodyOf(raw: string): string {
  const at = raw.indexOf('\r\n\r\n');
  return at === -1 ? '' : raw.slice(at + 4);
}

const message = (text = 'Your code is 123456 ok') => ({
  to: 'alice@example.com',
  type: 'email' as const,
  subject: 'Test',
  text,
});

describe('SMTP channel', () => {
  it('delivers a verification message whose code can be read back as its own token', async () => {
    const smtp = await startSmtpServer();
    const notifier = notifierFor(`smtp://127.0.0.1:${smtp.port}`);
    expect(notifier.canDeliver('email')).toBe(true);
    expect(notifier.canDeliver('phone')).toBe(false);

    const { subject, text } = verificationText('sign_up', '482913', 10);
    const result = await notifier.send({ to: 'alice@example.com', type: 'email', subject, text });

    expect(result).toEqual({ status: 'DELIVERED', resendable: false });
    expect(smtp.received).toHaveLength(1);
    const [mail] = smtp.received;
    expect(mail?.from).toBe('no-reply@example.com');
    expect(mail?.to).toEqual(['alice@example.com']);
    expect(mail?.raw).toMatch(/^Subject: Your sign-up code\r$/m);
    const codeTokens = bodyOf(mail?.raw ?? '')
      .split(/\s+/)
      .filter((token) => /^\d{6}$/.test(token));
    expect(codeTokens).toEqual(['482913']);
  });

  it('reuses one pooled connection for several messages', async () => {
    const smtp = await startSmtpServer();
    const notifier = notifierFor(`smtp://127.0.0.1:${smtp.port}`);
    expect((await notifier.send(message())).status).toBe('DELIVERED');
    expect((await notifier.send(message())).status).toBe('DELIVERED');
    expect(smtp.received).toHaveLength(2);
    expect(smtp.connections()).toBe(1);
  });

  it('reports a refused connection as resendable', async () => {
    const port = await freePort();
    const notifier = notifierFor(`smtp://127.0.0.1:${port}`);
    expect(await notifier.send(message())).toEqual({ status: 'NOT_DELIVERED', resendable: true });
  });

  it('reports a DNS failure as resendable', async () => {
    const notifier = notifierFor('smtp://no-such-host.invalid:2525');
    expect(await notifier.send(message())).toEqual({ status: 'NOT_DELIVERED', resendable: true });
  });

  it('reports a sink that accepts the connection and never answers as not resendable', async () => {
    const port = await startTcpServer(() => {
      // never writes a greeting
    });
    const notifier = notifierFor(`smtp://127.0.0.1:${port}`, 500);
    const started = Date.now();
    expect(await notifier.send(message())).toEqual({ status: 'NOT_DELIVERED', resendable: false });
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('reports a 550 reply to RCPT TO as resendable', async () => {
    const smtp = await startSmtpServer({
      onRcptTo(_address, _session, cb) {
        cb(Object.assign(new Error('No such user'), { responseCode: 550 }));
      },
    });
    const notifier = notifierFor(`smtp://127.0.0.1:${smtp.port}`);
    expect(await notifier.send(message())).toEqual({ status: 'NOT_DELIVERED', resendable: true });
    expect(smtp.received).toHaveLength(0);
  });

  it('reports a 451 reply to MAIL FROM as resendable', async () => {
    const smtp = await startSmtpServer({
      onMailFrom(_address, _session, cb) {
        cb(Object.assign(new Error('Try later'), { responseCode: 451 }));
      },
    });
    const notifier = notifierFor(`smtp://127.0.0.1:${smtp.port}`);
    expect(await notifier.send(message())).toEqual({ status: 'NOT_DELIVERED', resendable: true });
    expect(smtp.received).toHaveLength(0);
  });

  it('reports a rejection after the message data as not resendable', async () => {
    let dataSeen = 0;
    const smtp = await startSmtpServer({
      onData(stream, _session, cb) {
        stream.resume();
        stream.on('end', () => {
          dataSeen++;
          cb(Object.assign(new Error('Rejected after data'), { responseCode: 554 }));
        });
      },
    });
    const notifier = notifierFor(`smtp://127.0.0.1:${smtp.port}`);
    expect(await notifier.send(message())).toEqual({ status: 'NOT_DELIVERED', resendable: false });
    expect(dataSeen).toBe(1);
  });

  it('reports a connection dropped after the final dot as not resendable, and does not resend', async () => {
    let messagesReceived = 0;
    const port = await startTcpServer((socket) => {
      let buffer = '';
      let inData = false;
      socket.write('220 sink ESMTP\r\n');
      socket.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('utf8');
        if (inData) {
          if (buffer.includes('\r\n.\r\n')) {
            messagesReceived++;
            socket.destroy();
          }
          return;
        }
        let nl = buffer.indexOf('\r\n');
        while (nl !== -1 && !inData) {
          const line = buffer.slice(0, nl).toUpperCase();
          buffer = buffer.slice(nl + 2);
          if (line.startsWith('EHLO') || line.startsWith('HELO')) socket.write('250 sink\r\n');
          else if (line.startsWith('MAIL') || line.startsWith('RCPT')) socket.write('250 OK\r\n');
          else if (line.startsWith('DATA')) {
            inData = true;
            socket.write('354 go ahead\r\n');
          } else socket.write('502 unknown\r\n');
          nl = buffer.indexOf('\r\n');
        }
      });
    });
    const notifier = notifierFor(`smtp://127.0.0.1:${port}`);
    expect(await notifier.send(message())).toEqual({ status: 'NOT_DELIVERED', resendable: false });
    // give a requeue, if there were one, the time to reach the server
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(messagesReceived).toBe(1);
  });

  it('does not send after close', async () => {
    const smtp = await startSmtpServer();
    const notifier = notifierFor(`smtp://127.0.0.1:${smtp.port}`);
    await notifier.close();
    expect(await notifier.send(message())).toEqual({ status: 'NOT_DELIVERED', resendable: true });
    expect(smtp.received).toHaveLength(0);
  });
});
