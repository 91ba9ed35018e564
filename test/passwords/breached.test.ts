import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { bearer, createPerson, signIn } from '../helpers/identities.js';
import { post } from './support.js';

/*
 * The breach check of a new password against a range API (BREACHED_PASSWORDS_RANGE_URL): a real
 * HTTP server on loopback speaking the k-anonymity range protocol, and the bundled list offline.
 */

/** Strong to zxcvbn and in no list: only the stub's answer decides. */
const STRONG = 'violet-anchor-meadow-42';
const STRONG_SHA1 = createHash('sha1').update(STRONG).digest('hex').toUpperCase();
/** Small, yet above a loaded machine's first loopback request (undici's first connection). */
const TIMEOUT_MS = 400;

interface Seen {
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let t: TestApp;
let stub: Server;
const seen: Seen[] = [];
/** How the stub answers the next requests. */
let answer: (req: IncomingMessage, res: ServerResponse) => void;
/** Responses the stub holds open (timeout test), ended when the file closes. */
const held: ServerResponse[] = [];

/** A range answer: the given suffix lines among unrelated ones, then padding lines (count 0). */
function rangeBody(lines: string[]): string {
  const other = (n: number) => createHash('sha1').update(`other-${n}`).digest('hex').toUpperCase().slice(5);
  return [...[1, 2, 3].map((n) => `${other(n)}:${n * 7}`), ...lines, `${other(9)}:0`, `${other(10)}:0`].join(
    '\r\n',
  );
}

beforeAll(async () => {
  stub = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body });
      answer(req, res);
    });
  });
  await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
  const { port } = stub.address() as AddressInfo;
  t = await createTestApp({
    env: {
      // A trailing slash is tolerated: the path is <base>/range/<prefix>.
      BREACHED_PASSWORDS_RANGE_URL: `http://127.0.0.1:${port}/pwned/`,
      BREACHED_PASSWORDS_TIMEOUT_MS: String(TIMEOUT_MS),
    },
  });
  // Warm-up: zxcvbn's dictionaries and the HTTP client's first connection, outside the timed tests.
  answer = (_req, res) => res.end(rangeBody([]));
  expect((await signUp(STRONG)).statusCode).toBe(201);
});

afterAll(async () => {
  for (const res of held) res.destroy();
  await t.close();
  await new Promise<void>((r) => stub.close(() => r()));
});

beforeEach(() => {
  seen.length = 0;
  answer = (_req, res) => res.end(rangeBody([]));
});

function signUp(password: string) {
  return post(t.app, '/sign-ups', {
    identifierType: 'email',
    identifier: `breach-${randomUUID()}@example.com`,
    password,
  });
}

const BREACHED_ENTRY = {
  location: 'body',
  field: 'password',
  code: 'breached_password',
  message: 'This password has appeared in data breaches, so attackers try it first. Choose another one.',
};

