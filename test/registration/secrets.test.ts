import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { challengesOf, confirm, emailForm, lastCode, otherCode, signUp, uniqueEmail } from './helpers.js';

describe('secrets stay out of logs and responses', () => {
  let t: TestApp;

  beforeAll(async () => {
    // debug level, so even the chattiest log lines are searched
    t = await createTestApp({ env: { LOG_LEVEL: 'debug' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a full registration never shows the password, the code or any stored hash', async () => {
    const password = 'Distinctive-Kingfisher-Password-9731';
    const address = uniqueEmail('secret-keeper');
    const responses: LightMyRequestResponse[] = [];

    responses.push(await signUp(t.app, { ...emailForm(address), password }));
    expect(responses[0].statusCode).toBe(201);
    const code = lastCode(t.config.dataDir, address);
    // Refusals along the way: a bad shape, a wrong code, a wrong password with the right code.
    responses.push(await confirm(t.app, { ...emailForm(address), password, code: `${code}0` }));
    responses.push(await confirm(t.app, { ...emailForm(address), password, code: otherCode(code) }));
    responses.push(await confirm(t.app, { ...emailForm(address), password: `${password}-wrong`, code }));
    responses.push(await signUp(t.app, { ...emailForm(address), password: 'Unbelievable' }));
    expect(responses.slice(1).map((r) => r.statusCode)).toEqual([400, 422, 422, 400]);
    const challengeHashes = (await challengesOf(t.db.database.db, address)).map((c) => c.code_hash);
    responses.push(await confirm(t.app, { ...emailForm(address), password, code }));
    expect(responses[responses.length - 1].statusCode).toBe(204);

    const stored = await sql<{ password_hash: string }>`
      SELECT i.password_hash FROM identities i JOIN identifiers f ON f.identity_id = i.id
      WHERE f.value = ${address}`.execute(t.db.database.db);
    const passwordHash = stored.rows[0].password_hash;
    expect(passwordHash).toMatch(/^\$argon2id\$/);

    const logs = t.logs();
    expect(logs.length).toBeGreaterThan(0);
    const secrets = {
      password,
      code,
      passwordHash,
      // the salt and digest parts of the hash, in case one were logged alone
      ...Object.fromEntries(
        passwordHash
          .split('$')
          .slice(-2)
          .map((part, i) => [`hash part ${i}`, part]),
      ),
      ...Object.fromEntries(challengeHashes.map((h, i) => [`code hash ${i}`, h])),
    };
    for (const [what, secret] of Object.entries(secrets)) {
      expect({ what, inLogs: logs.includes(secret) }).toEqual({ what, inLogs: false });
      for (const res of responses) {
        expect({ what, inBody: res.body.includes(secret) }).toEqual({ what, inBody: false });
        expect({ what, inHeaders: JSON.stringify(res.headers).includes(secret) }).toEqual({
          what,
          inHeaders: false,
        });
      }
    }
    // Personal data too: logs carry the masked recipient only.
    expect(logs).not.toContain(address);
    expect(logs).toContain('s***@example.com');
  });
});
