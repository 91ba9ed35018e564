import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { AppContext } from '../../src/context.js';

export interface Person {
  identityId: string;
  email: string;
  password: string;
}

/**
 * A verified identity with a password, written straight to the database: the fixture for features
 * that start from a registered account (registration itself is tested through its routes).
 */
export async function createPerson(ctx: AppContext, email?: string, password?: string): Promise<Person> {
  const identityId = randomUUID();
  const addr = email ?? `p-${identityId.slice(0, 8)}@example.com`;
  const pw = password ?? `correct horse ${identityId.slice(0, 6)}`;
  const now = ctx.clock.now();
  const hash = await ctx.passwords.hash(pw);
  await ctx.database.db.transaction().execute(async (trx) => {
    await sql`INSERT INTO identities (id, created_at, password_hash, password_changed_at)
              VALUES (${identityId}, ${now}, ${hash}, ${now})`.execute(trx);
    await sql`INSERT INTO identifiers (id, identity_id, type, value, created_at, verified_at)
              VALUES (${randomUUID()}, ${identityId}, 'email', ${addr}, ${now}, ${now})`.execute(trx);
  });
  return { identityId, email: addr, password: pw };
}

export interface Grant {
  kind: 'session';
  accessToken: string;
  refreshToken: string;
  accessTokenExpiresAt: string;
  sessionExpiresAt: string;
}

export async function signIn(app: FastifyInstance, p: Pick<Person, 'email' | 'password'>): Promise<Grant> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    payload: { identifierType: 'email', identifier: p.email, password: p.password },
  });
  if (res.statusCode !== 201) throw new Error(`sign-in failed: ${res.statusCode} ${res.body}`);
  return res.json().data as Grant;
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

/** A gate that holds every waiter until it is opened. */
export function barrier() {
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  return { gate, open };
}

/** Every task starts only when all are ready, so the requests really race. */
export async function race<T>(n: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const { gate, open } = barrier();
  const runs = Array.from({ length: n }, async (_, i) => {
    await gate;
    return task(i);
  });
  open();
  return Promise.all(runs);
}
