import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import {
  CONFIRMATIONS,
  challengesOf,
  confirm,
  emailForm,
  identifierRow,
  lastCode,
  otherCode,
  outbox,
  PASSWORD,
  SIGN_UPS,
  shape,
  signUp,
  uniqueEmail,
} from './helpers.js';

const PROBLEM_JSON = 'application/problem+json; charset=utf-8';

/** Status, media type and the exact bytes every cause of one refusal family must share. */
function expectIdenticalRefusals(
  responses: Record<string, LightMyRequestResponse>,
  status: number,
  code: string,
) {
  const entries = Object.entries(responses);
  expect(entries.length).toBeGreaterThan(1);
  const [, first] = entries[0];
  expect(first.statusCode).toBe(status);
  expect(first.headers['content-type']).toBe(PROBLEM_JSON);
  expect(first.json().code).toBe(code);
  for (const [cause, res] of entries) {
    expect({ cause, ...shape(res) }).toEqual({ cause, ...shape(first) });
  }
}

async function identityOf(t: TestApp, address: string) {
  const [row] = await identifierRow(t.db.database.db, address);
  const r = await sql<{
    id: string;
    password_hash: string | null;
    failed_attempts: number;
    locked_until: Date | null;
  }>`
    SELECT id, password_hash, failed_attempts, locked_until FROM identities WHERE id = ${row.identity_id}`.execute(
    t.db.database.db,
  );
  return { identifier: row, identity: r.rows[0] };
}

