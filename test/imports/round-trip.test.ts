import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportLines } from '../../src/features/imports/export.js';
import { ImportService } from '../../src/features/imports/service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import {
  completeSignIn,
  DEFAULT_POLICY,
  personWithFactor,
  ticketFor,
  totp,
} from '../second-factors/helpers.js';

/**
 * The way out (docs/import.md, "From this service"): an identity enrolled here with a password and
 * an authenticator app is exported (TOTP secrets asked for), imported into a fresh instance with
 * its own SECRETS_KEY and database, and signs in there with the same password and the same
 * authenticator. Without the flag, no secret leaves.
 */

let a: TestApp;
let b: TestApp;
beforeAll(async () => {
  a = await createTestApp();
  b = await createTestApp();
});
afterAll(async () => {
  await a.close();
  await b.close();
});

async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of lines) out.push(l);
  return out;
}

describe('export then import into a fresh instance', () => {
  it('signs in there with the same password and the same authenticator', async () => {
    const { person, factor } = await personWithFactor(a);
    const plain = await collect(exportLines(a.ctx, { totpSecrets: false }));
    const line = (ls: string[]) => JSON.parse(ls.find((l) => l.includes(person.email))!);
    expect(line(plain).totp).toBeUndefined();
    expect(line(plain).password).toMatch(/^\$argon2id\$/);

    const lines = await collect(exportLines(a.ctx, { totpSecrets: true }));
    const exported = line(lines);
    expect(exported).toMatchObject({
      externalId: person.identityId,
      identifiers: [{ type: 'email', value: person.email, verified: true }],
      totp: { secret: factor.secret, algorithm: 'SHA1', digits: 6, period: 30 },
    });

    const into = new ImportService({ ...b.ctx, weakHashes: false });
    async function* source() {
      for (const l of lines) yield l.trimEnd();
    }
    const counts = await into.run(source(), { actor: 'cli' });
    expect(counts).toMatchObject({ imported: lines.length, refused: 0 });

    const ticket = await ticketFor(b.app, person);
    const done = await completeSignIn(b.app, {
      secondFactorTicket: ticket,
      code: totp(factor.secret, DEFAULT_POLICY, b.clock.now()),
    });
    expect(done.statusCode).toBe(201);
    expect(done.json().data.kind).toBe('session');
  });
});
