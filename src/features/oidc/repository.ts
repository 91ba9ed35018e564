import { randomUUID } from 'node:crypto';
import { type CompiledQuery, type ExpressionBuilder, type QueryCreator, sql } from 'kysely';
import type { Executor } from '../../platform/db/database.js';
import type { DB } from '../../platform/db/schema.js';
import type { ProfileNames } from '../identities/profile.js';
import { plainGroups } from '../sessions/repository.js';

/*
 * The OpenID Provider's tables (migrations/0014_openid_provider.sql): what oidc-provider stores,
 * the link from each grant to one of the service's sessions, remembered consent, clients registered
 * through the admin API, the provider's sealed signing keys, and the hosted sign-in page each
 * interaction was sent to (migrations/0021_oidc_sign_in_pages.sql).
 */

export interface StoredPayload {
  payload: Record<string, unknown>;
  consumedAt: Date | null;
}

/**
 * Stores a payload (insert or replace). With `grantEnd` (a refresh token), the same statement moves
 * its grant's end to at least the token's own: a refresh token outliving its grant would be refused
 * with it, so each one issued extends the grant (stored and in its payload's `exp`, which the
 * library checks), never shortens it.
 */
export async function upsertPayload(
  db: Executor,
  p: {
    kind: string;
    id: string;
    payload: Record<string, unknown>;
    grantId: string | null;
    uid: string | null;
    expiresAt: Date | null;
  },
  grantEnd?: { grantId: string; expiresAt: Date; exp: number },
  /**
   * A payload of the same kind consumed in the same statement (a refresh token rotated: the old
   * one's compare-and-set and the new one stored in one round trip and one commit). The answer is
   * then whether this statement consumed it: false when it was consumed already (a reuse, or the
   * loser of two at once), and the new payload is stored either way (its value was never handed
   * out; the caller ends the grant, which deletes it).
   */
  consume?: { id: string; now: Date },
): Promise<boolean> {
  const payload = JSON.stringify(p.payload);
  const row = { payload, grant_id: p.grantId, uid: p.uid, expires_at: p.expiresAt };
  const upsert = (q: QueryCreator<DB>) =>
    q
      .insertInto('oidc_payloads')
      .values({ kind: p.kind, id: p.id, ...row })
      .onConflict((oc) => oc.columns(['kind', 'id']).doUpdateSet(row));
  const extend = (q: QueryCreator<DB>, end: { grantId: string; expiresAt: Date; exp: number }) =>
    q
      .updateTable('oidc_payloads')
      // raw: jsonb_set on the stored payload has no builder form
      .set({
        expires_at: end.expiresAt,
        payload: sql`jsonb_set(payload, '{exp}', to_jsonb(${end.exp}::bigint))`,
      })
      .where('kind', '=', 'Grant')
      .where('id', '=', end.grantId)
      .where('expires_at', '<', end.expiresAt);
  if (consume) {
    // Data-modifying CTEs each run once and to completion whether or not the query reads them;
    // they touch different rows (the old token, the new one, the grant).
    const consumed = (q: QueryCreator<DB>) =>
      q
        .updateTable('oidc_payloads')
        .set({ consumed_at: consume.now })
        .where('kind', '=', p.kind)
        .where('id', '=', consume.id)
        .where('consumed_at', 'is', null)
        .returning('id');
    const rows = grantEnd
      ? await db
          .with('consumed', consumed)
          .with('stored', (q) => upsert(q).returning('id'))
          .with('extended', (q) => extend(q, grantEnd).returning('id'))
          .selectFrom('consumed')
          .select('id')
          .execute()
      : await db
          .with('consumed', consumed)
          .with('stored', (q) => upsert(q).returning('id'))
          .selectFrom('consumed')
          .select('id')
          .execute();
    return rows.length === 1;
  }
  if (!grantEnd) {
    await upsert(db).execute();
    return true;
  }
  // One round trip: the token stored in a data-modifying CTE, the grant extended by the statement.
  await extend(
    db.with('stored', (q) => upsert(q).returning('id')),
    grantEnd,
  ).execute();
  return true;
}

/**
 * Inserts a payload unless a live one is under its id, in one statement (an expired one is taken
 * over): true when this call stored it. Two claims of one id at once store it once.
 */
export async function claimPayload(
  db: Executor,
  p: { kind: string; id: string; payload: Record<string, unknown>; expiresAt: Date },
  now: Date,
): Promise<boolean> {
  const row = {
    payload: JSON.stringify(p.payload),
    grant_id: null,
    uid: null,
    expires_at: p.expiresAt,
    consumed_at: null,
  };
  const rows = await db
    .insertInto('oidc_payloads')
    .values({ kind: p.kind, id: p.id, ...row })
    .onConflict((oc) =>
      oc.columns(['kind', 'id']).doUpdateSet(row).where('oidc_payloads.expires_at', '<=', now),
    )
    .returning('id')
    .execute();
  return rows.length === 1;
}

