import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { readCheckpoint } from '../../src/features/imports/file.js';

/**
 * `npm run users:import` killed halfway (SIGKILL: no cleanup, whatever transaction was open dies
 * with the connection), then run again with the same command: it resumes after its checkpoint and
 * the database ends with every line once, each identity whole (its two identifiers, factor, link,
 * recovery code, membership, audit record and event) or absent, never half. Against its own fresh
 * database on the PostgreSQL server only: a process of its own cannot share a test's in-memory
 * PGlite, and a file-based PGlite's first start (initdb and every migration) outlasted this suite's
 * budget on the shared test machine, so the PGlite run skips it.
 */

const server = process.env.TEST_DATABASE_URL;
const LINES = 3000;
const BATCH = 100;
let admin: pg.Client | undefined;
let dbName: string | undefined;

afterAll(async () => {
  if (admin && dbName) await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin?.end();
});

function cli(
  path: string,
  env: Record<string, string>,
): { child: ChildProcess; exit: Promise<number | null> } {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/users-import.ts', path, '--batch', String(BATCH)],
    {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout?.resume();
  child.stderr?.resume();
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exit };
}

describe.skipIf(!server)('users:import killed halfway, then run again', () => {
  it(
    'resumes: no duplicate, no half-imported identity, the count equals the file',
    { timeout: 600_000 },
    async () => {
      admin = new pg.Client({ connectionString: server });
      await admin.connect();
      dbName = `import_crash_${randomUUID().slice(0, 8)}`;
      await admin.query(`CREATE DATABASE ${dbName}`);
      const url = new URL(server!);
      url.pathname = `/${dbName}`;
      const dir = mkdtempSync(join(tmpdir(), 'import-crash-'));
      const env = { DATABASE_URL: url.toString(), DATA_DIR: join(dir, 'data') };

      // The schema first (a run with an empty file), then the organization the memberships name.
      writeFileSync(join(dir, 'empty.ndjson'), '');
      expect(await cli(join(dir, 'empty.ndjson'), env).exit).toBe(0);
      const target = new pg.Client({ connectionString: url.toString() });
      await target.connect();
      try {
        const org = randomUUID();
        await target.query(
          `INSERT INTO organizations (id, name, slug, created_by, created_at, updated_at)
         VALUES ($1, 'Acme', 'acme-crash', $2, now(), now())`,
          [org, randomUUID()],
        );
        const password = bcrypt.hashSync('imported password', 4);
        const code = bcrypt.hashSync('abcdabcdabcdabcd', 4);
        const path = join(dir, 'users.ndjson');
        const lines: string[] = [];
        for (let n = 0; n < LINES; n++) {
          lines.push(
            JSON.stringify({
              externalId: `k-${n}`,
              identifiers: [
                { type: 'email', value: `k${n}@example.com`, verified: true },
                { type: 'phone', value: `+336${String(n).padStart(8, '0')}`, verified: false },
              ],
              password,
              totp: { secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP' },
              providerLinks: [{ provider: 'https://idp.example.com', subject: `s-${n}` }],
              recoveryCodes: [code],
              memberships: [{ organizationId: org, role: 'member' }],
            }),
          );
        }
        writeFileSync(path, `${lines.join('\n')}\n`);

        // First run: killed once a third of the file has committed, whatever it is doing then.
        const first = cli(path, env);
        let killedAt: number | undefined;
        for (;;) {
          const line = await readCheckpoint(`${path}.checkpoint`);
          if (line !== undefined && line >= LINES / 3) {
            first.child.kill('SIGKILL');
            killedAt = line;
            break;
          }
          // Waiting for a condition (the child's progress), not for a time to pass.
          const done = await Promise.race([
            first.exit.then(() => true),
            new Promise((r) => setTimeout(() => r(false), 50)),
          ]);
          if (done) break;
        }
        await first.exit;
        expect(killedAt, 'the first run was killed before its end').toBeDefined();
        expect(killedAt!).toBeLessThan(LINES);
        const { rows: between } = await target.query(
          `SELECT count(*)::int AS n FROM identities WHERE external_id LIKE 'k-%'`,
        );
        expect(between[0].n).toBeGreaterThanOrEqual(killedAt!);
        expect(between[0].n).toBeLessThan(LINES);

        // Second run, the same command: resumes after the checkpoint and finishes.
        expect(await cli(path, env).exit).toBe(0);

        const one = async (q: string) => (await target.query(q)).rows[0].n as number;
        expect(await one(`SELECT count(*)::int AS n FROM identities WHERE external_id LIKE 'k-%'`)).toBe(
          LINES,
        );
        expect(
          await one(
            `SELECT count(DISTINCT external_id)::int AS n FROM identities WHERE external_id LIKE 'k-%'`,
          ),
        ).toBe(LINES);
        // Whole or absent: every identity has all its parts, once.
        const half = await one(`
        SELECT count(*)::int AS n FROM identities i WHERE i.external_id LIKE 'k-%' AND (
          (SELECT count(*) FROM identifiers f WHERE f.identity_id = i.id) <> 2
          OR (SELECT count(*) FROM second_factors s WHERE s.identity_id = i.id) <> 1
          OR (SELECT count(*) FROM provider_links l WHERE l.identity_id = i.id) <> 1
          OR (SELECT count(*) FROM recovery_codes c WHERE c.identity_id = i.id) <> 1
          OR (SELECT count(*) FROM organization_memberships m WHERE m.identity_id = i.id) <> 1
          OR (SELECT count(*) FROM audit_records a WHERE a.target = i.id::text AND a.name = 'identity.imported') <> 1
          OR (SELECT count(*) FROM events e WHERE e.identity_id = i.id AND e.type = 'identity.created') <> 1)`);
        expect(half).toBe(0);
        expect(await one(`SELECT count(*)::int AS n FROM identifiers`)).toBe(2 * LINES);
        expect(await one(`SELECT count(*)::int AS n FROM provider_links`)).toBe(LINES);
      } finally {
        await target.end();
      }
    },
  );
});
