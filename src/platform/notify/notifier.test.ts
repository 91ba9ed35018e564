import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createNotifier, maskRecipient, type OutboundMessage } from './notifier.js';
import { type CodePurpose, codeMessage } from './templates.js';

/** A code message in English from an unbranded service (templates.test.ts walks every language). */
const verificationText = (purpose: CodePurpose, code: string, minutes: number) =>
  codeMessage('en', { name: 'Your account', named: false }, purpose, code, minutes);

const cleanups: Array<() => Promise<void>> = [];
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'notify-'));
  cleanups.unshift(() => rm(dir, { recursive: true, force: true }));
});
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

const email = (code: string): OutboundMessage => ({
  to: 'alice@example.com',
  type: 'email',
  ...verificationText('sign_up', code, 10),
});
const phone = (code: string): OutboundMessage => ({
  to: '+33612345678',
  type: 'phone',
  ...verificationText('password_recovery', code, 15),
});

async function readOutbox(dataDir: string): Promise<Record<string, unknown>[]> {
  const content = await readFile(join(dataDir, 'outbox.jsonl'), 'utf8');
  return content
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('development outbox', () => {
  it('appends one JSON line per message when no channel is configured, and reports DELIVERED', async () => {
    const dataDir = join(dir, 'nested', 'data'); // created on demand
    const notifier = createNotifier({ production: false, dataDir, mailFrom: 'no-reply@example.com' });
    cleanups.push(() => notifier.close());
    expect(notifier.canDeliver('email')).toBe(true);
    expect(notifier.canDeliver('phone')).toBe(true);

    const first = email('111222');
    const second = phone('333444');
    expect(await notifier.send(first)).toEqual({ status: 'DELIVERED', resendable: false });
    expect(await notifier.send(second)).toEqual({ status: 'DELIVERED', resendable: false });

    const lines = await readOutbox(dataDir);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ to: first.to, type: 'email', subject: first.subject, text: first.text });
    expect(lines[1]).toMatchObject({
      to: second.to,
      type: 'phone',
      subject: second.subject,
      text: second.text,
    });
    expect(String(lines[1]?.text).split(/\s+/)).toContain('333444');
  });

  it('is never used in production: no channel means canDeliver false and a resendable NOT_DELIVERED', async () => {
    const notifier = createNotifier({ production: true, dataDir: dir, mailFrom: 'no-reply@example.com' });
    cleanups.push(() => notifier.close());
    expect(notifier.canDeliver('email')).toBe(false);
    expect(notifier.canDeliver('phone')).toBe(false);

    expect(await notifier.send(email('555666'))).toEqual({ status: 'NOT_DELIVERED', resendable: true });
    expect(await notifier.send(phone('555666'))).toEqual({ status: 'NOT_DELIVERED', resendable: true });
    expect(existsSync(join(dir, 'outbox.jsonl'))).toBe(false);
  });

  it('in production answers per channel type', async () => {
    const notifier = createNotifier({
      production: true,
      dataDir: dir,
      mailFrom: 'no-reply@example.com',
      smsWebhookUrl: 'http://127.0.0.1:9/sms',
    });
    cleanups.push(() => notifier.close());
    expect(notifier.canDeliver('phone')).toBe(true);
    expect(notifier.canDeliver('email')).toBe(false);
  });

  it('uses the configured channel rather than the outbox outside production', async () => {
    const received: string[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString('utf8');
      });
      req.on('end', () => {
        received.push(body);
        res.writeHead(200).end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const port = (server.address() as net.AddressInfo).port;
    const notifier = createNotifier({
      production: false,
      dataDir: dir,
      mailFrom: 'no-reply@example.com',
      smsWebhookUrl: `http://127.0.0.1:${port}/sms`,
    });
    cleanups.push(() => notifier.close());
    expect(await notifier.send(phone('777888'))).toEqual({ status: 'DELIVERED', resendable: false });
    expect(received).toHaveLength(1);
    expect(existsSync(join(dir, 'outbox.jsonl'))).toBe(false);
  });
});