const notExpired = (now: Date) => (eb: ExpressionBuilder<DB, 'oidc_payloads'>) =>
  eb.or([eb('oidc_payloads.expires_at', 'is', null), eb('oidc_payloads.expires_at', '>', now)]);

/**
 * A grant is live while its link is not ended, the identity is enabled and still in the epoch the
 * grant was given in, the session it was given in was never found stolen, and (unless offline)
 * that session is live. A payload with no grant (client credentials, interactions, the provider's
 * sessions) has no link to check.
 *
 * The theft mark is read through the link on every use, not copied onto grants when it is set: a
 * grant linked while the replay commits (its consent read the session just before) is refused all
 * the same, and no grant of the session can be missed (docs/decisions.md, "A stolen session ends
 * its offline grants").
 *
 * Read through left joins by primary key (withGrantLink: the link `gl`, its identity `gli`, its
 * session `gls`), not an EXISTS under the OR: PostgreSQL turns such an EXISTS into a "hashed
 * SubPlan" whenever its estimates are small (tables never analyzed: a new deployment, a bulk
 * import, the bench's server with autovacuum off), which builds the set of every live grant
 * joined with every session on each read: O(grants × sessions) per request (docs/performance.md,
 * "OpenID Provider reads"). Joins by key leave the planner nothing else to choose.
 */
const grantLive =
  (now: Date) => (eb: ExpressionBuilder<LinkedPayload, 'oidc_payloads' | 'gl' | 'gli' | 'gls'>) =>
    eb.or([
      eb('oidc_payloads.grant_id', 'is', null),
      eb.and([
        eb('gl.grant_id', 'is not', null),
        eb('gl.ended_at', 'is', null),
        eb('gli.disabled_at', 'is', null),
        eb('gli.session_epoch', '=', eb.ref('gl.epoch')),
        eb('gls.id', 'is not', null),
        eb('gls.theft_detected_at', 'is', null),
        eb.or([
          eb('gl.offline', '=', true),
          eb.and([eb('gls.revoked_at', 'is', null), eb('gls.expires_at', '>', now)]),
        ]),
      ]),
    ]);

/** The tables a payload's grant liveness is read from (grantLive), as withGrantLink names them. */
type LinkedPayload = DB & {
  gl: DB['oidc_grants'];
  gli: DB['identities'];
  gls: DB['sessions'];
};

/** oidc_payloads with its grant's link, identity and session, each by key (grantLive reads them). */
const withGrantLink = (db: Executor) =>
  db
    .selectFrom('oidc_payloads')
    .leftJoin('oidc_grants as gl', 'gl.grant_id', 'oidc_payloads.grant_id')
    .leftJoin('identities as gli', 'gli.id', 'gl.identity_id')
    .leftJoin('sessions as gls', 'gls.id', 'gl.session_id');

/** A stored payload, only while unexpired and while the grant it belongs to is live. */
export async function findLivePayload(
  db: Executor,
  kind: string,
  id: string,
  now: Date,
): Promise<StoredPayload | undefined> {
  const row = await withGrantLink(db)
    .select(['oidc_payloads.payload', 'oidc_payloads.consumed_at as consumedAt'])
    .where('oidc_payloads.kind', '=', kind)
    .where('oidc_payloads.id', '=', id)
    .where(notExpired(now))
    .where(grantLive(now))
    .executeTakeFirst();
  return row ? asStored(row) : undefined;
}

/** A live access token of one client, with the service session its grant stands for. */
export interface ClientAccessToken {
  identityId: string;
  sessionId: string;
  /** How that session was opened (sessions.method). */
  method: string;
  /** When that session was opened. */
  signedInAt: Date;
}

/**
 * A live access token (unexpired, its grant live: identity enabled, epoch current, session live,
 * not offline) issued to `clientId`: the operators' console's tokens, which the admin listener
 * takes as an operator's credential (docs/decisions.md, "Operators with a role").
 */
export async function findClientAccessToken(
  db: Executor,
  clientId: string,
  id: string,
  now: Date,
): Promise<ClientAccessToken | undefined> {
  const row = await withGrantLink(db)
    .select([
      'gl.identity_id as identityId',
      'gls.id as sessionId',
      'gls.method',
      'gls.created_at as createdAt',
    ])
    .where('oidc_payloads.kind', '=', 'AccessToken')
    .where('oidc_payloads.id', '=', id)
    .where('gl.client_id', '=', clientId)
    .where('gl.offline', '=', false)
    .where('oidc_payloads.consumed_at', 'is', null)
    .where(notExpired(now))
    .where(grantLive(now))
    .executeTakeFirst();
  if (!row?.identityId || !row.sessionId || !row.method || !row.createdAt) return undefined;
  return {
    identityId: row.identityId,
    sessionId: row.sessionId,
    method: row.method,
    signedInAt: new Date(row.createdAt),
  };
}

