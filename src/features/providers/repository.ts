import { sql } from 'kysely';
import { changedOne } from '../../platform/db/compare-and-set.js';
import type { Executor } from '../../platform/db/database.js';

/** A live link of a provider's subject to an identity. */
export interface ProviderLink {
  id: string;
  identityId: string;
  provider: string;
  subject: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

export async function insertNonce(
  trx: Executor,
  n: { id: string; hash: string; now: Date; expiresAt: Date },
): Promise<void> {
  await trx
    .insertInto('provider_nonces')
    .values({ id: n.id, hash: n.hash, created_at: n.now, expires_at: n.expiresAt })
    .execute();
}

/**
 * Bounded clean-up run with each issuance, so an unauthenticated route cannot grow the table
 * without end. Deleting an expired nonce changes nothing: an unknown nonce is refused exactly like
 * an expired or spent one, so a replayed token stays refused. SKIP LOCKED: concurrent issuances
 * each delete rows nobody else holds, so two clean-ups never wait on (or deadlock with) each other.
 */
export async function pruneExpiredNonces(trx: Executor, now: Date, batch = 100): Promise<void> {
  await trx
    .deleteFrom('provider_nonces')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('provider_nonces')
        .select('id')
        .where('expires_at', '<=', now)
        .orderBy('expires_at')
        .limit(batch)
        .forUpdate()
        .skipLocked(),
    )
    .execute();
}

/**
 * Compare-and-set (docs/architecture.md, "The request path"): of every act racing with one nonce,
 * on any route, exactly one gets the row back; the others wait on the row lock, re-read it spent,
 * and get false.
 */
export async function spendNonce(trx: Executor, hash: string, now: Date): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('provider_nonces')
      .set({ spent_at: now })
      .where('hash', '=', hash)
      .where('spent_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('id'),
  );
}

