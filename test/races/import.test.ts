import { randomUUID } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ImportRefusal, ImportService } from '../../src/features/imports/service.js';
import type { TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
import { completeSignIn, ticketFor } from '../second-factors/helpers.js';
import { ROUNDS, raceApp, scalar } from './support.js';

// Two imports at once claiming the same addresses (under other externalIds), and two runs of one
// file at once: the batches' lookups pass for both, the unique indexes decide, the losing batch is
// replayed line by line, and each address and each externalId ends on exactly one identity, the
// other line refused with its reason (docs/decisions.md, "Imported password hashes, import and export").
let t: TestApp;
let service: ImportService;

beforeAll(async () => {
  t = await raceApp();
  service = new ImportService({ ...t.ctx, weakHashes: false });
});
afterAll(async () => {
  await t?.close();
});

async function* from(lines: object[]) {
  for (const l of lines) yield JSON.stringify(l);
}

describe('concurrent imports', () => {
  it(`the same addresses under other externalIds: one identity each, the rest refused (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const x = randomUUID().slice(0, 8);
      const lines = (side: string) =>
        Array.from({ length: 6 }, (_, n) => ({
          externalId: `${side}-${x}-${n}`,
          identifiers: [{ type: 'email', value: `r${n}-${x}@example.com`, verified: true }],
        }));
      const refused: ImportRefusal[] = [];
      const counts = await race(2, (i) =>
        service.run(
          from(lines(i === 0 ? 'a' : 'b')),
          { actor: 'cli', batchSize: 6 },
          { refused: (r) => void refused.push(r) },
        ),
      );
      expect(counts[0]!.imported + counts[1]!.imported).toBe(6);
      expect(refused).toHaveLength(6);
      const holders = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM identifiers WHERE value LIKE ${`r%-${x}@example.com`} AND removed_at IS NULL`,
      );
      expect(holders).toBe(6);
      const identities = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM identities WHERE external_id LIKE ${`%-${x}-%`}`,
      );
      expect(identities).toBe(6);
    }
  }, 120_000);

  it(`one file run twice at once: each externalId once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const x = randomUUID().slice(0, 8);
      const lines = Array.from({ length: 4 }, (_, n) => ({
        externalId: `same-${x}-${n}`,
        identifiers: [{ type: 'email', value: `s${n}-${x}@example.com`, verified: true }],
      }));
      const counts = await race(2, () => service.run(from(lines), { actor: 'cli', batchSize: 4 }));
      expect(counts[0]!.imported + counts[1]!.imported).toBe(4);
      const identities = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM identities WHERE external_id LIKE ${`same-${x}-%`}`,
      );
      expect(identities).toBe(4);
      const audited = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM audit_records WHERE name = 'identity.imported' AND details->>'externalId' LIKE ${`same-${x}-%`}`,
      );
      expect(audited).toBe(4);
    }
  }, 120_000);
});

// One imported recovery code used by two second steps at once (two tickets of one identity): the
// verify runs outside any row of the code, the compare-and-set on used_at decides, exactly one
// session opens (docs/decisions.md, "Imported recovery codes").
describe('one imported recovery code used twice at once', () => {
  it(`exactly one 201, the other the ordinary refusal (${Math.min(ROUNDS, 5)} rounds)`, async () => {
    for (let round = 0; round < Math.min(ROUNDS, 5); round++) {
      const x = randomUUID().slice(0, 8);
      const email = `rcr-${x}@example.com`;
      const counts = await service.run(
        from([
          {
            externalId: `rcr-${x}`,
            identifiers: [{ type: 'email', value: email, verified: true }],
            password: bcrypt.hashSync('imported password', 4),
            totp: { secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP' },
            recoveryCodes: [bcrypt.hashSync('abcdabcdabcdabcd', 4)],
          },
        ]),
        { actor: 'cli' },
      );
      expect(counts.imported).toBe(1);
      const p = { email, password: 'imported password' };
      const tickets = [await ticketFor(t.app, p), await ticketFor(t.app, p)];
      const answers = await race(2, (i) =>
        completeSignIn(t.app, { secondFactorTicket: tickets[i]!, recoveryCode: 'abcdabcdabcdabcd' }),
      );
      expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 401]);
      expect(
        await scalar(
          t,
          sql`SELECT count(*)::int AS n FROM recovery_codes c JOIN identities i ON i.id = c.identity_id
              WHERE i.external_id = ${`rcr-${x}`} AND c.used_at IS NOT NULL`,
        ),
      ).toBe(1);
    }
  });
});
