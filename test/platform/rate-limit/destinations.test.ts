import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { elevatedPerson } from '../../helpers/elevation.js';
import { bearer, createPerson, signIn } from '../../helpers/identities.js';
import { messagesTo, waitForCode } from '../../helpers/outbox.js';

// Messages per destination (contract 7, RATE_LIMIT_SENDS_A_MESSAGE): every code the service sends
// to an address or number counts against a window of that destination, whichever client address
// asked, so spreading requests over many /64s (each within its own per-address limit) no longer
// multiplies what one inbox receives. Recovery starts have a window of their own (counted alike
// for an address nobody holds); every other code shares the other one.
const N = 3;
const WINDOW = 900;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_SENDS_A_MESSAGE: `${N}/${WINDOW}` } });
});
afterAll(async () => {
  await t.close();
});

// A fresh /64 for every request: the per-address limit never trips, only the destination's can.
let networks = 0;
function freshNetwork(): string {
  networks += 1;
  return `2001:db8:${networks.toString(16)}::1`;
}

const unique = (label: string) => `${label}-${randomBytes(5).toString('hex')}@example.com`;
const PASSWORD = 'violet-anchor-meadow-42';

function post(url: string, payload: object, headers: Record<string, string> = {}) {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1${url}`,
    payload,
    headers,
    remoteAddress: freshNetwork(),
  });
}
const signUp = (address: string) =>
  post('/sign-ups', { identifierType: 'email', identifier: address, password: PASSWORD });
const recover = (address: string) =>
  post('/password-recoveries', { identifierType: 'email', identifier: address });

/** Status, media type, Retry-After and body bytes: what a caller can compare. */
function shape(res: LightMyRequestResponse) {
  return {
    status: res.statusCode,
    contentType: res.headers['content-type'],
    retryAfter: res.headers['retry-after'],
    body: res.body,
  };
}

function expectExceeded(res: LightMyRequestResponse, retryAfter: number) {
  expect({ status: res.statusCode, code: res.json().code, retryable: res.json().retryable }).toEqual({
    status: 429,
    code: 'rate_limit.exceeded',
    retryable: true,
  });
  expect(res.headers['retry-after']).toBe(String(retryAfter));
}

/**
 * The messages `address` holds once every delivery asked for so far has left. Recovery messages
 * leave just after the answer, in order: a message to a fresh address, asked for now, arrives after
 * any to `address` that a refused start might still have had under way.
 */
async function deliveredTo(address: string): Promise<number> {
  const marker = await createPerson(t.ctx);
  expect((await recover(marker.email)).statusCode).toBe(201);
  await waitForCode(t.config.dataDir, marker.email, 1);
  return messagesTo(t.config.dataDir, address).length;
}

async function sentCodes(address: string): Promise<number> {
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM challenges c JOIN identifiers i ON i.id = c.identifier_id
    WHERE i.value = ${address}`.execute(t.ctx.database.db);
  return r.rows[0].n;
}

describe('POST /sign-ups per destination', () => {
  it(`${N + 1} starts for one address from ${N + 1} networks send ${N} codes; the last is 429 with Retry-After and writes nothing`, async () => {
    const address = unique('bombed');
    const answers = [];
    for (let i = 0; i <= N; i++) answers.push(await signUp(address));
    expect(answers.map((r) => r.statusCode)).toEqual([...Array(N).fill(201), 429]);
    expectExceeded(answers[N], WINDOW);
    expect(messagesTo(t.config.dataDir, address)).toHaveLength(N);
    expect(await sentCodes(address)).toBe(N);

    // The window ends with the clock: the next start is admitted and sent.
    t.clock.advance(WINDOW - 1);
    expectExceeded(await signUp(address), 1);
    t.clock.advance(1);
    expect((await signUp(address)).statusCode).toBe(201);
    expect(messagesTo(t.config.dataDir, address)).toHaveLength(N + 1);
  });

  it('a verified address answers 409 and spends nothing of its window, full or not (the 409 already says it is taken)', async () => {
    const owner = await createPerson(t.ctx);
    for (let i = 0; i <= N; i++)
      expect((await signUp(owner.email)).json().code).toBe('identity.identifier_taken');
    // A stranger's refused sign-ups cannot silence the owner's messages: all N still go.
    for (let i = 0; i < N; i++) expect((await recover(owner.email)).statusCode).toBe(201);
    expect(await deliveredTo(owner.email)).toBe(N);
    expectExceeded(await recover(owner.email), WINDOW);
    expect((await signUp(owner.email)).json().code).toBe('identity.identifier_taken');
  });
});

