import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance } from 'fastify';
import { type CompiledQuery, DefaultQueryExecutor } from 'kysely';

/*
 * The statements one request runs, for the round-trip tests (docs/performance.md): every statement
 * the service sends goes through Kysely's query executor, counted in the request's own async
 * context (entered by the onRequest hook `countStatements` adds), so no timer's sweep counts.
 */
const counting = new AsyncLocalStorage<string[]>();
let countInto: string[] | undefined;
const base = Object.getPrototypeOf(DefaultQueryExecutor.prototype) as {
  executeQuery(q: CompiledQuery, id: unknown): Promise<unknown>;
};
const executeQuery = base.executeQuery;
base.executeQuery = function (this: unknown, q: CompiledQuery, id: unknown) {
  counting.getStore()?.push(q.sql);
  return executeQuery.call(this, q, id);
};

/** For `createTestApp({ extend })`: the app's requests made inside `statementsOf` are counted. */
export function countStatements(app: FastifyInstance): void {
  app.addHook('onRequest', (_request, _reply, done) => {
    if (countInto) counting.run(countInto, done);
    else done();
  });
}

/** Runs `task` (one request to an app built with countStatements) and the statements it ran. */
export async function statementsOf<T>(task: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  countInto = statements;
  try {
    return { result: await task(), statements };
  } finally {
    countInto = undefined;
  }
}
