import type { Clock } from '../../platform/clock.js';
import type { Db, Executor } from '../../platform/db/database.js';
import { type AccountClaims, DEVICE_CODE_TTL, type FoundToken, type PayloadStore } from './provider.js';
import * as repo from './repository.js';

export interface OidcAdapterDeps {
  db: Db;
  clock: Clock;
  /**
   * Told, in the revocation's transaction, of the grants it ended: their events and audit records
   * (no back-channel logout: the client itself, or a reuse, asked for it).
   */
  grantsEnded(trx: Executor, grants: repo.EndedGrant[]): Promise<void>;
}

/**
 * The storage the OpenID Provider's library keeps its models in, one instance per model name as
 * node-oidc-provider's own memory adapter (`lib/adapters/memory_adapter.js`), in the
 * `oidc_payloads` table through the repository. provider.ts wraps it in the library's adapter
 * (what only the library's models need: clients, replay claims, hosted sessions); this holds how a
 * payload is kept: under which grant, found by which uid, for how long.
 */
export class OidcAdapter implements PayloadStore {
  constructor(
    readonly name: string,
    private readonly deps: OidcAdapterDeps,
  ) {}

  #now(): Date {
    return this.deps.clock.now();
  }

  async upsert(id: string, payload: Record<string, unknown>, expiresIn: number | undefined): Promise<void> {
    await this.#write(id, payload, expiresIn);
  }

  /**
   * A refresh token rotated: `consumedId` consumed (compare-and-set) and the new one stored in one
   * statement. False when `consumedId` was consumed already (the new one is stored anyway, its
   * value never handed out; the caller ends the grant).
   */
  rotate(
    consumedId: string,
    id: string,
    payload: Record<string, unknown>,
    expiresIn: number | undefined,
  ): Promise<boolean> {
    return this.#write(id, payload, expiresIn, consumedId);
  }

  async #write(
    id: string,
    payload: Record<string, unknown>,
    expiresIn: number | undefined,
    consumedId?: string,
  ): Promise<boolean> {
    const { db } = this.deps;
    const kind = this.name;
    // A grant is stored under its own id as its grant: it lives exactly as its tokens do. An
    // interaction is not one of its grant's tokens: a new sign-in for it (prompt=login) ends
    // the hosted session that grant hangs off, and the interaction must survive that to
    // finish (a new grant is made for it, provider.ts's grant).
    const grantId =
      kind === 'Grant'
        ? id
        : kind !== 'Interaction' && typeof payload.grantId === 'string'
          ? payload.grantId
          : null;
    // A device code is found by the user code a person types (the uid column, indexed). Its
    // row outlives the code by another lifetime: the library then answers the device's poll
    // expired_token and the verification page refuses it, where a row gone would answer
    // invalid_grant (RFC 8628 3.5 asks for expired_token).
    const device = kind === 'DeviceCode';
    const keptFor = expiresIn ? expiresIn + (device ? DEVICE_CODE_TTL : 0) : 0;
    // A refresh token moves its grant's end to at least its own, in the statement that stores it.
    const grantEnd =
      kind === 'RefreshToken' && grantId && expiresIn && typeof payload.exp === 'number'
        ? { grantId, expiresAt: new Date(this.#now().getTime() + expiresIn * 1000), exp: payload.exp }
        : undefined;
    const consumed = await repo.upsertPayload(
      db,
      {
        kind,
        id,
        payload,
        grantId,
        uid: device
          ? typeof payload.userCode === 'string'
            ? payload.userCode
            : null
          : typeof payload.uid === 'string'
            ? payload.uid
            : null,
        expiresAt: keptFor ? new Date(this.#now().getTime() + keptFor * 1000) : null,
      },
      grantEnd,
      consumedId === undefined ? undefined : { id: consumedId, now: this.#now() },
    );
    // The sid the ID tokens of this grant carry: its back-channel logout repeats it.
    if ((kind === 'AuthorizationCode' || device) && grantId && typeof payload.sid === 'string') {
      await repo.setGrantSid(db, grantId, payload.sid);
    }
    return consumed;
  }

  async find(id: string): Promise<Record<string, unknown> | undefined> {
    const found = await repo.findLivePayload(this.deps.db, this.name, id, this.#now());
    return found && asPayload(found);
  }

  async findTokens(id: string, kinds: readonly string[]): Promise<Map<string, FoundToken>> {
    return foundTokens(await repo.findTokensWithGrant(this.deps.db, kinds, id, this.#now()));
  }

  /**
   * findTokens and a client's guess budget (its stored key) in one statement: the budget's state
   * at once, the tokens for the library's finds that follow in the request.
   */
  async findTokensWithBudget(
    id: string,
    kinds: readonly string[],
    budgetKey: string,
  ): Promise<{ budget: { counted: boolean; nextAttemptAt: Date | null }; tokens: Map<string, FoundToken> }> {
    const { budget, tokens } = await repo.findTokensWithBudget(
      this.deps.db,
      kinds,
      id,
      this.#now(),
      budgetKey,
    );
    return { budget, tokens: foundTokens(tokens) };
  }

  async findByUid(uid: string): Promise<Record<string, unknown> | undefined> {
    return (await repo.findPayloadByUid(this.deps.db, this.name, uid, this.#now()))?.payload;
  }

  async findByUserCode(userCode: string): Promise<Record<string, unknown> | undefined> {
    return (await repo.findPayloadByUid(this.deps.db, 'DeviceCode', userCode, this.#now()))?.payload;
  }

  consume(id: string): Promise<boolean> {
    return repo.consumePayload(this.deps.db, this.name, id, this.#now());
  }

  destroy(id: string): Promise<void> {
    return repo.deletePayload(this.deps.db, this.name, id);
  }

  claim(id: string, payload: Record<string, unknown>, expiresIn: number): Promise<boolean> {
    const now = this.#now();
    return repo.claimPayload(
      this.deps.db,
      { kind: this.name, id, payload, expiresAt: new Date(now.getTime() + expiresIn * 1000) },
      now,
    );
  }

  /**
   * The library revokes a grant (the revocation endpoint, a code or refresh token used twice, an
   * RP-initiated logout) model by model, several calls at once: the one whose compare-and-set ends
   * the grant writes its event and audit record, in the transaction that ends it and deletes its
   * tokens (docs/decisions.md, "Events: the grants the library revokes").
   */
  async revokeByGrantId(grantId: string, reason: string): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      const ended = await repo.endGrants(trx, { grantIds: [grantId] }, reason, this.#now());
      await repo.deleteGrantPayloads(trx, grantId);
      await this.deps.grantsEnded(trx, ended);
    });
  }
}

/** A stored payload as the library reads it: `consumed` (seconds) once it was consumed. */
function asPayload(found: repo.StoredPayload): Record<string, unknown> {
  return found.consumedAt
    ? { ...found.payload, consumed: Math.floor(found.consumedAt.getTime() / 1000) }
    : found.payload;
}

/** The repository's tokens as the provider's adapter hands them over, by kind. */
function foundTokens(found: repo.TokenWithGrant[]): Map<string, FoundToken> {
  return new Map(
    found.map((token) => {
      const { grant, account } = token;
      const claims: AccountClaims = {
        ...(account?.email ? { email: { value: account.email } } : {}),
        ...(account?.phone ? { phone: { value: account.phone } } : {}),
        ...(account ? { profile: account.profile } : {}),
      };
      return [
        token.kind,
        {
          payload: asPayload(token),
          ...(grant !== undefined ? { grant: grant && asPayload(grant) } : {}),
          ...(account ? { account: { identityId: account.identityId, claims } } : {}),
        },
      ];
    }),
  );
}