describe('logging', () => {
  it('never logs the code or the text, only masked recipients, statuses and error codes', async () => {
    const calls: unknown[][] = [];
    const log = {
      info: (...args: unknown[]) => void calls.push(['info', ...args]),
      warn: (...args: unknown[]) => void calls.push(['warn', ...args]),
    };
    const code = '913572';

    // a real SMTP server and a real gateway answering 200 then 500
    const smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      closeTimeout: 200,
      onData(stream, _session, cb) {
        stream.resume();
        stream.on('end', () => cb());
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()));
    cleanups.push(() => new Promise<void>((resolve) => smtp.close(() => resolve())));
    const smtpPort = (smtp.server.address() as net.AddressInfo).port;

    let gatewayCalls = 0;
    const gateway = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(gatewayCalls++ === 0 ? 200 : 500).end(`echo ${code}`));
    });
    gateway.listen(0, '127.0.0.1');
    await once(gateway, 'listening');
    cleanups.push(async () => {
      gateway.closeAllConnections();
      await new Promise<void>((resolve) => gateway.close(() => resolve()));
    });
    const gatewayPort = (gateway.address() as net.AddressInfo).port;

    const live = createNotifier({
      production: true,
      dataDir: dir,
      mailFrom: 'no-reply@example.com',
      smtpUrl: `smtp://127.0.0.1:${smtpPort}`,
      smsWebhookUrl: `http://127.0.0.1:${gatewayPort}/sms`,
      timeoutMs: 2000,
      log,
    });
    const dev = createNotifier({ production: false, dataDir: dir, mailFrom: 'no-reply@example.com', log });
    const prod = createNotifier({ production: true, dataDir: dir, mailFrom: 'no-reply@example.com', log });
    // notifiers close before the servers (cleanups run last-in first-out)
    cleanups.push(
      () => live.close(),
      () => dev.close(),
      () => prod.close(),
    );

    expect((await live.send(email(code))).status).toBe('DELIVERED');
    expect((await live.send(phone(code))).status).toBe('DELIVERED');
    expect(await live.send(phone(code))).toEqual({ status: 'NOT_DELIVERED', resendable: true });
    expect((await dev.send(email(code))).status).toBe('DELIVERED');
    expect(await prod.send(phone(code))).toEqual({ status: 'NOT_DELIVERED', resendable: true });

    // the code did go out: it is in the outbox file, and nowhere in the logs
    expect(await readFile(join(dir, 'outbox.jsonl'), 'utf8')).toContain(code);
    expect(calls.length).toBeGreaterThanOrEqual(5);
    for (const call of calls) {
      const serialized = JSON.stringify(call);
      expect(serialized).not.toContain(code);
      expect(serialized).not.toContain('expires in');
      expect(serialized).not.toContain('alice@example.com');
      expect(serialized).not.toContain('+33612345678');
    }
    const serializedAll = JSON.stringify(calls);
    expect(serializedAll).toContain('a***@example.com');
    expect(serializedAll).toContain('+33******78');
    expect(serializedAll).toContain('"httpStatus":500');
    expect(calls.some((c) => c[0] === 'info' && /outbox/.test(String(c[2])))).toBe(true);
  });
});

describe('verificationText', () => {
  const purposes = ['sign_up', 'sign_in_method', 'password_recovery', 'step_up'] as const;

  it.each(purposes)('carries the code as its own whitespace-separated token (%s)', (purpose) => {
    const { subject, text } = verificationText(purpose, 'K7Q2XZ', 10);
    expect(subject.length).toBeGreaterThan(0);
    expect(subject).not.toContain('K7Q2XZ');
    expect(text.split(/\s+/).filter((token) => token === 'K7Q2XZ')).toHaveLength(1);
    expect(text).toContain('10 minutes');
  });

  it('gives each purpose its own wording', () => {
    const subjects = new Set(purposes.map((p) => verificationText(p, '123456', 5).text));
    expect(subjects.size).toBe(purposes.length);
  });

  it('uses the singular for one minute', () => {
    expect(verificationText('step_up', '123456', 1).text).toContain('1 minute.');
  });

  it('refuses a code that would not be a single token', () => {
    expect(() => verificationText('sign_up', '123 456', 10)).toThrow(TypeError);
    expect(() => verificationText('sign_up', '', 10)).toThrow(TypeError);
  });
});

describe('maskRecipient', () => {
  it('masks e-mail addresses and phone numbers', () => {
    expect(maskRecipient('alice@example.com')).toBe('a***@example.com');
    expect(maskRecipient('+33612345678')).toBe('+33******78');
    expect(maskRecipient('12345')).toBe('***');
    expect(maskRecipient('@example.com')).toBe('***');
  });
});