describe('registration refusals (default configuration)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Signs an address up and returns the code the outbox received for it. */
  async function registered(label: string, password = PASSWORD) {
    const address = uniqueEmail(label);
    const res = await signUp(t.app, { ...emailForm(address), password });
    expect(res.statusCode).toBe(201);
    return { address, code: lastCode(t.config.dataDir, address) };
  }

  it('every failed confirmation answers the identical 422 identity.verification_refused', async () => {
    const refusals: Record<string, LightMyRequestResponse> = {};

    const a = await registered('wrong-code');
    refusals['wrong code'] = await confirm(t.app, {
      ...emailForm(a.address),
      password: PASSWORD,
      code: otherCode(a.code),
    });

    const b = await registered('wrong-password');
    refusals['wrong password, correct code'] = await confirm(t.app, {
      ...emailForm(b.address),
      password: 'not-the-registration-password',
      code: b.code,
    });

    refusals['address nobody registered'] = await confirm(t.app, {
      ...emailForm(uniqueEmail('nobody')),
      password: PASSWORD,
      code: '123456',
    });

    const c = await registered('spent');
    expect(
      (await confirm(t.app, { ...emailForm(c.address), password: PASSWORD, code: c.code })).statusCode,
    ).toBe(204);
    refusals['spent code'] = await confirm(t.app, {
      ...emailForm(c.address),
      password: PASSWORD,
      code: c.code,
    });

    const d = await registered('exhausted');
    for (let i = 1; i <= 5; i++) {
      refusals[`wrong guess ${i}`] = await confirm(t.app, {
        ...emailForm(d.address),
        password: PASSWORD,
        code: otherCode(d.code),
      });
    }
    refusals['exhausted challenge, correct code'] = await confirm(t.app, {
      ...emailForm(d.address),
      password: PASSWORD,
      code: d.code,
    });

    const e = await registered('expired');
    t.clock.advance(t.config.lifetimes.challenge + 1);
    refusals['expired code'] = await confirm(t.app, {
      ...emailForm(e.address),
      password: PASSWORD,
      code: e.code,
    });

    expectIdenticalRefusals(refusals, 422, 'identity.verification_refused');
    expect(Object.keys(refusals['wrong code'].json()).sort()).toEqual(
      ['code', 'detail', 'retryable', 'status', 'title', 'type'].sort(),
    );

    // None of them verified anything.
    for (const address of [a.address, b.address, d.address, e.address]) {
      expect((await identifierRow(t.db.database.db, address))[0].verified_at).toBeNull();
    }
    // A wrong password with the right code only cost an attempt: the owner still confirms.
    // (b's challenge was issued before the clock moved past its lifetime, so register b anew.)
    const b2 = await registered('wrong-password-then-right');
    expect(
      (
        await confirm(t.app, {
          ...emailForm(b2.address),
          password: 'not-the-registration-password',
          code: b2.code,
        })
      ).statusCode,
    ).toBe(422);
    expect(
      (await confirm(t.app, { ...emailForm(b2.address), password: PASSWORD, code: b2.code })).statusCode,
    ).toBe(204);
  });

  it('a verified address answers 409 identity.identifier_taken, whatever the password or case', async () => {
    const { address, code } = await registered('taken');
    expect((await confirm(t.app, { ...emailForm(address), password: PASSWORD, code })).statusCode).toBe(204);
    const sent = outbox(t.config.dataDir).length;
    const refusals = {
      'same password': await signUp(t.app, { ...emailForm(address), password: PASSWORD }),
      'other password': await signUp(t.app, {
        ...emailForm(address),
        password: 'an-entirely-other-password',
      }),
      'upper case': await signUp(t.app, { ...emailForm(address.toUpperCase()), password: PASSWORD }),
    };
    expectIdenticalRefusals(refusals, 409, 'identity.identifier_taken');
    expect(outbox(t.config.dataDir).length).toBe(sent);
    expect(await challengesOf(t.db.database.db, address)).toHaveLength(1);
  });

  it('an identifier that fails normalisation answers the identical 422 identity.identifier_unusable on both routes', async () => {
    const sent = outbox(t.config.dataDir).length;
    const bodies: Record<string, object> = {
      'email with a leading space': emailForm(' ada@example.com'),
      'email with a trailing space': emailForm('ada@example.com '),
      'email without a dotted domain': emailForm('ada@localhost'),
      'not an address': emailForm('ada.example.com'),
      'phone invalid for its country': { identifierType: 'phone', identifier: '12', country: 'FR' },
      'phone of another country': { identifierType: 'phone', identifier: '06 12 34 56 78', country: 'US' },
    };
    const refusals: Record<string, LightMyRequestResponse> = {};
    for (const [cause, form] of Object.entries(bodies)) {
      refusals[`sign-up: ${cause}`] = await signUp(t.app, { ...form, password: PASSWORD });
      refusals[`confirmation: ${cause}`] = await confirm(t.app, {
        ...form,
        password: PASSWORD,
        code: '123456',
      });
    }
    expectIdenticalRefusals(refusals, 422, 'identity.identifier_unusable');
    expect(outbox(t.config.dataDir).length).toBe(sent);
    expect(await identifierRow(t.db.database.db, 'ada@localhost')).toHaveLength(0);
  });

  it('refuses malformed sign-ups with 400 validation.failed, never echoing the password or the address', async () => {
    const address = uniqueEmail('echo-check');
    const cases: Array<[string, Record<string, unknown>, string, string]> = [
      // [cause, body, field, code]
      [
        'password of 11 characters',
        { ...emailForm(address), password: 'Zq7!Zq7!Zq7' },
        'password',
        'minLength',
      ],
      [
        'password of 201 characters',
        { ...emailForm(address), password: `Q${'x'.repeat(200)}` },
        'password',
        'maxLength',
      ],
      // In the bundled breach list (zxcvbn's common passwords): named as breached, not as weak.
      [
        'common password',
        { ...emailForm(address), password: 'unbelievable' },
        'password',
        'breached_password',
      ],
      [
        'guessable password',
        { ...emailForm(address), password: 'password12345' },
        'password',
        'weak_password',
      ],
      [
        'password built on the address',
        { ...emailForm(address), password: `${address}2024` },
        'password',
        'weak_password',
      ],
      ['missing password', { ...emailForm(address) }, 'password', 'required'],
      [
        'unknown property',
        { ...emailForm(address), password: PASSWORD, role: 'admin' },
        'role',
        'additionalProperties',
      ],
      ['country with an email', { ...emailForm(address), country: 'FR', password: PASSWORD }, '', ''],
      [
        'phone without a country',
        { identifierType: 'phone', identifier: '0612345678', password: PASSWORD },
        '',
        '',
      ],
      ['unknown identifier type', { identifierType: 'fax', identifier: address, password: PASSWORD }, '', ''],
      [
        'lower-case country',
        { identifierType: 'phone', identifier: '0612345678', country: 'fr', password: PASSWORD },
        'country',
        'pattern',
      ],
      [
        'identifier over 320 characters',
        { ...emailForm(`${'a'.repeat(320)}@example.com`), password: PASSWORD },
        'identifier',
        'maxLength',
      ],
      ['password of the wrong type', { ...emailForm(address), password: 123456789012 }, 'password', 'type'],
    ];
    for (const [cause, body, field, code] of cases) {
      const res = await signUp(t.app, body);
      expect({ cause, status: res.statusCode }).toEqual({ cause, status: 400 });
      expect(res.headers['content-type']).toBe(PROBLEM_JSON);
      const problem = res.json();
      expect(problem.code).toBe('validation.failed');
      expect(problem.errors.length).toBeGreaterThan(0);
      for (const entry of problem.errors) {
        expect(Object.keys(entry).sort()).toEqual(['code', 'field', 'location', 'message']);
        expect(entry.location).toBe('body');
      }
      if (field) expect(problem.errors).toContainEqual(expect.objectContaining({ field, code }));
      expect(res.body).not.toContain(address);
      expect(res.body.toLowerCase()).not.toContain('@example.com');
      if (typeof body.password === 'string') expect(res.body).not.toContain(body.password);
    }
    expect(await identifierRow(t.db.database.db, address)).toHaveLength(0);
    expect(outbox(t.config.dataDir).filter((m) => m.to === address)).toHaveLength(0);
  });

  it('refuses a malformed code with 400 before any lookup: nothing is charged and the real code still works', async () => {
    const { address, code } = await registered('code-shape');
    const badCodes: unknown[] = [
      '12345',
      '1234567',
      ' 123456',
      '123456 ',
      'abcdef',
      '12345a',
      '',
      123456,
      null,
    ];
    for (const bad of badCodes) {
      const res = await confirm(t.app, { ...emailForm(address), password: PASSWORD, code: bad });
      expect({ bad, status: res.statusCode }).toEqual({ bad, status: 400 });
      expect(res.json().code).toBe('validation.failed');
      expect(res.json().errors).toContainEqual(expect.objectContaining({ field: 'code' }));
      expect(res.body).not.toContain(PASSWORD);
      expect(res.body).not.toContain(address);
    }
    for (const body of [
      { ...emailForm(address), password: PASSWORD },
      { ...emailForm(address), code },
      { ...emailForm(address), password: PASSWORD, code, extra: true },
      { ...emailForm(address), password: '', code },
    ]) {
      const res = await confirm(t.app, body);
      expect(res.statusCode).toBe(400);
      expect(res.body).not.toContain(PASSWORD);
    }
    const [challenge] = await challengesOf(t.db.database.db, address);
    expect(challenge.attempts).toBe(0);
    expect((await identityOf(t, address)).identity.failed_attempts).toBe(0);
    expect((await confirm(t.app, { ...emailForm(address), password: PASSWORD, code })).statusCode).toBe(204);
  });

  it('a stranger re-registering the address leaves the owner code valid, and the owner confirm revokes the stranger', async () => {
    const address = uniqueEmail('contested');
    const owner = await signUp(t.app, { ...emailForm(address), password: PASSWORD });
    const ownerCode = lastCode(t.config.dataDir, address);
    const strangerPassword = 'stranger-wants-this-address';
    const stranger = await signUp(t.app, { ...emailForm(address), password: strangerPassword });
    const strangerCode = lastCode(t.config.dataDir, address);
    // First and repeat registration answer the same bytes (the clock has not moved).
    expect(owner.statusCode).toBe(201);
    expect(shape(stranger)).toEqual(shape(owner));
    expect(await identifierRow(t.db.database.db, address)).toHaveLength(1);
    expect(await challengesOf(t.db.database.db, address)).toHaveLength(2);

    // Codes and passwords do not mix across registrations.
    const mixed = await confirm(t.app, {
      ...emailForm(address),
      password: strangerPassword,
      code: ownerCode,
    });
    expect(mixed.statusCode).toBe(422);

    const ok = await confirm(t.app, { ...emailForm(address), password: PASSWORD, code: ownerCode });
    expect(ok.statusCode).toBe(204);
    const { identity } = await identityOf(t, address);
    expect(await t.ctx.passwords.verify(identity.password_hash!, PASSWORD)).toBe(true);
    expect(await t.ctx.passwords.verify(identity.password_hash!, strangerPassword)).toBe(false);

    const challenges = await challengesOf(t.db.database.db, address);
    const state = (code: string) => {
      const c = challenges.find((x) => x.code_hash === t.ctx.codes.hash(code))!;
      return { spent: c.spent_at !== null, revoked: c.revoked_at !== null };
    };
    expect(state(ownerCode)).toEqual({ spent: true, revoked: false });
    expect(state(strangerCode)).toEqual({ spent: false, revoked: true });
    const late = await confirm(t.app, {
      ...emailForm(address),
      password: strangerPassword,
      code: strangerCode,
    });
    expect(late.statusCode).toBe(422);
    expect(late.json().code).toBe('identity.verification_refused');
  });

  it('5 wrong guesses across two challenges lock the account once, and the correct code still confirms', async () => {
    const address = uniqueEmail('locked');
    expect((await signUp(t.app, { ...emailForm(address), password: PASSWORD })).statusCode).toBe(201);
    const firstCode = lastCode(t.config.dataDir, address);
    const wrong = (avoid: string[]) => {
      let c = otherCode(avoid[0]);
      while (avoid.includes(c)) c = otherCode(c);
      return c;
    };
    const refusals: Record<string, LightMyRequestResponse> = {};
    for (let i = 1; i <= 3; i++) {
      refusals[`guess ${i}`] = await confirm(t.app, {
        ...emailForm(address),
        password: PASSWORD,
        code: wrong([firstCode]),
      });
    }
    // A second later, so the two challenges have a definite order by created_at.
    t.clock.advance(1);
    expect((await signUp(t.app, { ...emailForm(address), password: PASSWORD })).statusCode).toBe(201);
    const secondCode = lastCode(t.config.dataDir, address);
    const { identity } = await identityOf(t, address);
    expect(identity.locked_until).toBeNull();
    for (let i = 4; i <= 5; i++) {
      refusals[`guess ${i}`] = await confirm(t.app, {
        ...emailForm(address),
        password: PASSWORD,
        code: wrong([firstCode, secondCode]),
      });
    }
    const locked = (await identityOf(t, address)).identity;
    expect(locked.locked_until).not.toBeNull();
    expect(new Date(locked.locked_until!).getTime()).toBeGreaterThan(t.clock.now().getTime());
    expect(await auditCount(t, 'identity.account.locked', identity.id)).toBe(1);

    // Still the same answer while locked, and still audited only once.
    refusals['guess 6, locked'] = await confirm(t.app, {
      ...emailForm(address),
      password: PASSWORD,
      code: wrong([firstCode, secondCode]),
    });
    expectIdenticalRefusals(refusals, 422, 'identity.verification_refused');
    expect(await auditCount(t, 'identity.account.locked', identity.id)).toBe(1);
    // The first challenge took all five guesses; the second took the last three.
    expect((await challengesOf(t.db.database.db, address)).map((c) => c.attempts)).toEqual([5, 3]);

    const ok = await confirm(t.app, { ...emailForm(address), password: PASSWORD, code: secondCode });
    expect(ok.statusCode).toBe(204);
    expect((await identityOf(t, address)).identifier.verified_at).not.toBeNull();
    expect(await auditCount(t, 'identity.identifier.verified', identity.id)).toBe(1);
  });

  it('answers 415 for a body that is not JSON and 413 for one over the limit', async () => {
    for (const url of [SIGN_UPS, CONFIRMATIONS]) {
      const text = await t.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'text/plain' },
        payload: 'hi',
      });
      expect(text.statusCode).toBe(415);
      expect(text.json().code).toBe('request.unsupported_media_type');
      const big = await t.app.inject({
        method: 'POST',
        url,
        payload: { ...emailForm(uniqueEmail()), password: 'x'.repeat(20_000) },
      });
      expect(big.statusCode).toBe(413);
      expect(big.json().code).toBe('request.body_too_large');
    }
  });
});