export async function findLiveLink(
  trx: Executor,
  provider: string,
  subject: string,
): Promise<ProviderLink | undefined> {
  return trx
    .selectFrom('provider_links')
    .select([
      'id',
      'identity_id as identityId',
      'provider',
      'subject',
      'created_at as createdAt',
      'last_used_at as lastUsedAt',
    ])
    .where('provider', '=', provider)
    .where('subject', '=', subject)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

/**
 * Links a subject to an identity. The partial unique index decides between concurrent first
 * visits: the loser waits for the winner's commit and gets undefined, never an error.
 */
export async function insertLink(
  trx: Executor,
  l: { id: string; identityId: string; provider: string; subject: string; now: Date },
): Promise<string | undefined> {
  const r = await trx
    .insertInto('provider_links')
    .values({
      id: l.id,
      identity_id: l.identityId,
      provider: l.provider,
      subject: l.subject,
      created_at: l.now,
    })
    .onConflict((oc) => oc.columns(['provider', 'subject']).where('removed_at', 'is', null).doNothing())
    .returning('id')
    .executeTakeFirst();
  return r?.id;
}

export async function touchLink(trx: Executor, id: string, now: Date): Promise<void> {
  await trx.updateTable('provider_links').set({ last_used_at: now }).where('id', '=', id).execute();
}

export interface LinkRow {
  id: string;
  provider: string;
}

export async function liveLinks(trx: Executor, identityId: string): Promise<LinkRow[]> {
  return trx
    .selectFrom('provider_links')
    .select(['id', 'provider'])
    .where('identity_id', '=', identityId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Compare-and-set: true when this call removed the live link (docs/architecture.md, "The request path"). */
export async function removeLink(
  trx: Executor,
  linkId: string,
  identityId: string,
  now: Date,
): Promise<boolean> {
  return changedOne(
    trx
      .updateTable('provider_links')
      .set({ removed_at: now })
      .where('id', '=', linkId)
      .where('identity_id', '=', identityId)
      .where('removed_at', 'is', null)
      .returning('id'),
  );
}

/**
 * Erasure: every provider link of the identity (the provider's subject is personal data), and its
 * redirect flows and handoffs in flight.
 */
export async function deleteIdentityLinks(trx: Executor, identityId: string): Promise<void> {
  await trx.deleteFrom('provider_links').where('identity_id', '=', identityId).execute();
  await trx.deleteFrom('provider_flows').where('identity_id', '=', identityId).execute();
  await trx.deleteFrom('provider_handoffs').where('identity_id', '=', identityId).execute();
}

/** The server side of one redirect sign-in (docs/providers.md, "How the flow works"). */
export interface ProviderFlow {
  id: string;
  provider: string;
  intent: 'sign_in' | 'link' | 'step_up';
  identityId: string | null;
  sessionId: string | null;
  returnTo: string;
  bindingHash: string;
  sealedChecks: string;
  expiresAt: Date;
}

export async function insertFlow(
  trx: Executor,
  f: ProviderFlow & { stateHash: string; now: Date },
): Promise<void> {
  await trx
    .insertInto('provider_flows')
    .values({
      id: f.id,
      provider: f.provider,
      intent: f.intent,
      identity_id: f.identityId,
      session_id: f.sessionId,
      return_to: f.returnTo,
      state_hash: f.stateHash,
      binding_hash: f.bindingHash,
      sealed_checks: f.sealedChecks,
      created_at: f.now,
      expires_at: f.expiresAt,
    })
    .execute();
}

/**
 * Compare-and-set: the flow named by the state's hash is consumed by exactly one callback, whatever
 * happens next (an expired flow, or one presented by another browser, is burned too). The caller
 * checks expiry and binding on the row it gets back.
 */
export async function consumeFlow(
  trx: Executor,
  stateHash: string,
  now: Date,
): Promise<ProviderFlow | undefined> {
  return trx
    .updateTable('provider_flows')
    .set({ consumed_at: now })
    .where('state_hash', '=', stateHash)
    .where('consumed_at', 'is', null)
    .returning([
      'id',
      'provider',
      'intent',
      'identity_id as identityId',
      'session_id as sessionId',
      'return_to as returnTo',
      'binding_hash as bindingHash',
      'sealed_checks as sealedChecks',
      'expires_at as expiresAt',
    ])
    .$narrowType<{ intent: ProviderFlow['intent'] }>()
    .executeTakeFirst();
}

export async function insertHandoff(
  trx: Executor,
  h: {
    id: string;
    codeHash: string;
    bindingHash: string;
    kind: ProviderHandoff['kind'];
    identityId: string;
    sessionId: string | null;
    epoch: number;
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  await trx
    .insertInto('provider_handoffs')
    .values({
      id: h.id,
      code_hash: h.codeHash,
      binding_hash: h.bindingHash,
      kind: h.kind,
      identity_id: h.identityId,
      session_id: h.sessionId,
      epoch: h.epoch,
      created_at: h.now,
      expires_at: h.expiresAt,
    })
    .execute();
}

export interface ProviderHandoff {
  kind: 'sign_in' | 'step_up';
  identityId: string;
  sessionId: string | null;
  epoch: number;
  bindingHash: string;
  expiresAt: Date;
}

/** Compare-and-set, like consumeFlow: one exchange gets the row; the caller checks expiry and binding. */
export async function consumeHandoff(
  trx: Executor,
  codeHash: string,
  now: Date,
): Promise<ProviderHandoff | undefined> {
  return trx
    .updateTable('provider_handoffs')
    .set({ consumed_at: now })
    .where('code_hash', '=', codeHash)
    .where('consumed_at', 'is', null)
    .returning([
      'kind',
      'identity_id as identityId',
      'session_id as sessionId',
      'epoch',
      'binding_hash as bindingHash',
      'expires_at as expiresAt',
    ])
    .$narrowType<{ kind: ProviderHandoff['kind'] }>()
    .executeTakeFirst();
}

/**
 * Bounded clean-up run with each new flow, so the unauthenticated start cannot grow the tables
 * without end: expired flows and handoffs, oldest first, SKIP LOCKED like the nonces.
 */
export async function pruneExpiredFlows(trx: Executor, now: Date, batch = 100): Promise<void> {
  for (const table of ['provider_flows', 'provider_handoffs'] as const) {
    await trx
      .deleteFrom(table)
      .where('id', 'in', (eb) =>
        eb
          .selectFrom(table)
          .select('id')
          .where('expires_at', '<=', now)
          .orderBy('expires_at')
          .limit(batch)
          .forUpdate()
          .skipLocked(),
      )
      .execute();
  }
}

/** Provider links brought by an import, in one statement. */
export async function insertImportedLinks(
  trx: Executor,
  rows: { id: string; identityId: string; provider: string; subject: string; now: Date }[],
): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .insertInto('provider_links')
    .values(
      rows.map((l) => ({
        id: l.id,
        identity_id: l.identityId,
        provider: l.provider,
        subject: l.subject,
        created_at: l.now,
      })),
    )
    .execute();
}

/** Which of these (provider, subject) pairs a live link holds already (`provider subject` keys). */
export async function liveLinksAmong(
  trx: Executor,
  links: { provider: string; subject: string }[],
): Promise<Set<string>> {
  if (links.length === 0) return new Set();
  // Raw: the builder has no join to unnest() of two bound arrays (one probe of
  // provider_links_live_subject per pair).
  const { rows } = await sql<{ provider: string; subject: string }>`
    SELECT l.provider, l.subject
      FROM unnest(${links.map((l) => l.provider)}::text[], ${links.map((l) => l.subject)}::text[]) AS q(provider, subject)
      JOIN provider_links l ON l.provider = q.provider AND l.subject = q.subject AND l.removed_at IS NULL`.execute(
    trx,
  );
  return new Set(rows.map((r) => `${r.provider} ${r.subject}`));
}

/** The live links of these identities (an export). */
export async function linksForExport(trx: Executor, identityIds: string[]) {
  if (identityIds.length === 0) return [];
  return trx
    .selectFrom('provider_links')
    .select(['identity_id as identityId', 'provider', 'subject'])
    .where('identity_id', 'in', identityIds)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .execute();
}
