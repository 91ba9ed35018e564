import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, createPerson, type Person } from '../helpers/identities.js';
import { messagesTo, waitForCode } from '../helpers/outbox.js';
import { completeSignIn, DEFAULT_POLICY, personWithFactor, totp } from '../second-factors/helpers.js';

/*
 * Issue 45, item 2: the link a sign-in code's message carries (SIGN_IN_LINKS). Opening it signs
 * nobody in; the press of Continue (POST /sign-ins/links) does, in the browser that pressed it; the
 * browser that asked learns where it finished. PostgreSQL when TEST_DATABASE_URL is set, PGlite
 * otherwise.
 */

const CODES = '/api/v1/sign-ins/codes';
const LINKS = '/api/v1/sign-ins/links';
const ORIGIN = 'http://localhost:3000';
const LINK = /(\S+)#\/sign-in\/link\/([0-9a-f-]{36})\/([A-Za-z0-9_-]{43})(?:\s|$)/;

interface Sent {
  id: string;
  code: string;
  token: string;
  url: string;
  /** The asking browser's cookie, as its Cookie header would carry it. */
  cookie: string;
}

/** Asks for a code for `p` and reads the message: the id, the code, the link and the cookie. */
async function sendFor(t: TestApp, p: Person): Promise<Sent> {
  const before = messagesTo(t.config.dataDir, p.email).length;
  const res = await t.app.inject({
    method: 'POST',
    url: CODES,
    payload: { identifierType: 'email', identifier: p.email },
  });
  expect(res.statusCode, res.body).toBe(201);
  const code = await waitForCode(t.config.dataDir, p.email, before + 1);
  const text = messagesTo(t.config.dataDir, p.email)[before].text;
  const match = text.match(LINK);
  if (!match) throw new Error(`no link in: ${text}`);
  const id = res.json().data.signInCodeId;
  expect(match[2]).toBe(id);
  const setCookie = String(res.headers['set-cookie']);
  return { id, code, token: match[3], url: match[0].trim(), cookie: setCookie.split(';')[0] };
}

function lookUp(t: TestApp, s: Pick<Sent, 'id' | 'token'>, cookie?: string): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url: `${LINKS}/lookups`,
    payload: { signInCodeId: s.id, token: s.token },
    headers: cookie ? { cookie } : {},
  });
}

function press(t: TestApp, s: Pick<Sent, 'id' | 'token'>, cookie?: string): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url: LINKS,
    payload: { signInCodeId: s.id, token: s.token },
    headers: cookie ? { cookie } : {},
  });
}

function status(t: TestApp, id: string, cookie?: string): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'GET', url: `${CODES}/${id}/status`, headers: cookie ? { cookie } : {} });
}

function answer(t: TestApp, s: Sent, p: Person): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'POST',
    url: `${CODES}/${s.id}`,
    payload: { identifierType: 'email', identifier: p.email, code: s.code },
  });
}