describe('configured code formats', () => {
  it.each([
    ['alphabetic', '6', /^[A-Z]{6}$/],
    ['alphanumeric', '8', /^[A-Z0-9]{8}$/],
  ])('%s codes of length %s confirm in lower case', async (format, length, issued) => {
    const t = await createTestApp({
      env: { VERIFICATION_CODE_FORMAT: format, VERIFICATION_CODE_LENGTH: length },
    });
    try {
      const address = uniqueEmail(format);
      expect((await signUp(t.app, { ...emailForm(address), password: PASSWORD })).statusCode).toBe(201);
      const code = lastCode(t.config.dataDir, address, Number(length));
      expect(code).toMatch(issued);
      // Wrong shapes for this format are refused before any lookup.
      for (const bad of ['12345!', `${code} `, code.slice(1), `${code}A`]) {
        const res = await confirm(t.app, { ...emailForm(address), password: PASSWORD, code: bad });
        expect({ bad, status: res.statusCode }).toEqual({ bad, status: 400 });
      }
      const ok = await confirm(t.app, {
        ...emailForm(address),
        password: PASSWORD,
        code: code.toLowerCase(),
      });
      expect(ok.statusCode).toBe(204);
    } finally {
      await t.close();
    }
  });

  it('alphabetic codes refuse digits with 400', async () => {
    const t = await createTestApp({ env: { VERIFICATION_CODE_FORMAT: 'alphabetic' } });
    try {
      const res = await confirm(t.app, { ...emailForm(uniqueEmail()), password: PASSWORD, code: '123456' });
      expect(res.statusCode).toBe(400);
    } finally {
      await t.close();
    }
  });
});

