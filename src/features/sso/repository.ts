import type { Executor } from '../../platform/db/database.js';

/**
 * The one writer of `saml_flows` and `saml_assertion_ids` (docs/architecture.md, "Tables and their
 * owners"). `saml_flows` holds OpenID connection flows too (`request_id` is their `state`).
 */

export interface SamlFlow {
  id: string;
  connectionId: string;
  /** SAML: our AuthnRequest's ID; OpenID: the `state`. */
  requestId: string;
  bindingHash: string | null;
  returnTo: string;
  createdAt: Date;
  expiresAt: Date;
  /** OpenID: the nonce and PKCE verifier, sealed under the flow's id. */
  sealedChecks?: string | null;
  /** A connection test's flow: the session that started it (it signs nobody in). */
  testerSessionId?: string | null;
  /** An operator's connection test: who started it (`admin:<key>` or `operator:<identity id>`). */
  testerOperator?: string | null;
}

const flowColumns = [
  'id',
  'connection_id as connectionId',
  'request_id as requestId',
  'binding_hash as bindingHash',
  'return_to as returnTo',
  'created_at as createdAt',
  'expires_at as expiresAt',
  'sealed_checks as sealedChecks',
  'tester_session_id as testerSessionId',
  'tester_operator as testerOperator',
] as const;

export async function insertFlow(
  trx: Executor,
  f: SamlFlow & { answeredAt?: Date; startHash?: string; startUrl?: string },
): Promise<void> {
  await trx
    .insertInto('saml_flows')
    .values({
      id: f.id,
      connection_id: f.connectionId,
      request_id: f.requestId,
      binding_hash: f.bindingHash,
      return_to: f.returnTo,
      created_at: f.createdAt,
      expires_at: f.expiresAt,
      answered_at: f.answeredAt ?? null,
      sealed_checks: f.sealedChecks ?? null,
      tester_session_id: f.testerSessionId ?? null,
      tester_operator: f.testerOperator ?? null,
      start_hash: f.startHash ?? null,
      start_url: f.startUrl ?? null,
    })
    .execute();
}

/**
 * Opens an operator's test flow, once: its start token is spent (compare-and-set) and the flow
 * bound to the browser that opened it. Expired, answered or spent: nothing. The IdP address to go to.
 */
export async function openOperatorTest(
  trx: Executor,
  startHash: string,
  bindingHash: string,
  now: Date,
): Promise<string | undefined> {
  const row = await trx
    .updateTable('saml_flows')
    .set({ binding_hash: bindingHash, start_hash: null })
    .where('start_hash', '=', startHash)
    .where('binding_hash', 'is', null)
    .where('answered_at', 'is', null)
    .where('tester_operator', 'is not', null)
    .where('expires_at', '>', now)
    .returning('start_url')
    .executeTakeFirst();
  return row?.start_url ?? undefined;
}

/** An operator's test result by the test's id, for the operator who started it, unexpired. */
export async function operatorTestResultOf(
  trx: Executor,
  id: string,
  operator: string,
  now: Date,
): Promise<unknown | undefined> {
  const row = await trx
    .selectFrom('saml_flows')
    .select('test_result')
    .where('id', '=', id)
    .where('tester_operator', '=', operator)
    .where('test_result', 'is not', null)
    .where('handoff_expires_at', '>', now)
    .executeTakeFirst();
  return row?.test_result ?? undefined;
}

/**
 * The ACS's answer to a flow, once: the compare-and-set on `answered_at` lets one of two posts of
 * the same response through (the other finds nothing), expired flows never.
 */
