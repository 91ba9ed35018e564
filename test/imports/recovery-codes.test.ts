import { pbkdf2Sync, randomBytes, randomUUID } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportLines } from '../../src/features/imports/export.js';
import { type ImportRefusal, ImportService } from '../../src/features/imports/service.js';
import { RecoveryCodeService } from '../../src/features/recovery-codes/service.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { completeSignIn, expectIdentical, ticketFor } from '../second-factors/helpers.js';

/**
 * Recovery codes brought by an import (docs/import.md, "Recovery codes"): kept in the source's hash
 * (bcrypt as Devise-based apps keep them, Django's PBKDF2), accepted at the second step as typed,
 * spent once, revoked by a batch issued here; a bad hash refuses the line; the export carries the
 * unused imported ones (never the codes issued here) and they work again in a fresh instance.
 */

let a: TestApp;
let b: TestApp;
const TOTP_SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
beforeAll(async () => {
  const env = { RATE_LIMIT_PROVES_A_PASSWORD: '100000/60' };
  a = await createTestApp({ env });
  b = await createTestApp({ env });
});
afterAll(async () => {
  await a.close();
  await b.close();
});

const django = (code: string) => {
  const salt = randomBytes(9).toString('hex');
  return `pbkdf2_sha256$1000$${salt}$${pbkdf2Sync(code, salt, 1000, 32, 'sha256').toString('base64')}`;
};

async function importInto(t: TestApp, lines: object[] | string[]) {
  const refused: ImportRefusal[] = [];
  async function* from() {
    for (const l of lines) yield typeof l === 'string' ? l.trimEnd() : JSON.stringify(l);
  }
  const counts = await new ImportService({ ...t.ctx, weakHashes: false }).run(
    from(),
    { actor: 'cli' },
    { refused: (r) => void refused.push(r) },
  );
  return { counts, refused };
}

function person(x: string, codes: unknown[]) {
  return {
    email: `rc-${x}@example.com`,
    password: 'imported password',
    line: {
      externalId: `rc-${x}`,
      identifiers: [{ type: 'email', value: `rc-${x}@example.com`, verified: true }],
      password: bcrypt.hashSync('imported password', 4),
      totp: { secret: TOTP_SECRET },
      recoveryCodes: codes,
    },
  };
}

async function useCode(t: TestApp, p: { email: string; password: string }, recoveryCode: string) {
  return completeSignIn(t.app, { secondFactorTicket: await ticketFor(t.app, p), recoveryCode });
}

describe('imported recovery codes', () => {
  it('are accepted as typed, each once; a wrong or spent one is the same refusal', async () => {
    const x = randomUUID().slice(0, 8);
    const p = person(x, [bcrypt.hashSync('a1b2c3d4e5f6a7b8', 4), django('abcd-efgh-jkmn')]);
    expect((await importInto(a, [p.line])).counts).toMatchObject({ imported: 1, refused: 0 });

    expect((await useCode(a, p, 'a1b2c3d4e5f6a7b8')).statusCode).toBe(201);
    expect((await useCode(a, p, 'abcd-efgh-jkmn')).statusCode).toBe(201);
    const spent = await useCode(a, p, 'a1b2c3d4e5f6a7b8');
    const wrong = await useCode(a, p, 'ffffffffffffffff');
    // Compared as typed: the source hashed the code as it showed it.
    const otherCase = await useCode(a, p, 'ABCD-EFGH-JKMN');
    expectIdentical([spent, wrong, otherCase], 401, 'identity.second_factor_refused');
    const rows = await a.ctx.database.db
      .selectFrom('recovery_codes')
      .innerJoin('identities', 'identities.id', 'recovery_codes.identity_id')
      .select(['recovery_codes.imported', 'recovery_codes.used_at'])
      .where('identities.external_id', '=', `rc-${x}`)
      .execute();
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.imported && r.used_at !== null)).toBe(true);
  });

  it('a batch issued here revokes them, and its own codes work', async () => {
    const x = randomUUID().slice(0, 8);
    const p = person(x, [bcrypt.hashSync('1111222233334444', 4)]);
    await importInto(a, [p.line]);
    const id = (
      await a.ctx.database.db
        .selectFrom('identities')
        .select('id')
        .where('external_id', '=', `rc-${x}`)
        .executeTakeFirstOrThrow()
    ).id;
    const batch = await new RecoveryCodeService(a.ctx).issue(id);
    expect((await useCode(a, p, '1111222233334444')).statusCode).toBe(401);
    expect((await useCode(a, p, batch.recoveryCodes[0]!)).statusCode).toBe(201);
    // The export: codes issued here never leave (a keyed hash no other system can check).
    const lines: string[] = [];
    for await (const l of exportLines(a.ctx, { totpSecrets: false })) lines.push(l);
    const mine = JSON.parse(lines.find((l) => l.includes(`rc-${x}@`))!);
    expect(mine.recoveryCodes).toBeUndefined();
  });

  it('a hash no verifier reads refuses the line with its number', async () => {
    const x = randomUUID().slice(0, 8);
    const { counts, refused } = await importInto(a, [person(x, ['$md5$nope']).line]);
    expect(counts).toMatchObject({ imported: 0, refused: 1 });
    expect(refused).toEqual([
      { line: 1, externalId: `rc-${x}`, reason: 'recovery code 1: unknown or malformed hash' },
    ]);
  });

  it('unused imported codes leave with the export and work in a fresh instance', async () => {
    const x = randomUUID().slice(0, 8);
    const p = person(x, [bcrypt.hashSync('5555666677778888', 4), bcrypt.hashSync('9999aaaabbbbcccc', 4)]);
    await importInto(a, [p.line]);
    expect((await useCode(a, p, '5555666677778888')).statusCode).toBe(201);
    const lines: string[] = [];
    for await (const l of exportLines(a.ctx, { totpSecrets: true })) lines.push(l);
    const mine = lines.find((l) => l.includes(`rc-${x}@`))!;
    expect(JSON.parse(mine).recoveryCodes).toHaveLength(1);
    expect((await importInto(b, [mine])).counts).toMatchObject({ imported: 1, refused: 0 });
    expect((await useCode(b, p, '5555666677778888')).statusCode).toBe(401);
    expect((await useCode(b, p, '9999aaaabbbbcccc')).statusCode).toBe(201);
  });
});