describe('no channel for the identifier', () => {
  it('production without SMTP or SMS answers 422 identity.identifier_channel_unavailable and writes nothing', async () => {
    const t = await createTestApp({
      env: { NODE_ENV: 'production', PUBLIC_ORIGIN: 'https://id.example', ARGON2_MEMORY_KIB: '19456' },
    });
    try {
      expect(t.config.production).toBe(true);
      expect(t.config.smtpUrl).toBeUndefined();
      const address = uniqueEmail('no-channel');
      const refusals = {
        email: await signUp(t.app, { ...emailForm(address), password: PASSWORD }),
        phone: await signUp(t.app, {
          identifierType: 'phone',
          identifier: '06 12 34 56 78',
          country: 'FR',
          password: PASSWORD,
        }),
      };
      expectIdenticalRefusals(refusals, 422, 'identity.identifier_channel_unavailable');
      const n = await sql<{ n: unknown }>`SELECT count(*) AS n FROM identities`.execute(t.db.database.db);
      expect(Number(n.rows[0].n)).toBe(0);
      // The development outbox is never used in production.
      expect(outbox(t.config.dataDir)).toHaveLength(0);
      // Normalisation comes first: an unusable address is unusable whatever the channels.
      const unusable = await signUp(t.app, { ...emailForm(` ${address}`), password: PASSWORD });
      expect(unusable.json().code).toBe('identity.identifier_unusable');
    } finally {
      await t.close();
    }
  });
});