/** A token with what the library reads next about it, found in the same statement. */
export interface TokenWithGrant extends StoredPayload {
  kind: string;
  /** The token's grant: undefined when it has none; null when its grant's payload is gone or expired. */
  grant?: StoredPayload | null;
  /** The identity the grant was given to, its verified identifiers and its name now (the claims). */
  account?: {
    identityId: string;
    email: string | null;
    phone: string | null;
    profile: ProfileNames & { locale: string; pictureId: string | null };
  };
}

/**
 * The statement of findTokensWithGrant, as the builder writes it (compiled once, below). The
 * grant's identifiers come as rows of a join on the identity alone, filtered and ordered here
 * (findTokensWithGrant): a condition on their type, verification or removal in the statement
 * would let a planner without statistics walk the (type, value) index or the live-value index
 * across every identity's identifiers instead of the identity's own few (docs/performance.md,
 * "OpenID Provider reads").
 */
const tokensWithGrant = (db: Executor, kinds: readonly string[], id: string, now: Date) =>
  withGrantLink(db)
    .leftJoin('oidc_payloads as gp', (join) =>
      join
        .onRef('gp.id', '=', 'oidc_payloads.grant_id')
        .on('gp.kind', '=', 'Grant')
        .on((eb) => eb.or([eb('gp.expires_at', 'is', null), eb('gp.expires_at', '>', now)])),
    )
    .leftJoin('identifiers as v', 'v.identity_id', 'gl.identity_id')
    .leftJoin('identity_pictures as pic', 'pic.identity_id', 'gl.identity_id')
    .select([
      'oidc_payloads.kind',
      'oidc_payloads.payload',
      'oidc_payloads.consumed_at as consumedAt',
      'oidc_payloads.grant_id as grantId',
      'gp.payload as grantPayload',
      'gp.consumed_at as grantConsumedAt',
      'gl.identity_id as identityId',
      'gli.given_name as givenName',
      'gli.family_name as familyName',
      'gli.display_name as displayName',
      'gli.locale as locale',
      'pic.id as pictureId',
      'v.id as identifierId',
      'v.type as identifierType',
      'v.value as identifierValue',
      'v.verified_at as verifiedAt',
      'v.removed_at as removedAt',
    ])
    .where('oidc_payloads.kind', 'in', kinds)
    .where('oidc_payloads.id', '=', id)
    .where(notExpired(now))
    .where(grantLive(now));

/**
 * findTokensWithGrant's statement compiled once: its text and parameter order never change (the
 * kinds are the provider's fixed list), so building and compiling it per request (about a tenth of
 * userinfo's CPU in the profile) is done at the first call, and each request puts its own id and
 * time where the first call's marks stood (an id no token can be, a NUL and a random UUID; the Date
 * object itself). Nothing else in it varies: the other parameters are the statement's constants.
 */
let compiledTokensWithGrant:
  | { kinds: readonly string[]; compiled: CompiledQuery; id: string; now: Date }
  | undefined;

function tokensWithGrantQuery(db: Executor, kinds: readonly string[], id: string, now: Date) {
  if (compiledTokensWithGrant?.kinds !== kinds) {
    const marks = { id: `\u0000${randomUUID()}`, now: new Date(0) };
    compiledTokensWithGrant = {
      kinds,
      compiled: tokensWithGrant(db, kinds, marks.id, marks.now).compile(),
      ...marks,
    };
  }
  const { compiled, id: idMark, now: nowMark } = compiledTokensWithGrant;
  const parameters = compiled.parameters.map((p) => (p === idMark ? id : p === nowMark ? now : p));
  return { ...compiled, parameters } as CompiledQuery<TokenRow>;
}

type TokenRow = Awaited<ReturnType<ReturnType<typeof tokensWithGrant>['execute']>>[number];

/**
 * The tokens stored under one id among `kinds` (the library looks a presented value up as an
 * access token and a client credentials token at once, then as a refresh token), each exactly as
 * findLivePayload finds it, and with each in the same statement its grant's payload (as
 * findLivePayload finds it: unexpired; the grant's liveness is the token's, one grant_id) and the
 * grant's identity with its verified email and phone (verifiedIdentifiers' first of each). The
 * identity is enabled whenever a token is found with a grant: grantLive refuses it otherwise. One
 * round trip where userinfo, introspection and the refresh grant made three to five; every figure
 * is read now, none kept.
 */
export async function findTokensWithGrant(
  db: Executor,
  kinds: readonly string[],
  id: string,
  now: Date,
): Promise<TokenWithGrant[]> {
  const { rows } = await db.executeQuery(tokensWithGrantQuery(db, kinds, id, now));
  return tokensFrom(rows);
}

