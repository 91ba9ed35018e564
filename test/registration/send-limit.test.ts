import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { createPerson } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { emailForm, identifierRow, outbox, PASSWORD, uniqueEmail } from './helpers.js';

// Issue 27, broken item 7: only requests that send a message count against
// RATE_LIMIT_SENDS_A_MESSAGE per client address and route. Typos (400), unusable addresses (422)
// and "already in use" (409) send nothing and spend nothing of it; past it the next send is 429
// with Retry-After, sends nothing and writes nothing, and the window frees with the clock.
const MAX = 3;
const WINDOW = 900;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { RATE_LIMIT_SENDS_A_MESSAGE: `${MAX}/${WINDOW}` } });
});
afterAll(async () => {
  await t?.close();
});

// Each test sends from its own client address, so the tests' windows never meet.
let clients = 0;
function client(): string {
  clients += 1;
  return `198.51.100.${clients}`;
}

function post(url: string, from: string, payload: object, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url: `/api/v1${url}`, payload, headers, remoteAddress: from });
}

const signUp = (from: string, address: string) =>
  post('/sign-ups', from, { ...emailForm(address), password: PASSWORD });

function expectExceeded(res: LightMyRequestResponse, retryAfter: number) {
  expect(
    { status: res.statusCode, code: res.json().code, retryable: res.json().retryable },
    res.body,
  ).toEqual({
    status: 429,
    code: 'rate_limit.exceeded',
    retryable: true,
  });
  expect(res.headers['retry-after']).toBe(String(retryAfter));
}

/** The refusals a person makes while typing: none of them sends, so none may count. */
async function typos(
  from: string,
  url: string,
  extra: object = {},
  headers: Record<string, string> = {},
): Promise<void> {
  const send = (payload: object) => post(url, from, payload, headers);
  const short = await send({ ...emailForm(uniqueEmail('short')), ...extra, password: 'short' });
  const malformed = await send({ identifierType: 'email', identifier: 'ada@', ...extra });
  const unusable = await send({ ...emailForm(`${uniqueEmail('space')} `), ...extra });
  const country = await send({ identifierType: 'phone', identifier: '12', country: 'FR', ...extra });
  expect(unusable.json().code).toBe('identity.identifier_unusable');
  for (const r of [short, malformed, country]) expect([400, 422], r.body).toContain(r.statusCode);
}

describe('POST /sign-ups: only sends count against the client address', () => {
  it('typos, unusable addresses and a 409 spend nothing; the sends after them still go; past the limit 429 sends and writes nothing; the window frees with the clock', async () => {
    const from = client();
    const owner = await createPerson(t.ctx);
    const before = outbox(t.config.dataDir).length;

    await typos(from, '/sign-ups', { password: PASSWORD });
    for (let i = 0; i < MAX + 1; i++)
      expect((await signUp(from, owner.email)).json().code).toBe('identity.identifier_taken');
    expect(outbox(t.config.dataDir)).toHaveLength(before);

    const addresses = Array.from({ length: MAX }, (_, i) => uniqueEmail(`send-${i}`));
    for (const address of addresses) expect((await signUp(from, address)).statusCode).toBe(201);
    for (const address of addresses) expect(messagesTo(t.config.dataDir, address)).toHaveLength(1);

    // Past the limit: 429 with Retry-After (the whole window, the clock has not moved), for a new
    // address and for a pending one alike, byte for byte; nothing sent, nothing written.
    const fresh = uniqueEmail('refused');
    const refusedNew = await signUp(from, fresh);
    const refusedPending = await signUp(from, addresses[0]);
    expectExceeded(refusedNew, WINDOW);
    expectExceeded(refusedPending, WINDOW);
    expect(refusedPending.body).toBe(refusedNew.body);
    expect(await identifierRow(t.ctx.database.db, fresh)).toHaveLength(0);
    expect(messagesTo(t.config.dataDir, fresh)).toHaveLength(0);
    expect(messagesTo(t.config.dataDir, addresses[0])).toHaveLength(1);

    // Refusals are still answered for what they are while the sends are held back.
    const typo = await post('/sign-ups', from, { ...emailForm(fresh), password: 'short' });
    expect(typo.statusCode).toBe(400);
    expect((await signUp(from, owner.email)).statusCode).toBe(409);
    // Another client address is not affected.
    expect((await signUp(client(), uniqueEmail('elsewhere'))).statusCode).toBe(201);

    // A refusal did not extend the window: one second before its end the wait is one second.
    t.clock.advance(WINDOW - 1);
    expectExceeded(await signUp(from, fresh), 1);
    t.clock.advance(1);
    expect((await signUp(from, fresh)).statusCode).toBe(201);
    expect(messagesTo(t.config.dataDir, fresh)).toHaveLength(1);
  });
});

describe('POST /password-recoveries: only starts that answer 201 count against the client address', () => {
  it('typos spend nothing; known and unknown addresses count alike; past the limit the identical 429 sends nothing', async () => {
    const from = client();
    const owner = await createPerson(t.ctx);
    await typos(from, '/password-recoveries');

    const recover = (address: string) => post('/password-recoveries', from, emailForm(address));
    expect((await recover(owner.email)).statusCode).toBe(201);
    for (let i = 1; i < MAX; i++) expect((await recover(uniqueEmail('nobody'))).statusCode).toBe(201);
    await waitForCode(t.config.dataDir, owner.email, 1);

    const known = await recover(owner.email);
    const unknown = await recover(uniqueEmail('nobody'));
    expectExceeded(known, WINDOW);
    expectExceeded(unknown, WINDOW);
    expect(known.body).toBe(unknown.body);

    // The refused start sent nothing: a start from elsewhere is the owner's second message.
    expect((await post('/password-recoveries', client(), emailForm(owner.email))).statusCode).toBe(201);
    await waitForCode(t.config.dataDir, owner.email, 2);
    expect(messagesTo(t.config.dataDir, owner.email)).toHaveLength(2);

    t.clock.advance(WINDOW);
    expect((await recover(owner.email)).statusCode).toBe(201);
  });
});

describe('POST /sign-in-methods: only codes sent count against the client address', () => {
  it('typos and a 409 spend nothing; past the limit the next code is 429 and nothing is sent', async () => {
    const from = client();
    const { headers } = await elevatedPerson(t);
    const taken = await createPerson(t.ctx);
    const add = (address: string) => post('/sign-in-methods', from, emailForm(address), headers);

    await typos(from, '/sign-in-methods', {}, headers);
    for (let i = 0; i < MAX + 1; i++)
      expect((await add(taken.email)).json().code).toBe('identity.identifier_taken');

    const addresses = Array.from({ length: MAX }, (_, i) => uniqueEmail(`method-${i}`));
    for (const address of addresses) expect((await add(address)).statusCode).toBe(201);
    const refused = uniqueEmail('method-refused');
    expectExceeded(await add(refused), WINDOW);
    expect(messagesTo(t.config.dataDir, refused)).toHaveLength(0);

    // Tokens and elevations end with the window: a fresh elevation from the same client address.
    t.clock.advance(WINDOW);
    const again = await elevatedPerson(t);
    expect((await post('/sign-in-methods', from, emailForm(refused), again.headers)).statusCode).toBe(201);
    expect(messagesTo(t.config.dataDir, refused)).toHaveLength(1);
  });
});
