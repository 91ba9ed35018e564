import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, adminRequest } from '../helpers/admin.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/**
 * The admin routes of docs/import.md: the line schema, a streamed NDJSON upload answering its
 * counts and refusals, and the export stream in the same format (no TOTP secret unless asked).
 */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ admin: true, env: { RATE_LIMIT_PROVES_A_PASSWORD: '100000/60' } });
});
afterAll(async () => {
  await t.close();
});

function upload(body: string, query = '', key: string | null = ADMIN_KEY) {
  return t.admin!.inject({
    method: 'POST',
    url: `/admin/v1/imports${query}`,
    headers: { 'content-type': 'application/x-ndjson', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body,
  });
}

describe('admin import and export', () => {
  it('serves the JSON Schema of a line', async () => {
    const res = await adminRequest(t.admin!, 'GET', '/imports/schema');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ $id: 'ImportLine', type: 'object', required: ['identifiers'] });
  });

  it('imports a streamed upload, refuses bad lines with their numbers, and the person signs in', async () => {
    const x = randomUUID().slice(0, 8);
    const email = `up-${x}@example.com`;
    const body = [
      JSON.stringify({
        externalId: `up-${x}`,
        identifiers: [{ type: 'email', value: email, verified: true }],
        password: bcrypt.hashSync('uploaded password', 8),
      }),
      JSON.stringify({
        identifiers: [{ type: 'email', value: `b-${x}@example.com`, verified: true }],
        password: 'plain text',
      }),
    ].join('\n');
    const res = await upload(body);
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({
      lines: 2,
      imported: 1,
      refused: 1,
      refusals: [{ line: 2, reason: 'unknown or malformed password hash' }],
    });
    expect((await upload(body)).json().data).toMatchObject({ imported: 0, skipped: 1, refused: 1 });
    const signIn = await t.app.inject({
      method: 'POST',
      url: '/api/v1/sign-ins',
      payload: { identifierType: 'email', identifier: email, password: 'uploaded password' },
    });
    expect(signIn.statusCode).toBe(201);

    const found = await adminRequest(t.admin!, 'GET', `/identities?externalId=up-${x}`);
    expect(found.statusCode).toBe(200);
    expect(found.json().data).toHaveLength(1);
    expect(found.json().data[0].identifiers[0].value).toBe(email);
    const both = await adminRequest(t.admin!, 'GET', `/identities?externalId=up-${x}&prefix=up`);
    expect(both.statusCode).toBe(400);

    const exported = await adminRequest(t.admin!, 'GET', '/exports/identities');
    expect(exported.statusCode).toBe(200);
    expect(exported.headers['content-type']).toMatch(/application\/x-ndjson/);
    const line = exported.body
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((l) => l.externalId === `up-${x}`);
    expect(line.password).toMatch(/^\$argon2id\$/);
    expect(line.totp).toBeUndefined();
  });

  it('refuses another media type and a missing key', async () => {
    const json = await t.admin!.inject({
      method: 'POST',
      url: '/admin/v1/imports',
      headers: { 'content-type': 'text/plain', authorization: `Bearer ${ADMIN_KEY}` },
      body: '{}',
    });
    expect(json.statusCode).toBe(415);
    expect((await upload('{}', '', null)).statusCode).toBe(401);
  });

  it('a 10 MB line without newline in an upload is refused by its number; the lines around it go in', async () => {
    const x = randomUUID().slice(0, 8);
    const line = (n: number) =>
      JSON.stringify({
        externalId: `big-${x}-${n}`,
        identifiers: [{ type: 'email', value: `big${n}-${x}@example.com`, verified: true }],
      });
    async function* body() {
      yield Buffer.from(`${line(1)}\n`);
      const mb = Buffer.alloc(1024 * 1024, 'x');
      for (let i = 0; i < 10; i++) yield mb;
      yield Buffer.from(`\n${line(3)}\n`);
    }
    const res = await t.admin!.inject({
      method: 'POST',
      url: '/admin/v1/imports',
      headers: { 'content-type': 'application/x-ndjson', authorization: `Bearer ${ADMIN_KEY}` },
      payload: Readable.from(body()),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({
      lines: 3,
      imported: 2,
      refused: 1,
      refusals: [{ line: 2, reason: 'the line is longer than 65536 bytes' }],
    });
  });
});

describe('docs/import.md', () => {
  it('gives the JSON Schema the import validates with', async () => {
    const { readFileSync } = await import('node:fs');
    const { ImportLineSchema } = await import('../../src/features/imports/schemas.js');
    const doc = readFileSync(new URL('../../docs/import.md', import.meta.url), 'utf8');
    const block = /## The JSON Schema of a line\n\n```json\n([\s\S]*?)\n```/.exec(doc)?.[1];
    expect(JSON.parse(block!)).toEqual(JSON.parse(JSON.stringify(ImportLineSchema)));
  });
});