describe('new passwords against a k-anonymity range API', () => {
  it('sends only the first 5 hex characters of the SHA-1, with Add-Padding, and refuses a listed hash', async () => {
    answer = (_req, res) => res.end(rangeBody([`${STRONG_SHA1.slice(5)}:3861493`]));
    const res = await signUp(STRONG);
    expect(res.statusCode).toBe(400);
    const problem = res.json();
    expect(problem.code).toBe('validation.failed');
    expect(problem.errors).toEqual([BREACHED_ENTRY]);
    expect(res.body).not.toContain(STRONG);

    expect(seen).toHaveLength(1);
    const [request] = seen;
    expect(request.url).toBe(`/pwned/range/${STRONG_SHA1.slice(0, 5)}`);
    expect(request.url).toMatch(/^\/pwned\/range\/[0-9A-F]{5}$/);
    expect(request.headers['add-padding']).toBe('true');
    expect(request.body).toBe('');
    // Nothing more of the hash (or the password) left the service, in any form.
    const sent = JSON.stringify(request).toUpperCase();
    expect(sent).not.toContain(STRONG_SHA1.slice(5, 12));
    expect(sent).not.toContain(STRONG.toUpperCase());
    expect(sent).not.toContain(createHash('sha1').update(STRONG).digest('base64').toUpperCase());
  });

  it('compares the suffix whatever its case', async () => {
    answer = (_req, res) => res.end(rangeBody([`${STRONG_SHA1.slice(5).toLowerCase()}:2`]));
    expect((await signUp(STRONG)).json().errors).toEqual([BREACHED_ENTRY]);
  });

  it('ignores padding lines (count 0) and hashes other than the password’s', async () => {
    answer = (_req, res) => res.end(rangeBody([`${STRONG_SHA1.slice(5)}:0`]));
    expect((await signUp(STRONG)).statusCode).toBe(201);
    answer = (_req, res) => res.end(rangeBody([]));
    expect((await signUp(STRONG)).statusCode).toBe(201);
    expect(seen).toHaveLength(2);
  });

  it('lets the password through when the API does not answer in time, and logs it without the password or hash', async () => {
    answer = (_req, res) => {
      // Headers sent, body never ended: the timeout covers the whole answer.
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write(`${STRONG_SHA1.slice(5, 10)}`);
      held.push(res);
    };
    const before = t.logs().length;
    const started = performance.now();
    const res = await signUp(STRONG);
    const elapsed = performance.now() - started;
    expect(res.statusCode).toBe(201);
    expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    const logged = t.logs().slice(before);
    expect(logged).toContain('breached-password range check failed');
    expect(logged).toContain('"breachCheck":"timeout"');
    expect(logged).not.toContain(STRONG);
    expect(logged.toUpperCase()).not.toContain(STRONG_SHA1.slice(0, 5));
  });

  it('lets the password through on an error status or a refused connection, and logs it', async () => {
    answer = (_req, res) => {
      res.statusCode = 503;
      res.end(rangeBody([`${STRONG_SHA1.slice(5)}:12`]));
    };
    const before = t.logs().length;
    expect((await signUp(STRONG)).statusCode).toBe(201);
    answer = (req, _res) => req.socket.destroy();
    expect((await signUp(STRONG)).statusCode).toBe(201);
    const logged = t.logs().slice(before);
    expect(logged).toContain('"breachCheck":"status"');
    expect(logged).toContain('"status":503');
    expect(logged).toContain('"breachCheck":"error"');
    expect(logged.toUpperCase()).not.toContain(STRONG_SHA1.slice(0, 5));
  });

  it('never asks about a password the local rules refuse, and refuses the bundled list offline', async () => {
    const weak = await signUp('password12345');
    expect(weak.json().errors[0]).toMatchObject({ code: 'weak_password' });
    const listed = await signUp('password1234');
    expect(listed.statusCode).toBe(400);
    expect(listed.json().errors).toEqual([BREACHED_ENTRY]);
    expect(seen).toEqual([]);
  });

  it('applies to a password change and a recovery too', async () => {
    answer = (_req, res) => res.end(rangeBody([`${STRONG_SHA1.slice(5)}:5`]));
    const person = await createPerson(t.ctx);
    const grant = await signIn(t.app, person);
    const change = await post(
      t.app,
      '/password-changes',
      { currentPassword: person.password, newPassword: STRONG },
      bearer(grant.accessToken),
    );
    expect(change.statusCode).toBe(400);
    expect(change.json().errors).toEqual([{ ...BREACHED_ENTRY, field: 'newPassword' }]);
    const recovery = await post(t.app, '/password-recoveries/confirmations', {
      identifierType: 'email',
      identifier: person.email,
      code: '123456',
      newPassword: STRONG,
    });
    expect(recovery.statusCode).toBe(400);
    expect(recovery.json().errors).toEqual([{ ...BREACHED_ENTRY, field: 'newPassword' }]);
    expect(seen.map((s) => s.url)).toEqual([
      `/pwned/range/${STRONG_SHA1.slice(0, 5)}`,
      `/pwned/range/${STRONG_SHA1.slice(0, 5)}`,
    ]);
  });

  it('applies to a first password added after a step-up (POST /sign-in-methods/passwords)', async () => {
    answer = (_req, res) => res.end(rangeBody([`${STRONG_SHA1.slice(5)}:5`]));
    // The policy is met before the "already has one" check: a breached password is 400 either way.
    const { headers } = await elevatedPerson(t);
    seen.length = 0;
    const added = await post(t.app, '/sign-in-methods/passwords', { newPassword: STRONG }, headers);
    expect(added.statusCode).toBe(400);
    expect(added.json().errors).toEqual([{ ...BREACHED_ENTRY, field: 'newPassword' }]);
    expect(seen.map((s) => s.url)).toEqual([`/pwned/range/${STRONG_SHA1.slice(0, 5)}`]);
  });
});