/**
 * findTokensWithGrant's statement, joined laterally to a client's guess budget (its key, as
 * GuessBudgets stores it): the one row the budget's aggregate always yields carries whether the
 * budget holds a count and its next allowed attempt, read now from the table every instance
 * counts in. Introspection and the refresh grant check the client's secret inside that budget and
 * then look the presented token up: one round trip instead of two (docs/performance.md, "OpenID
 * Provider reads").
 */
const tokensWithBudget = (db: Executor, kinds: readonly string[], id: string, now: Date, key: string) =>
  db
    .selectFrom((eb) =>
      eb
        .selectFrom('guess_budgets')
        .select((b) => [b.fn.countAll().as('budgetRows'), b.fn.max('next_attempt_at').as('budgetNextAt')])
        .where('key', '=', key)
        .as('b'),
    )
    .leftJoinLateral(tokensWithGrant(db, kinds, id, now).as('t'), (join) => join.onTrue())
    .select(['b.budgetRows', 'b.budgetNextAt'])
    .selectAll('t');

/** tokensWithBudget compiled once, as tokensWithGrantQuery is (the key is the third mark). */
let compiledTokensWithBudget:
  | { kinds: readonly string[]; compiled: CompiledQuery; id: string; now: Date; key: string }
  | undefined;

export async function findTokensWithBudget(
  db: Executor,
  kinds: readonly string[],
  id: string,
  now: Date,
  budgetKey: string,
): Promise<{ budget: { counted: boolean; nextAttemptAt: Date | null }; tokens: TokenWithGrant[] }> {
  if (compiledTokensWithBudget?.kinds !== kinds) {
    const marks = { id: `\u0000${randomUUID()}`, now: new Date(0), key: `\u0001${randomUUID()}` };
    compiledTokensWithBudget = {
      kinds,
      compiled: tokensWithBudget(db, kinds, marks.id, marks.now, marks.key).compile(),
      ...marks,
    };
  }
  const { compiled, id: idMark, now: nowMark, key: keyMark } = compiledTokensWithBudget;
  const parameters = compiled.parameters.map((p) =>
    p === idMark ? id : p === nowMark ? now : p === keyMark ? budgetKey : p,
  );
  type Row = TokenRow & { budgetRows: string | number | bigint; budgetNextAt: Date | string | null };
  const { rows } = await db.executeQuery({ ...compiled, parameters } as CompiledQuery<Row>);
  const first = rows[0];
  const nextAt = first?.budgetNextAt ?? null;
  return {
    budget: {
      counted: first !== undefined && Number(first.budgetRows) > 0,
      nextAttemptAt: nextAt === null ? null : new Date(nextAt),
    },
    // The lateral join's row when no token matched: every token column null.
    tokens: tokensFrom(rows.filter((r) => r.kind !== null)),
  };
}

function tokensFrom(rows: TokenRow[]): TokenWithGrant[] {
  const byKind = new Map<
    string,
    { found: TokenWithGrant; identityId: string | null; identifiers: TokenRow[]; row: TokenRow }
  >();
  for (const row of rows) {
    let entry = byKind.get(row.kind);
    if (!entry) {
      const found: TokenWithGrant = { kind: row.kind, ...asStored(row) };
      if (row.grantId !== null) {
        found.grant =
          row.grantPayload === null
            ? null
            : asStored({ payload: row.grantPayload, consumedAt: row.grantConsumedAt });
      }
      entry = { found, identityId: row.grantId === null ? null : row.identityId, identifiers: [], row };
      byKind.set(row.kind, entry);
    }
    if (row.identifierId !== null && row.verifiedAt !== null && row.removedAt === null) {
      entry.identifiers.push(row);
    }
  }
  return [...byKind.values()].map(({ found, identityId, identifiers, row }) => {
    if (identityId === null) return found;
    // verifiedIdentifiers' first of each type: the earliest verified, then the lowest id.
    const at = (row: TokenRow) => new Date(row.verifiedAt as Date | string).getTime();
    identifiers.sort((a, b) => at(a) - at(b) || (String(a.identifierId) < String(b.identifierId) ? -1 : 1));
    const first = (type: string) =>
      identifiers.find((i) => i.identifierType === type)?.identifierValue ?? null;
    found.account = {
      identityId,
      email: first('email'),
      phone: first('phone'),
      profile: {
        givenName: row.givenName,
        familyName: row.familyName,
        displayName: row.displayName,
        locale: String(row.locale),
        pictureId: row.pictureId ?? null,
      },
    };
    return found;
  });
}

export async function findPayloadByUid(
  db: Executor,
  kind: string,
  uid: string,
  now: Date,
): Promise<StoredPayload | undefined> {
  const row = await db
    .selectFrom('oidc_payloads')
    .select(['payload', 'consumed_at as consumedAt'])
    .where('kind', '=', kind)
    .where('uid', '=', uid)
    .where(notExpired(now))
    .executeTakeFirst();
  return row ? asStored(row) : undefined;
}

