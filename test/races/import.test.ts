import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ImportRefusal, ImportService } from '../../src/features/imports/service.js';
import type { TestApp } from '../helpers/app.js';
import { race } from '../helpers/identities.js';
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
