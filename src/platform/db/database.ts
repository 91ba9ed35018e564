import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
} from 'kysely';
import pg from 'pg';

import type { DB } from './schema.js';

/** The typed handle: every table's columns come from the generated schema (scripts/db-types.ts). */
export type Db = Kysely<DB>;
/** A transaction or the root handle: every repository function takes one. */
export type Executor = Db;

export interface Database {
  readonly db: Db;
  readonly kind: 'postgres' | 'pglite';
  /** One round trip; throws when the database cannot answer. */
  ping(): Promise<void>;
  /** An embedded database's whole data directory, to start another from (`snapshot` option). */
  snapshot?(): Promise<Blob>;
  /** The pool's connections and waiting callers (metrics); undefined on PGlite, which has none. */
  poolStats(): { total: number; idle: number; waiting: number } | undefined;
  close(): Promise<void>;
}

// Timestamps stay ISO strings end to end would lose precision; Date objects are what we compare.
pg.types.setTypeParser(20, (v) => Number(v)); // int8 counters fit in a double here

/**
 * PGlite has one connection. Kysely would interleave two transactions on it, so connections are
 * handed out one at a time: a transaction holds the connection until it commits or rolls back.
 */
class PGliteDriver implements Driver {
  #queue: Promise<void> = Promise.resolve();
  constructor(private readonly client: PGlite) {}
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    let release!: () => void;
    const previous = this.#queue;
    this.#queue = new Promise<void>((r) => {
      release = r;
    });
    await previous;
    return new PGliteConnection(this.client, release);
  }
  async beginTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('BEGIN'));
  }
  async commitTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('COMMIT'));
  }
  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery(CompiledQuery.raw('ROLLBACK'));
  }
  async releaseConnection(c: DatabaseConnection): Promise<void> {
    (c as PGliteConnection).release();
  }
  async destroy(): Promise<void> {
    await this.client.close();
  }
}

class PGliteConnection implements DatabaseConnection {
  constructor(
    private readonly client: PGlite,
    readonly release: () => void,
  ) {}
  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    if (q.parameters.length === 0) {
      // The simple protocol runs several statements (migrations); the last result is the answer.
      const results = await this.client.exec(q.sql);
      const last = results[results.length - 1];
      return {
        rows: (last?.rows ?? []) as R[],
        numAffectedRows: last?.affectedRows !== undefined ? BigInt(last.affectedRows) : undefined,
      };
    }
    const res = await this.client.query<R>(q.sql, [...q.parameters]);
    return {
      rows: res.rows,
      numAffectedRows: res.affectedRows !== undefined ? BigInt(res.affectedRows) : undefined,
    };
  }
  // biome-ignore lint/correctness/useYield: PGlite cannot stream
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite does not stream');
  }
}

export interface DatabaseOptions {
  /** postgres://…, memory://, or undefined for a persisted PGlite under dataDir. */
  url: string | undefined;
  dataDir: string;
  poolSize?: number;
  /** Schema to use on a PostgreSQL server (tests isolate themselves this way). */
  schema?: string;
  /**
   * memory:// only: start from this snapshot of an embedded database (`Database.snapshot`)
   * instead of an empty cluster. Creating the cluster is most of an embedded database's start-up
   * (seconds), so the test suite makes one migrated snapshot per process and starts every
   * database from it.
   */
  snapshot?: Blob;
}

/**
 * The statement names already computed, by SQL text: a hash per query was a measurable part of the
 * event loop's time per sign-in (about 20 statements each). The texts come from the code, so they
 * are few; the map is emptied if a caller ever builds them without bound (IN lists of many sizes).
 */
const statementNames = new Map<string, string>();
const STATEMENT_NAMES_MAX = 5000;

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `q${createHash('sha1').update(text).digest('base64url')}`;
    if (statementNames.size >= STATEMENT_NAMES_MAX) statementNames.clear();
    statementNames.set(text, name);
  }
  return name;
}

/**
 * Every parameterised query runs as a named prepared statement on its connection (the name is a
 * hash of the SQL text, so one text always maps to one name): PostgreSQL parses and plans each
 * statement once per connection instead of on every request. The hot paths (the session guard,
 * the context, renewals) are single statements whose planning cost as much as their execution.
 * Parameterless SQL (migrations, BEGIN/COMMIT) keeps the simple protocol.
 */
function preparePerConnection(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const [text, values] = args;
    if (typeof text === 'string' && Array.isArray(values) && values.length > 0 && args.length === 2) {
      return query({ name: statementName(text), text, values });
    }
    return query(...args);
  };
}

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  if (opts.url && opts.url !== 'memory://') {
    const pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolSize ?? 20,
      // A dead database must turn into a quick 503, not a hung request.
      connectionTimeoutMillis: 2000,
      idleTimeoutMillis: 30000,
      options: opts.schema ? `-c search_path=${opts.schema}` : undefined,
    });
    // An idle client losing its server emits 'error'; the next checkout reconnects.
    pool.on('error', () => {});
    // A checked-out client (a running query or transaction) losing its server emits 'error' too,
    // and the pool only listens while the client is idle: without this the process would crash.
    // The query itself still rejects (a 503), and the dead client is dropped on release.
    pool.on('connect', (client) => {
      client.on('error', () => {});
      preparePerConnection(client);
    });
    const db: Db = new Kysely({ dialect: new PostgresDialect({ pool }) });
    return {
      db,
      kind: 'postgres',
      poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
      async ping() {
        const client = await pool.connect();
        try {
          await client.query('SELECT 1');
          client.release();
        } catch (err) {
          client.release(true);
          throw err;
        }
      },
      async close() {
        await db.destroy();
      },
    };
  }
  let client: PGlite;
  if (opts.url === 'memory://') {
    client = await PGlite.create(opts.snapshot ? { loadDataDir: opts.snapshot } : undefined);
  } else {
    mkdirSync(opts.dataDir, { recursive: true });
    client = await PGlite.create(`${opts.dataDir}/pgdata`);
  }
  const db: Db = new Kysely({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new PGliteDriver(client),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  return {
    db,
    kind: 'pglite',
    poolStats: () => undefined,
    snapshot: () => client.dumpDataDir('none'),
    async ping() {
      await client.query('SELECT 1');
    },
    async close() {
      await db.destroy();
    },
  };
}
