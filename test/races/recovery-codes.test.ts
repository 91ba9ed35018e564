import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normaliseRecoveryCode } from '../../src/features/recovery-codes/service.js';
import type { TestApp } from '../helpers/app.js';
import { auditCount } from '../helpers/audit.js';
import { elevatedPerson } from '../helpers/elevation.js';
import { race } from '../helpers/identities.js';
import { get, post } from '../second-factors/helpers.js';
import { ROUNDS, raceApp, statuses, times } from './support.js';

// Race 4 (interface 3, 4.7): concurrent recovery-code issuances of one identity.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp();
});
afterAll(async () => {
  await t?.close();
});

const ISSUANCES = 10;

interface CodeRow {
  batch_id: string;
  code_hash: string;
  used: boolean;
  revoked: boolean;
}

describe('concurrent recovery-code issuances', () => {
  it(`10 at once: all 201, exactly one live batch of ten, every earlier code revoked (${ROUNDS} rounds)`, async () => {
    const db = t.ctx.database.db;
    const hashOf = (code: string) => t.ctx.codes.hash(normaliseRecoveryCode(code));
    for (let round = 0; round < ROUNDS; round++) {
      const { person, grant, elevation } = await elevatedPerson(t);
      const call = { token: grant.accessToken, elevation };
      // An earlier batch, one of whose codes was already used: it keeps its used state.
      const first = await post(t.app, '/recovery-codes', call);
      expect(first.statusCode, first.body).toBe(201);
      const earlier = first.json().data.recoveryCodes as string[];
      await sql`UPDATE recovery_codes SET used_at = ${t.clock.now()}
                WHERE identity_id = ${person.identityId} AND code_hash = ${hashOf(earlier[0])}`.execute(db);

      const answers = await race(ISSUANCES, () => post(t.app, '/recovery-codes', call));

      expect(statuses(answers), `round ${round}`).toEqual(times(ISSUANCES, 201));
      const batches = answers.map((r) => r.json().data.recoveryCodes as string[]);
      for (const b of batches) {
        expect(b).toHaveLength(10);
        expect(new Set(b).size).toBe(10);
        for (const c of b) expect(c).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/);
      }

      const rows = (
        await sql<CodeRow>`
          SELECT batch_id, code_hash, used_at IS NOT NULL AS used, revoked_at IS NOT NULL AS revoked
          FROM recovery_codes WHERE identity_id = ${person.identityId}`.execute(db)
      ).rows;
      // Eleven batches of ten were written, none lost and none merged.
      expect(rows).toHaveLength(10 * (ISSUANCES + 1));
      expect(new Set(rows.map((r) => r.batch_id)).size).toBe(ISSUANCES + 1);
      const live = rows.filter((r) => !r.used && !r.revoked);
      expect(live).toHaveLength(10);
      expect(new Set(live.map((r) => r.batch_id)).size).toBe(1);

      // The live batch is exactly one answer's codes (the last to commit); all the others are revoked.
      const liveHashes = new Set(live.map((r) => r.code_hash));
      const winners = batches.filter((b) => b.every((c) => liveHashes.has(hashOf(c))));
      expect(winners).toHaveLength(1);
      const byHash = new Map(rows.map((r) => [r.code_hash, r]));
      for (const b of batches) {
        if (b === winners[0]) continue;
        for (const c of b) expect(byHash.get(hashOf(c))).toMatchObject({ used: false, revoked: true });
      }
      // The earlier batch: its used code stays used (never revoked), the rest are revoked.
      expect(byHash.get(hashOf(earlier[0]))).toMatchObject({ used: true, revoked: false });
      for (const c of earlier.slice(1))
        expect(byHash.get(hashOf(c))).toMatchObject({ used: false, revoked: true });

      expect(await auditCount(t, 'identity.recovery_codes.issued', person.identityId)).toBe(ISSUANCES + 1);
      const status = (await get(t.app, '/recovery-codes', grant.accessToken)).json().data;
      expect(status.remaining).toBe(10);
    }
  });
});
