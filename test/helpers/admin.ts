import { createHash } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import type { Db } from '../../src/platform/db/database.js';

/** The operator keys a test app with `admin: true` accepts: `ops` and `auditor`. */
export const ADMIN_KEY = 'adm_test-operator-key-0123456789abcdefghijklmnopqrs';
export const OTHER_ADMIN_KEY = 'adm_test-auditor-key-0123456789abcdefghijklmnopqrst';
export const ADMIN_KEY_NAME = 'ops';

export function adminEntry(name: string, key: string): string {
  return `${name}:${createHash('sha256').update(key).digest('hex')}`;
}

/** The admin listener on (it never listens in tests: requests are injected) with two keys. */
export function adminEnv(): Record<string, string> {
  return {
    ADMIN_PORT: '3999',
    ADMIN_API_KEYS: `${adminEntry(ADMIN_KEY_NAME, ADMIN_KEY)},${adminEntry('auditor', OTHER_ADMIN_KEY)}`,
  };
}

/** One request to the admin listener with the `ops` key (or `key`; null sends none). */
export function adminRequest(
  admin: FastifyInstance,
  method: 'GET' | 'POST',
  url: string,
  key: string | null = ADMIN_KEY,
): Promise<LightMyRequestResponse> {
  return admin.inject({
    method,
    url: `/admin/v1${url}`,
    headers: key === null ? {} : { authorization: `Bearer ${key}` },
  });
}

/**
 * Every text, varchar, json, jsonb and text[] column of every table in the schema, searched for
 * each needle: the `table.column: needle` pairs where one still occurs (empty when none is left).
 */
export async function traces(db: Db, needles: string[]): Promise<string[]> {
  const columns = await sql<{ table_name: string; column_name: string }>`
    SELECT c.table_name, c.column_name FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
      AND (c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')
           OR (c.data_type = 'ARRAY' AND c.udt_name IN ('_text', '_varchar')))
    ORDER BY c.table_name, c.column_name`.execute(db);
  if (columns.rows.length < 20) throw new Error('the schema has fewer text columns than expected');
  const found: string[] = [];
  for (const { table_name, column_name } of columns.rows) {
    for (const needle of needles) {
      const r = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM ${sql.table(table_name)}
        WHERE strpos(lower(${sql.ref(column_name)}::text), lower(${needle})) > 0`.execute(db);
      if (r.rows[0].n > 0) found.push(`${table_name}.${column_name}: ${needle}`);
    }
  }
  return found;
}