function asStored(row: { payload: unknown; consumedAt: Date | string | null }): StoredPayload {
  const payload = (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as Record<
    string,
    unknown
  >;
  return { payload, consumedAt: row.consumedAt === null ? null : new Date(row.consumedAt) };
}

/**
 * A device's poll at the token endpoint (RFC 8628 3.5), keyed by its device code's hash: true when
 * it comes at or after `now` reached the time the last allowed poll set, which it then moves to
 * `next`. A compare-and-set, so of two polls at once exactly one is allowed. A refused poll moves
 * nothing. The row is swept once `next` has passed.
 */
export async function allowDevicePoll(db: Executor, key: string, now: Date, next: Date): Promise<boolean> {
  const row = await db
    .insertInto('oidc_payloads')
    .values({ kind: 'DevicePoll', id: key, payload: '{}', grant_id: null, uid: null, expires_at: next })
    .onConflict((oc) =>
      oc
        .columns(['kind', 'id'])
        .doUpdateSet({ expires_at: next })
        .where('oidc_payloads.expires_at', '<=', now),
    )
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** The compare-and-set behind single use: true for exactly one of two concurrent consumers. */
export async function consumePayload(db: Executor, kind: string, id: string, now: Date): Promise<boolean> {
  const rows = await db
    .updateTable('oidc_payloads')
    .set({ consumed_at: now })
    .where('kind', '=', kind)
    .where('id', '=', id)
    .where('consumed_at', 'is', null)
    .returning('id')
    .execute();
  return rows.length === 1;
}

export async function deletePayload(db: Executor, kind: string, id: string): Promise<void> {
  await db.deleteFrom('oidc_payloads').where('kind', '=', kind).where('id', '=', id).execute();
}

/** Every code, token and the grant itself: what revoking a grant deletes. */
export async function deleteGrantPayloads(db: Executor, grantId: string): Promise<void> {
  await db.deleteFrom('oidc_payloads').where('grant_id', '=', grantId).execute();
}

export async function sweepExpiredPayloads(db: Executor, now: Date): Promise<number> {
  const r = await db.deleteFrom('oidc_payloads').where('expires_at', '<=', now).executeTakeFirst();
  await db.deleteFrom('oidc_sign_in_pages').where('expires_at', '<=', now).execute();
  return Number(r.numDeletedRows);
}

/** The hosted sign-in page an interaction first sent the browser to (migrations/0021). */
export interface SignInPage {
  /** The hosted session the browser held then; null when it held none. */
  heldSessionId: string | null;
  shownAt: Date;
}

/** Records the first time only: a page shown again keeps what the browser held the first time. */
export async function recordSignInPage(
  db: Executor,
  uid: string,
  page: SignInPage,
  expiresAt: Date,
): Promise<void> {
  await db
    .insertInto('oidc_sign_in_pages')
    .values({ uid, held_session_id: page.heldSessionId, shown_at: page.shownAt, expires_at: expiresAt })
    .onConflict((oc) => oc.column('uid').doNothing())
    .execute();
}

export async function signInPageOf(db: Executor, uid: string, now: Date): Promise<SignInPage | undefined> {
  const row = await db
    .selectFrom('oidc_sign_in_pages')
    .select(['held_session_id as heldSessionId', 'shown_at as shownAt'])
    .where('uid', '=', uid)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return row ? { heldSessionId: row.heldSessionId, shownAt: new Date(row.shownAt) } : undefined;
}

export interface GrantLink {
  grantId: string;
  identityId: string;
  sessionId: string;
  clientId: string;
  epoch: number;
  offline: boolean;
  scope: string;
}

/** Links a grant to the service session it was given in (again on a later consent: scope widens). */
export async function linkGrant(db: Executor, link: GrantLink, now: Date): Promise<void> {
  await db
    .insertInto('oidc_grants')
    .values({
      grant_id: link.grantId,
      identity_id: link.identityId,
      session_id: link.sessionId,
      client_id: link.clientId,
      epoch: link.epoch,
      offline: link.offline,
      scope: link.scope,
      created_at: now,
    })
    .onConflict((oc) =>
      oc.column('grant_id').doUpdateSet((eb) => ({
        // The grant's scope is everything ever granted in it, so it decides `offline` alone.
        scope: eb.ref('excluded.scope'),
        offline: eb.ref('excluded.offline'),
      })),
    )
    .execute();
}

export interface GrantOrganization {
  id: string;
  name: string;
  slug: string;
  role: string;
  /** The SCIM groups mapped to no role (docs/scim.md, "Groups and roles"). */
  groups: string[];
}

/**
 * The active organization of the service session a grant is linked to, with the identity's role
 * there as it is now: none when the session has no active organization, the organization is
 * disabled, or the membership is gone. Primary-key lookups in one statement.
 */
export async function grantOrganization(
  db: Executor,
  grantId: string,
  identityId: string,
): Promise<GrantOrganization | undefined> {
  return db
    .selectFrom('oidc_grants as g')
    .innerJoin('sessions as s', 's.id', 'g.session_id')
    .innerJoin('organization_memberships as m', (join) =>
      join
        .onRef('m.organization_id', '=', 's.active_organization_id')
        .onRef('m.identity_id', '=', 's.identity_id'),
    )
    .innerJoin('organizations as o', 'o.id', 'm.organization_id')
    .select(['o.id', 'o.name', 'o.slug', 'm.role'])
    .select(plainGroups(sql.ref('o.id'), sql.ref('m.identity_id')).as('groups'))
    .where('g.grant_id', '=', grantId)
    .where('g.identity_id', '=', identityId)
    .where('o.disabled_at', 'is', null)
    .executeTakeFirst();
}

/** The `sid` the grant's ID tokens carry, which its back-channel logout token must repeat. */
export async function setGrantSid(db: Executor, grantId: string, sid: string): Promise<void> {
  await db
    .updateTable('oidc_grants')
    .set({ sid })
    .where('grant_id', '=', grantId)
    .where('sid', 'is', null)
    .execute();
}

export interface EndedGrant {
  grantId: string;
  clientId: string;
  identityId: string;
  sid: string | null;
  reason: string | null;
}

/**
 * Ends grants, once each (compare-and-set on ended_at): by id, or every live grant that
 * `grantLive` refuses (its epoch ended, its session found stolen, or a session-bound grant's
 * session ended). Whoever ends a grant here is the one that sends its back-channel logout.
 */
export async function endGrants(
  db: Executor,
  which: { grantIds: string[] } | { dead: true; batch: number },
  reason: string,
  now: Date,
): Promise<EndedGrant[]> {
  if ('grantIds' in which && which.grantIds.length === 0) return [];
  const claim = db
    .updateTable('oidc_grants')
    .set((eb) => ({
      ended_at: now,
      // The sweep records `session_stolen` for the grants it ends because their session was found
      // stolen (its `reason` for the rest), so the audit trail tells a theft from a sign-out.
      ended_reason:
        'grantIds' in which
          ? eb.val(reason)
          : eb
              .case()
              .when(
                eb.exists(
                  eb
                    .selectFrom('sessions as s')
                    .select('s.id')
                    .whereRef('s.id', '=', 'oidc_grants.session_id')
                    .where('s.theft_detected_at', 'is not', null),
                ),
              )
              .then('session_stolen')
              .else(reason)
              .end(),
    }))
    .where('ended_at', 'is', null);
  const q =
    'grantIds' in which
      ? claim.where('grant_id', 'in', which.grantIds)
      : claim.where('grant_id', 'in', (eb) =>
          eb
            .selectFrom('oidc_grants as g')
            .innerJoin('identities as i', 'i.id', 'g.identity_id')
            .innerJoin('sessions as s', 's.id', 'g.session_id')
            .select('g.grant_id')
            .where('g.ended_at', 'is', null)
            .where((w) =>
              w.or([
                w('i.disabled_at', 'is not', null),
                w('i.session_epoch', '<>', w.ref('g.epoch')),
                w('s.theft_detected_at', 'is not', null),
                w.and([
                  w('g.offline', '=', false),
                  w.or([w('s.revoked_at', 'is not', null), w('s.expires_at', '<=', now)]),
                ]),
              ]),
            )
            .limit(which.batch),
        );
  return q
    .returning([
      'grant_id as grantId',
      'client_id as clientId',
      'identity_id as identityId',
      'sid',
      'ended_reason as reason',
    ])
    .execute();
}

/** One grant's link as it is now (its events' `data`, grant-events.ts). */
export async function grantById(db: Executor, grantId: string) {
  return db
    .selectFrom('oidc_grants')
    .select([
      'grant_id as id',
      'client_id as clientId',
      'identity_id as identityId',
      'session_id as sessionId',
      'scope',
      'offline',
      'created_at as createdAt',
      'ended_at as endedAt',
      'ended_reason as endedReason',
    ])
    .where('grant_id', '=', grantId)
    .executeTakeFirst();
}

export async function liveGrantsOf(db: Executor, identityId: string, clientId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('oidc_grants')
    .select('grant_id')
    .where('identity_id', '=', identityId)
    .where('client_id', '=', clientId)
    .where('ended_at', 'is', null)
    .execute();
  return rows.map((r) => r.grant_id);
}

export interface ConnectedApp {
  clientId: string;
  scope: string;
  since: Date;
  lastGrantAt: Date | null;
}

/** The clients an identity has a remembered consent or a live grant for. */
export async function connectedApps(db: Executor, identityId: string): Promise<ConnectedApp[]> {
  const consents = await db
    .selectFrom('oidc_consents')
    .select(['client_id as clientId', 'scope', 'granted_at as since'])
    .where('identity_id', '=', identityId)
    .execute();
  const grants = await db
    .selectFrom('oidc_grants')
    .select(['client_id as clientId'])
    .select((eb) => [eb.fn.min('created_at').as('first'), eb.fn.max('created_at').as('last')])
    .select((eb) => eb.fn.agg<string>('string_agg', ['scope', eb.val(' ')]).as('scopes'))
    .where('identity_id', '=', identityId)
    .where('ended_at', 'is', null)
    .groupBy('client_id')
    .execute();
  const apps = new Map<string, ConnectedApp>();
  for (const c of consents) {
    apps.set(c.clientId, {
      clientId: c.clientId,
      scope: c.scope,
      since: new Date(c.since),
      lastGrantAt: null,
    });
  }
  for (const g of grants) {
    const known = apps.get(g.clientId);
    const scope = [...new Set(`${known?.scope ?? ''} ${g.scopes}`.split(' ').filter(Boolean))].join(' ');
    const first = new Date(g.first as Date);
    apps.set(g.clientId, {
      clientId: g.clientId,
      scope,
      since: known && known.since < first ? known.since : first,
      lastGrantAt: new Date(g.last as Date),
    });
  }
  return [...apps.values()].sort((a, b) => a.since.getTime() - b.since.getTime());
}

export async function consentOf(
  db: Executor,
  identityId: string,
  clientId: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('oidc_consents')
    .select('scope')
    .where('identity_id', '=', identityId)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return row?.scope;
}

export async function rememberConsent(
  db: Executor,
  identityId: string,
  clientId: string,
  scope: string,
  now: Date,
): Promise<void> {
  await db
    .insertInto('oidc_consents')
    .values({ identity_id: identityId, client_id: clientId, scope, granted_at: now, updated_at: now })
    .onConflict((oc) => oc.columns(['identity_id', 'client_id']).doUpdateSet({ scope, updated_at: now }))
    .execute();
}

export async function forgetConsent(db: Executor, identityId: string, clientId: string): Promise<boolean> {
  const r = await db
    .deleteFrom('oidc_consents')
    .where('identity_id', '=', identityId)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Erasure: the identity's consents go; its grants were ended by the sessions ending. */
export async function eraseConsents(db: Executor, identityId: string): Promise<void> {
  await db.deleteFrom('oidc_consents').where('identity_id', '=', identityId).execute();
}

export interface StoredClient {
  clientId: string;
  metadata: Record<string, unknown>;
  secretHash: string | null;
  firstParty: boolean;
  createdAt: Date;
  updatedAt: Date;
}

const CLIENT_COLUMNS = [
  'client_id as clientId',
  'metadata',
  'secret_hash as secretHash',
  'first_party as firstParty',
  'created_at as createdAt',
  'updated_at as updatedAt',
] as const;

function asClient(row: {
  clientId: string;
  metadata: unknown;
  secretHash: string | null;
  firstParty: boolean;
  createdAt: Date | string;
  updatedAt: Date | string;
}): StoredClient {
  return {
    ...row,
    metadata: (typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata) as Record<
      string,
      unknown
    >,
    createdAt: new Date(row.createdAt),
    updatedAt: new Date(row.updatedAt),
  };
}

export async function findClient(db: Executor, clientId: string): Promise<StoredClient | undefined> {
  const row = await db
    .selectFrom('oidc_clients')
    .select(CLIENT_COLUMNS)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  return row ? asClient(row) : undefined;
}

export async function listClients(
  db: Executor,
  after: string | null,
  limit: number,
): Promise<StoredClient[]> {
  let q = db.selectFrom('oidc_clients').select(CLIENT_COLUMNS).orderBy('client_id').limit(limit);
  if (after !== null) q = q.where('client_id', '>', after);
  return (await q.execute()).map(asClient);
}

/** False when the id is taken (the unique key decides between two racing creations). */
export async function insertClient(
  db: Executor,
  c: { clientId: string; metadata: Record<string, unknown>; secretHash: string | null; firstParty: boolean },
  now: Date,
): Promise<boolean> {
  const rows = await db
    .insertInto('oidc_clients')
    .values({
      client_id: c.clientId,
      metadata: JSON.stringify(c.metadata),
      secret_hash: c.secretHash,
      first_party: c.firstParty,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column('client_id').doNothing())
    .returning('client_id')
    .execute();
  return rows.length === 1;
}

/** Compare-and-set on updated_at, so two concurrent updates cannot both apply (the ETag). */
export async function updateClient(
  db: Executor,
  clientId: string,
  change: { metadata?: Record<string, unknown>; secretHash?: string | null; firstParty?: boolean },
  expectedUpdatedAt: Date | null,
  now: Date,
): Promise<StoredClient | undefined> {
  let q = db
    .updateTable('oidc_clients')
    .set({
      ...(change.metadata ? { metadata: JSON.stringify(change.metadata) } : {}),
      ...(change.secretHash !== undefined ? { secret_hash: change.secretHash } : {}),
      ...(change.firstParty !== undefined ? { first_party: change.firstParty } : {}),
      updated_at: now,
    })
    .where('client_id', '=', clientId);
  if (expectedUpdatedAt) q = q.where('updated_at', '=', expectedUpdatedAt);
  const row = await q.returning(CLIENT_COLUMNS).executeTakeFirst();
  return row ? asClient(row) : undefined;
}

export async function deleteClient(db: Executor, clientId: string): Promise<boolean> {
  const r = await db.deleteFrom('oidc_clients').where('client_id', '=', clientId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Every live grant of a client (a deleted client's grants end with it). */
export async function liveGrantsOfClient(db: Executor, clientId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('oidc_grants')
    .select('grant_id')
    .where('client_id', '=', clientId)
    .where('ended_at', 'is', null)
    .execute();
  return rows.map((r) => r.grant_id);
}

export interface SealedOidcKey {
  kid: string;
  alg: string;
  sealedPrivateJwk: string;
  publicJwk: Record<string, unknown>;
  createdAt: Date;
  retiredAt: Date | null;
}

/** Signing keys still signing or still published (retired after `publishedSince`). */
export async function oidcKeys(db: Executor, publishedSince: Date): Promise<SealedOidcKey[]> {
  const rows = await db
    .selectFrom('oidc_signing_keys')
    .select([
      'kid',
      'alg',
      'sealed_private_jwk as sealedPrivateJwk',
      'public_jwk as publicJwk',
      'created_at as createdAt',
      'retired_at as retiredAt',
    ])
    .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', publishedSince)]))
    .orderBy('created_at')
    .execute();
  return rows.map((r) => ({
    ...r,
    publicJwk: (typeof r.publicJwk === 'string' ? JSON.parse(r.publicJwk) : r.publicJwk) as Record<
      string,
      unknown
    >,
    createdAt: new Date(r.createdAt),
    retiredAt: r.retiredAt === null ? null : new Date(r.retiredAt),
  }));
}

export async function insertOidcKey(
  db: Executor,
  k: { kid: string; alg: string; sealedPrivateJwk: string; publicJwk: Record<string, unknown> },
  now: Date,
): Promise<void> {
  await db
    .insertInto('oidc_signing_keys')
    .values({
      kid: k.kid,
      alg: k.alg,
      sealed_private_jwk: k.sealedPrivateJwk,
      public_jwk: JSON.stringify(k.publicJwk),
      created_at: now,
    })
    .execute();
}

/** Retires the signing keys of `alg` other than `keep` (a rotation); answers their kids. */
export async function retireOidcKeys(db: Executor, alg: string, keep: string, now: Date): Promise<string[]> {
  const rows = await db
    .updateTable('oidc_signing_keys')
    .set({ retired_at: now })
    .where('alg', '=', alg)
    .where('kid', '<>', keep)
    .where('retired_at', 'is', null)
    .returning('kid')
    .execute();
  return rows.map((r) => r.kid);
}

/** Keys retired before `before` have outlived every token they signed. */
export async function deleteRetiredOidcKeys(db: Executor, before: Date): Promise<void> {
  await db.deleteFrom('oidc_signing_keys').where('retired_at', '<=', before).execute();
}

/**
 * A deleted client's remembered consents: a later client registered under the same id must ask
 * again, not inherit what people granted the old one.
 */
export async function forgetClientConsents(db: Executor, clientId: string): Promise<number> {
  const r = await db.deleteFrom('oidc_consents').where('client_id', '=', clientId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/**
 * Every payload the provider stored for a client outside a grant (client-credentials tokens,
 * codes, access tokens): a deleted client's tokens go with it.
 */
export async function deleteClientPayloads(db: Executor, clientId: string): Promise<number> {
  const r = await db
    .deleteFrom('oidc_payloads')
    // raw: the column is typed as any JSON value, so the builder's JSON path refuses a key on it.
    .where(sql<string>`payload->>'clientId'`, '=', clientId)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** The signing keys that sign now (not retired): their ids, algorithms and ages, never a key. */
export async function liveOidcKeyAges(
  db: Executor,
): Promise<{ kid: string; alg: string; createdAt: Date }[]> {
  return db
    .selectFrom('oidc_signing_keys')
    .select(['kid', 'alg', 'created_at as createdAt'])
    .where('retired_at', 'is', null)
    .orderBy('created_at')
    .orderBy('kid')
    .execute();
}
