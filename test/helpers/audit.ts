import { sql } from 'kysely';
import type { TestApp } from './app.js';

/**
 * How many audit records named `name` concern `target` (an identity, or the factor or method the
 * event is about), read from the table; `{ actor }` counts by who acted instead.
 */
export async function auditCount(t: TestApp, name: string, who: string | { actor: string }): Promise<number> {
  const column = typeof who === 'string' ? sql.ref('target') : sql.ref('actor');
  const value = typeof who === 'string' ? who : who.actor;
  const r = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM audit_records WHERE name = ${name} AND ${column} = ${value}`.execute(
    t.ctx.database.db,
  );
  return r.rows[0].n;
}