describe('POST /password-recoveries per destination', () => {
  it(`${N + 1} starts each for a known and an unknown address: identical answers, ${N} codes to the known one, then the identical 429`, async () => {
    const owner = await createPerson(t.ctx);
    const nobody = unique('nobody');
    for (let i = 0; i <= N; i++) {
      const known = await recover(owner.email);
      const unknown = await recover(nobody);
      expect(known.statusCode).toBe(i < N ? 201 : 429);
      expect(shape(unknown)).toEqual(shape(known));
    }
    expect(await deliveredTo(owner.email)).toBe(N);
    expect(messagesTo(t.config.dataDir, nobody)).toEqual([]);

    // Both windows end together, and both addresses answer alike again.
    t.clock.advance(WINDOW);
    const known = await recover(owner.email);
    const unknown = await recover(nobody);
    expect(known.statusCode).toBe(201);
    expect(shape(unknown)).toEqual(shape(known));
    expect(await deliveredTo(owner.email)).toBe(N + 1);
  });
});

describe('two windows per destination: recovery starts, and every other code', () => {
  it('a step-up code, a sign-in-method code and a sign-up code to one mailbox share one; recovery starts have their own, alike for a known and an unknown address', async () => {
    const owner = await createPerson(t.ctx);
    const [local, domain] = owner.email.split('@');
    // Lands in the owner's mailbox: a +tag is not a new destination.
    const tagged = `${local}+work@${domain}`;
    const session = await signIn(t.app, owner);
    const stepUp = () => post('/step-ups', { channel: 'identifier' }, bearer(session.accessToken));
    const other = await elevatedPerson(t);
    const addMethod = () =>
      post('/sign-in-methods', { identifierType: 'email', identifier: tagged }, other.headers);

    expect((await stepUp()).statusCode).toBe(201);
    expect((await addMethod()).statusCode).toBe(201);
    expect((await stepUp()).statusCode).toBe(201);
    expect(await deliveredTo(owner.email)).toBe(2);
    expect(messagesTo(t.config.dataDir, tagged)).toHaveLength(1);

    for (const refused of [await stepUp(), await addMethod(), await signUp(tagged)])
      expectExceeded(refused, WINDOW);
    expect(await deliveredTo(owner.email)).toBe(2);
    expect(messagesTo(t.config.dataDir, tagged)).toHaveLength(1);

    // The owner's codes spent nothing of the recovery window: its N starts and then its 429 come at
    // the same count as for an address nobody holds, so they cannot tell that this one is in use.
    const nobody = unique('nobody');
    for (let i = 0; i <= N; i++) {
      const known = await recover(owner.email);
      const unknown = await recover(nobody);
      expect(known.statusCode).toBe(i < N ? 201 : 429);
      expect(shape(unknown)).toEqual(shape(known));
    }
    expect(await deliveredTo(owner.email)).toBe(2 + N);
    // And the recovery starts spent nothing of the other window, already full: still 429, not more.
    expectExceeded(await stepUp(), WINDOW);
  });

  it('counts a Gmail mailbox once, whatever its dots, +tags or googlemail.com spelling', async () => {
    const name = `ada${randomBytes(3).toString('hex')}`;
    const spellings = [
      `${name}+1@gmail.com`,
      `${name.slice(0, 2)}.${name.slice(2)}@googlemail.com`,
      `${name}@gmail.com`,
    ];
    for (const address of spellings) expect((await recover(address)).statusCode).toBe(201);
    expectExceeded(await recover(`${name.split('').join('.')}+other@gmail.com`), WINDOW);
    // Another mailbox of the same domain has its own window.
    expect((await recover(`x${name}@gmail.com`)).statusCode).toBe(201);
  });
});
