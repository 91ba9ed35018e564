import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, adminEnv } from '../helpers/admin.js';
import type { TestApp } from '../helpers/app.js';
import { bearer, createPerson, race } from '../helpers/identities.js';
import { ROUNDS, raceApp, scalar } from './support.js';

// A role granted while the identity is erased (docs/decisions.md, "Operators with a role"): the
// grant locks the identity row as the erasure does, so either the grant commits first and the
// erasure removes the role, or the erasure commits first and the grant finds the identity erased
// (409). No round leaves a role on an erased identity. Two grants at once: one row, the last's.
let t: TestApp;

beforeAll(async () => {
  t = await raceApp(adminEnv());
});
afterAll(async () => {
  await t?.close();
});

const adm = (method: 'PUT' | 'POST', url: string, payload?: object) =>
  t.admin!.inject({
    method,
    url: `/admin/v1${url}`,
    headers: bearer(ADMIN_KEY),
    ...(payload ? { payload } : {}),
  });

describe('operator roles under concurrency', () => {
  it('a grant racing an erasure never leaves a role on an erased identity', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await createPerson(t.ctx);
      const [grant, erase] = await race(2, (i) =>
        i === 0
          ? adm('PUT', `/operators/${p.identityId}`, { role: 'support' })
          : adm('POST', `/identities/${p.identityId}/erasures`),
      );
      expect(erase.statusCode, erase.body).toBe(204);
      expect([200, 409], grant.body).toContain(grant.statusCode);
      if (grant.statusCode === 409) expect(grant.json().code).toBe('admin.identity_erased');
      const roles = await scalar(
        t,
        sql`SELECT count(*)::int AS n FROM operator_roles WHERE identity_id = ${p.identityId}`,
      );
      expect(roles, `round ${round}`).toBe(0);
    }
  });

  it('grants at once for one identity leave exactly one row, with one of the roles asked', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const p = await createPerson(t.ctx);
      const roles = ['owner', 'support', 'auditor'] as const;
      const answers = await race(3, (i) => adm('PUT', `/operators/${p.identityId}`, { role: roles[i] }));
      for (const a of answers) expect(a.statusCode, a.body).toBe(200);
      const r = await sql<{
        role: string;
      }>`SELECT role FROM operator_roles WHERE identity_id = ${p.identityId}`.execute(t.ctx.database.db);
      expect(r.rows).toHaveLength(1);
      expect(roles).toContain(r.rows[0].role);
    }
  });
});
