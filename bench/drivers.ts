/**
 * npm run bench:drivers: the two PostgreSQL drivers side by side on the statements the hot paths
 * run, with no HTTP in front: `pg` (node-postgres, the service's driver, each parameterised
 * statement prepared per connection) against `postgres` (postgres.js, which prepares statements
 * itself and pipelines queries on a busy connection) through the kysely-postgres-js dialect.
 *
 *   guard:   the session read of GET /session/context (one statement);
 *   renewal: POST /sign-ins/renewals' one statement (the rotation, which answers the token's owner).
 *
 * Each driver runs the service's own repository functions, from BENCH_CONNECTIONS callers (50),
 * at pool sizes 20 (the service's default) and 50, in two rounds of opposite order. Prints a
 * Markdown table for bench/analysis.md.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import {
  CompiledQuery,
  type DatabaseConnection,
  Kysely,
  type Driver as KyselyDriver,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
} from 'kysely';
import { PostgresJSDialect } from 'kysely-postgres-js';
import postgres from 'postgres';
import { renewSession, sessionContext } from '../src/features/sessions/repository.js';
import { type Db, openDatabase } from '../src/platform/db/database.js';
import { migrate } from '../src/platform/db/migrator.js';
import type { DB } from '../src/platform/db/schema.js';
import { adminQuery } from '../test/helpers/database.js';

const SERVER = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CALLERS = Number(process.env.BENCH_CONNECTIONS ?? 50);

type Driver = 'pg' | 'postgres.js' | 'postgres.js pipelined';

/**
 * kysely-postgres-js reserves a connection for every query and runs it unprepared (`unsafe`),
 * which forgoes both things postgres.js is chosen for. This one sends each statement outside a
 * transaction to the shared pool, prepared, so postgres.js may pipeline it on a busy connection;
 * only a transaction reserves a connection. What the pipelining driver can do at best.
 */
class PipelinedDriver implements KyselyDriver {
  constructor(private readonly sql: postgres.Sql) {}
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return new PipelinedConnection(this.sql);
  }
  async beginTransaction(c: DatabaseConnection): Promise<void> {
    await (c as PipelinedConnection).begin();
  }
  async commitTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('COMMIT'));
  }
  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('ROLLBACK'));
  }
  async releaseConnection(c: DatabaseConnection): Promise<void> {
    (c as PipelinedConnection).release();
  }
  async destroy(): Promise<void> {
    await this.sql.end();
  }
}

class PipelinedConnection implements DatabaseConnection {
  #reserved: postgres.ReservedSql | undefined;
  constructor(private readonly sql: postgres.Sql) {}
  async begin(): Promise<void> {
    this.#reserved = await this.sql.reserve();
    await this.#reserved.unsafe('BEGIN');
  }
  release(): void {
    this.#reserved?.release();
    this.#reserved = undefined;
  }
  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    const on = this.#reserved ?? this.sql;
    const result = await on.unsafe(q.sql, [...q.parameters] as postgres.ParameterOrJSON<never>[], {
      prepare: q.parameters.length > 0,
    });
    return { rows: Array.from(result) as R[], numAffectedRows: BigInt(result.count ?? 0) };
  }
  // biome-ignore lint/correctness/useYield: not used by the measured statements
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('not streamed');
  }
}

async function open(
  driver: Driver,
  url: string,
  poolSize: number,
): Promise<{ db: Db; close(): Promise<void> }> {
  if (driver === 'pg') {
    const database = await openDatabase({ url, dataDir: '', poolSize });
    return { db: database.db, close: () => database.close() };
  }
  const client = postgres(url, { max: poolSize, prepare: true, onnotice: () => {} });
  if (driver === 'postgres.js pipelined') {
    const db = new Kysely<DB>({
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => new PipelinedDriver(client),
        createIntrospector: (k) => new PostgresIntrospector(k),
        createQueryCompiler: () => new PostgresQueryCompiler(),
      },
    });
    return { db, close: () => db.destroy() };
  }
  const db = new Kysely<DB>({ dialect: new PostgresJSDialect({ postgres: client }) });
  return { db, close: () => db.destroy() };
}