describe('rate limit', () => {
  it('the sign-up beyond SENDS_A_MESSAGE is 429 with Retry-After and sends nothing', async () => {
    const t = await createTestApp({ env: { RATE_LIMIT_SENDS_A_MESSAGE: '2/60' } });
    try {
      const addresses = [uniqueEmail('rl1'), uniqueEmail('rl2'), uniqueEmail('rl3')];
      const answers: LightMyRequestResponse[] = [];
      for (const address of addresses)
        answers.push(await signUp(t.app, { ...emailForm(address), password: PASSWORD }));
      expect(answers.map((r) => r.statusCode)).toEqual([201, 201, 429]);
      const refused = answers[2];
      expect(refused.headers['content-type']).toBe(PROBLEM_JSON);
      expect(refused.json()).toMatchObject({ status: 429, code: 'rate_limit.exceeded', retryable: true });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(outbox(t.config.dataDir).map((m) => m.to)).toEqual(addresses.slice(0, 2));
      expect(await identifierRow(t.db.database.db, addresses[2])).toHaveLength(0);
      // Confirmations are counted on their own route.
      const code = lastCode(t.config.dataDir, addresses[0]);
      expect(
        (await confirm(t.app, { ...emailForm(addresses[0]), password: PASSWORD, code })).statusCode,
      ).toBe(204);
    } finally {
      await t.close();
    }
  });
});