export function answerFlow(
  trx: Executor,
  connectionId: string,
  requestId: string,
  now: Date,
): Promise<SamlFlow | undefined> {
  return trx
    .updateTable('saml_flows')
    .set({ answered_at: now })
    .where('connection_id', '=', connectionId)
    .where('request_id', '=', requestId)
    .where('answered_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(flowColumns)
    .executeTakeFirst();
}

/** The handoff of an answered flow: the identity the assertion proved and its epoch. */
export async function setHandoff(
  trx: Executor,
  h: { flowId: string; handoffHash: string; identityId: string; epoch: number; expiresAt: Date },
): Promise<void> {
  await trx
    .updateTable('saml_flows')
    .set({
      handoff_hash: h.handoffHash,
      identity_id: h.identityId,
      epoch: h.epoch,
      handoff_expires_at: h.expiresAt,
    })
    .where('id', '=', h.flowId)
    .execute();
}

export interface SamlHandoff {
  connectionId: string;
  bindingHash: string | null;
  identityId: string;
  epoch: number;
}

/**
 * What an unspent, unexpired handoff signs into, without spending it: the organization and
 * connection named on the page that asks the person to continue (IdP-initiated sign-in).
 */
export async function peekHandoff(
  trx: Executor,
  handoffHash: string,
  now: Date,
): Promise<
  | { bindingHash: string | null; organizationId: string; organizationName: string; connectionName: string }
  | undefined
> {
  return trx
    .selectFrom('saml_flows as f')
    .innerJoin('sso_connections as c', 'c.id', 'f.connection_id')
    .innerJoin('organizations as o', 'o.id', 'c.organization_id')
    .select([
      'f.binding_hash as bindingHash',
      'o.id as organizationId',
      'o.name as organizationName',
      'c.name as connectionName',
    ])
    .where('f.handoff_hash', '=', handoffHash)
    .where('f.identity_id', 'is not', null)
    .where('f.exchanged_at', 'is', null)
    .where('f.handoff_expires_at', '>', now)
    .executeTakeFirst();
}

/**
 * A connection test's answer: what the IdP sent and which checks passed, behind a code that only
 * the tester's session, in the tester's browser, reads (never exchanged: no identity is set); an
 * operator's test has no code (its id is read by that operator through the admin API).
 */
export async function setTestResult(
  trx: Executor,
  t: { flowId: string; resultHash: string | null; result: unknown; expiresAt: Date },
): Promise<void> {
  await trx
    .updateTable('saml_flows')
    .set({
      handoff_hash: t.resultHash,
      handoff_expires_at: t.expiresAt,
      test_result: JSON.stringify(t.result),
    })
    .where('id', '=', t.flowId)
    .where((eb) => eb.or([eb('tester_session_id', 'is not', null), eb('tester_operator', 'is not', null)]))
    .execute();
}

/** A test result by its code, for the session that started the test, unexpired. */
export async function testResultOf(
  trx: Executor,
  resultHash: string,
  sessionId: string,
  now: Date,
): Promise<{ bindingHash: string | null; result: unknown } | undefined> {
  const row = await trx
    .selectFrom('saml_flows')
    .select(['binding_hash as bindingHash', 'test_result as result'])
    .where('handoff_hash', '=', resultHash)
    .where('tester_session_id', '=', sessionId)
    .where('test_result', 'is not', null)
    .where('handoff_expires_at', '>', now)
    .executeTakeFirst();
  return row && { bindingHash: row.bindingHash, result: row.result };
}

/** Spends a handoff code once (compare-and-set), unexpired. */
export async function spendHandoff(
  trx: Executor,
  handoffHash: string,
  now: Date,
): Promise<SamlHandoff | undefined> {
  const row = await trx
    .updateTable('saml_flows')
    .set({ exchanged_at: now })
    .where('handoff_hash', '=', handoffHash)
    .where('exchanged_at', 'is', null)
    .where('handoff_expires_at', '>', now)
    .returning(['connection_id', 'binding_hash', 'identity_id', 'epoch'])
    .executeTakeFirst();
  if (!row || row.identity_id === null || row.epoch === null) return undefined;
  return {
    connectionId: row.connection_id,
    bindingHash: row.binding_hash,
    identityId: row.identity_id,
    epoch: row.epoch,
  };
}

/**
 * Records an assertion id as used: false when it was already (a replay, whichever instance saw it
 * first). INSERT … ON CONFLICT DO NOTHING: the primary key decides between two posts at once.
 */
export async function useAssertionId(
  trx: Executor,
  a: { connectionId: string; assertionId: string; expiresAt: Date },
): Promise<boolean> {
  const rows = await trx
    .insertInto('saml_assertion_ids')
    .values({ connection_id: a.connectionId, assertion_id: a.assertionId, expires_at: a.expiresAt })
    .onConflict((oc) => oc.columns(['connection_id', 'assertion_id']).doNothing())
    .returning('assertion_id')
    .execute();
  return rows.length === 1;
}

/** Deletes flows and assertion ids that can no longer change an answer (run at each flow start). */
export async function pruneExpired(trx: Executor, now: Date): Promise<void> {
  await trx.deleteFrom('saml_assertion_ids').where('expires_at', '<=', now).execute();
  await trx
    .deleteFrom('saml_flows')
    .where('expires_at', '<=', new Date(now.getTime() - 3600_000))
    .execute();
}