describe('sign-in links', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { SIGN_IN_CODES: 'email', ACCOUNT_UI: 'on', PUBLIC_ORIGIN: ORIGIN } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('carries the code and a link to the hosted page, and binds the asking browser with an HttpOnly cookie', async () => {
    const p = await createPerson(t.ctx);
    const res = await t.app.inject({
      method: 'POST',
      url: CODES,
      payload: { identifierType: 'email', identifier: p.email },
    });
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(
      /^__Host-sign_in_code=[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=900; HttpOnly; SameSite=Lax; Secure$/,
    );
    await waitForCode(t.config.dataDir, p.email, 1);
    const text = messagesTo(t.config.dataDir, p.email)[0].text;
    expect(text).toContain('Or open this link, then press Continue:');
    expect(text.match(LINK)?.[1]).toBe(`${ORIGIN}/account/`);
    // The cookie names the id it was set for, and only that one.
    expect(cookie).toContain(res.json().data.signInCodeId);
  });

  it('answers an unknown address with the same cookie and no message', async () => {
    const unknown = `nobody-${randomUUID()}@example.com`;
    const res = await t.app.inject({
      method: 'POST',
      url: CODES,
      payload: { identifierType: 'email', identifier: unknown },
    });
    expect(res.statusCode).toBe(201);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^__Host-sign_in_code=[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}; /);
    // Its status is pending, as a real code's is until it is used.
    const st = await status(t, res.json().data.signInCodeId, cookie.split(';')[0]);
    expect(st.statusCode, st.body).toBe(200);
    expect(st.json().data).toEqual({ status: 'pending' });
    expect(messagesTo(t.config.dataDir, unknown)).toHaveLength(0);
  });

  it('shows the masked address before Continue and spends nothing, however often it is opened', async () => {
    const p = await createPerson(t.ctx);
    const s = await sendFor(t, p);
    for (let i = 0; i < 3; i++) {
      const seen = await lookUp(t, s, s.cookie);
      expect(seen.statusCode, seen.body).toBe(200);
      expect(seen.headers['cache-control']).toBe('no-store');
      const data = seen.json().data;
      expect(data).toEqual({
        identifierType: 'email',
        maskedIdentifier: `${p.email[0]}***@${p.email.split('@')[1]}`,
        sameBrowser: true,
        codeExpiresAt: expect.any(String),
      });
      expect(seen.body).not.toContain(p.email);
    }
    expect((await lookUp(t, s)).json().data.sameBrowser).toBe(false);
    // Still live: the code signs in after every look.
    const signedIn = await answer(t, s, p);
    expect(signedIn.statusCode, signedIn.body).toBe(201);
    expect(signedIn.json().data.kind).toBe('session');
  });

  it('signs in the browser that asked when it presses Continue, and tells the asking tab it is done', async () => {
    const p = await createPerson(t.ctx);
    const s = await sendFor(t, p);
    expect((await status(t, s.id, s.cookie)).json().data.status).toBe('pending');
    const res = await press(t, s, s.cookie);
    expect(res.statusCode, res.body).toBe(201);
    const grant = res.json().data;
    expect(grant.kind).toBe('session');
    expect(res.headers['cache-control']).toBe('no-store');
    expect((await status(t, s.id, s.cookie)).json().data.status).toBe('completed');

    // A code sign-in: history `code`, amr otp + email, the code and the link both spent.
    const history = await t.app.inject({
      method: 'GET',
      url: '/api/v1/sign-ins/history',
      headers: bearer(grant.accessToken),
    });
    const entries = history.json().data as { method: string; outcome: string }[];
    expect(entries.filter((e) => e.outcome === 'succeeded').map((e) => e.method)).toEqual(['code']);
    const session = await t.ctx.database.db
      .selectFrom('sessions')
      .select(['method', 'channel'])
      .where('identity_id', '=', p.identityId)
      .executeTakeFirstOrThrow();
    expect(session).toEqual({ method: 'code', channel: 'email' });
    expect((await answer(t, s, p)).statusCode).toBe(401);
    expect((await press(t, s, s.cookie)).statusCode).toBe(401);
  });

  it('signs in another browser only when it presses Continue, and the asking tab learns it finished elsewhere', async () => {
    const p = await createPerson(t.ctx);
    const s = await sendFor(t, p);
    const seen = await lookUp(t, s);
    expect(seen.json().data.sameBrowser).toBe(false);
    const res = await press(t, s);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.kind).toBe('session');
    expect((await status(t, s.id, s.cookie)).json().data.status).toBe('completed_elsewhere');
    // The asking tab receives no session from it: its code is spent with the link.
    expect((await answer(t, s, p)).statusCode).toBe(401);
  });

  it('answers a second-factor ticket when the identity holds a second factor', async () => {
    const { person, factor } = await personWithFactor(t);
    const s = await sendFor(t, person);
    const res = await press(t, s, s.cookie);
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data.kind).toBe('second_factor_required');
    expect(data).not.toHaveProperty('accessToken');
    const second = await completeSignIn(t.app, {
      secondFactorTicket: data.secondFactorTicket,
      code: totp(factor.secret, DEFAULT_POLICY, t.clock.now()),
    });
    expect(second.statusCode, second.body).toBe(201);
  });

  it('refuses identically a wrong token, a spent, replaced, expired or exhausted code, and a disabled identity', async () => {
    const refusals: LightMyRequestResponse[] = [];
    const p = await createPerson(t.ctx);

    const wrong = await sendFor(t, p);
    const other = `${wrong.token.slice(0, -1)}${wrong.token.endsWith('A') ? 'B' : 'A'}`;
    refusals.push(
      await lookUp(t, { id: wrong.id, token: other }),
      await press(t, { id: wrong.id, token: other }),
    );
    // Another code's token does not open this one.
    const second = await sendFor(t, p);
    refusals.push(await press(t, { id: second.id, token: wrong.token }));
    // `wrong` was replaced by `second`.
    refusals.push(await lookUp(t, wrong), await press(t, wrong));

    // Exhausted: five wrong codes end the link too.
    for (let i = 0; i < 5; i++) {
      await t.app.inject({
        method: 'POST',
        url: `${CODES}/${second.id}`,
        payload: {
          identifierType: 'email',
          identifier: p.email,
          code: second.code === '000000' ? '111111' : '000000',
        },
      });
    }
    refusals.push(await press(t, second));

    const q = await createPerson(t.ctx);
    const expiring = await sendFor(t, q);
    t.clock.advance(901);
    refusals.push(await lookUp(t, expiring), await press(t, expiring));

    const r = await createPerson(t.ctx);
    const disabled = await sendFor(t, r);
    await t.ctx.database.db
      .updateTable('identities')
      .set({ disabled_at: t.clock.now() })
      .where('id', '=', r.identityId)
      .execute();
    refusals.push(await press(t, disabled, disabled.cookie));
    refusals.push(await press(t, { id: randomUUID(), token: wrong.token }));

    const [first, ...rest] = refusals;
    expect(first.statusCode).toBe(401);
    expect(first.json().code).toBe('identity.sign_in_refused');
    for (const res of rest) {
      expect(res.statusCode).toBe(401);
      expect(res.body).toBe(first.body);
    }
    const sessions = await t.ctx.database.db
      .selectFrom('sessions')
      .select('id')
      .where('identity_id', 'in', [p.identityId, q.identityId, r.identityId])
      .execute();
    expect(sessions).toHaveLength(0);
  });

  it('tells the status only to the browser that asked', async () => {
    const p = await createPerson(t.ctx);
    const s = await sendFor(t, p);
    const other = await sendFor(t, await createPerson(t.ctx));
    for (const res of [await status(t, s.id), await status(t, s.id, other.cookie)]) {
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('identity.sign_in_refused');
    }
    expect((await status(t, s.id, s.cookie)).statusCode).toBe(200);
    expect((await status(t, 'not-an-id', s.cookie)).statusCode).toBe(400);
  });

  it('refuses a body with anything more, and a token of the wrong shape, without a change', async () => {
    const p = await createPerson(t.ctx);
    const s = await sendFor(t, p);
    const extra = await t.app.inject({
      method: 'POST',
      url: LINKS,
      payload: { signInCodeId: s.id, token: s.token, identityId: p.identityId },
    });
    expect(extra.statusCode).toBe(400);
    expect((await press(t, { id: s.id, token: 'x'.repeat(129) })).statusCode).toBe(400);
    expect((await answer(t, s, p)).statusCode).toBe(201);
  });
});

describe('sign-in links off', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { SIGN_IN_CODES: 'email', ACCOUNT_UI: 'on', SIGN_IN_LINKS: 'off' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends the code without a link or a cookie, and refuses every link route', async () => {
    const p = await createPerson(t.ctx);
    const res = await t.app.inject({
      method: 'POST',
      url: CODES,
      payload: { identifierType: 'email', identifier: p.email },
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers['set-cookie']).toBeUndefined();
    await waitForCode(t.config.dataDir, p.email, 1);
    expect(messagesTo(t.config.dataDir, p.email)[0].text).not.toContain('#/sign-in/link/');
    const id = res.json().data.signInCodeId;
    for (const r of [
      await t.app.inject({
        method: 'POST',
        url: `${LINKS}/lookups`,
        payload: { signInCodeId: id, token: 'a'.repeat(43) },
      }),
      await t.app.inject({
        method: 'POST',
        url: LINKS,
        payload: { signInCodeId: id, token: 'a'.repeat(43) },
      }),
      await status(t, id),
    ]) {
      expect(r.statusCode).toBe(401);
      expect(r.json().code).toBe('identity.sign_in_refused');
    }
  });
});