interface Measured {
  rate: number;
  p50: number;
  p99: number;
}

/** Runs `op` from CALLERS concurrent callers for `seconds` after a one-second warm-up. */
async function measure(op: (caller: number) => Promise<void>, seconds: number): Promise<Measured> {
  const latencies: number[] = [];
  const loop = async (caller: number, until: number, record: boolean) => {
    while (performance.now() < until) {
      const started = performance.now();
      await op(caller);
      if (record) latencies.push(performance.now() - started);
    }
  };
  const warm = performance.now() + 1000;
  await Promise.all(Array.from({ length: CALLERS }, (_, i) => loop(i, warm, false)));
  const started = performance.now();
  await Promise.all(Array.from({ length: CALLERS }, (_, i) => loop(i, started + seconds * 1000, true)));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))];
  return { rate: latencies.length / elapsed, p50: at(0.5), p99: at(0.99) };
}

async function main() {
  const name = `bench_drivers_${randomBytes(4).toString('hex')}`;
  await adminQuery(SERVER, `CREATE DATABASE ${name}`);
  const url = SERVER.replace(/\/[^/]*$/, `/${name}`);
  try {
    const setup = await openDatabase({ url, dataDir: '', poolSize: 2 });
    await migrate(setup.db);
    await setup.close();
    // One identity, session and current refresh token per caller, written directly.
    const seed = postgres(url, { max: 1, onnotice: () => {} });
    const sessions: string[] = [];
    const tokens: string[] = [];
    for (let i = 0; i < CALLERS; i++) {
      const [identity] =
        await seed`INSERT INTO identities (id, created_at) VALUES (gen_random_uuid(), now()) RETURNING id`;
      const [session] = await seed`
        INSERT INTO sessions (id, identity_id, epoch, method, created_at, expires_at)
        VALUES (gen_random_uuid(), ${identity.id}, 0, 'password', now(), now() + interval '30 days')
        RETURNING id, generation`;
      const hash = randomBytes(32).toString('hex');
      await seed`INSERT INTO refresh_tokens (hash, session_id, generation, created_at)
                 VALUES (${hash}, ${session.id}, ${session.generation}, now())`;
      sessions.push(session.id);
      tokens.push(hash);
    }
    await seed.end();

    const rows: string[] = [];
    const order: Driver[][] = [
      ['pg', 'postgres.js', 'postgres.js pipelined'],
      ['postgres.js pipelined', 'postgres.js', 'pg'],
    ];
    for (const [round, drivers] of order.entries()) {
      for (const poolSize of [20, 50]) {
        for (const driver of drivers) {
          const { db, close } = await open(driver, url, poolSize);
          const guard = await measure(async (c) => {
            const row = await sessionContext(db, sessions[c]);
            if (!row) throw new Error('missing session');
          }, SECONDS);
          const renewal = await measure(async (c) => {
            const next = randomBytes(32).toString('hex');
            const { outcome } = await renewSession(db, tokens[c], next, new Date());
            if (outcome !== 'rotated') throw new Error(`renewal ${outcome}`);
            tokens[c] = next;
          }, SECONDS);
          await close();
          const f = (m: Measured) => `${m.rate.toFixed(0)} | ${m.p50.toFixed(2)} | ${m.p99.toFixed(2)}`;
          rows.push(`| ${round + 1} | ${driver} | ${poolSize} | ${f(guard)} | ${f(renewal)} |`);
          process.stderr.write(`${rows[rows.length - 1]}\n`);
        }
      }
    }
    const cpus = os.cpus();
    process.stdout.write(
      [
        `${CALLERS} callers, ${SECONDS} s each, Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim()}`,
        '',
        '| Round | Driver | Pool | Guard ops/s | p50 ms | p99 ms | Renewal ops/s | p50 ms | p99 ms |',
        '|---:|---|---:|---:|---:|---:|---:|---:|---:|',
        ...rows,
        '',
      ].join('\n'),
    );
  } finally {
    await adminQuery(SERVER, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

await main();
