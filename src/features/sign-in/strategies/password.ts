import { randomUUID } from 'node:crypto';
import type { Clock } from '../../../platform/clock.js';
import type { PasswordHasher } from '../../../platform/crypto/passwords.js';
import type { Database } from '../../../platform/db/database.js';
import type { RequestMeta } from '../../../platform/http/auth.js';
import { Problem } from '../../../platform/problem.js';
import { addressBucket } from '../../../platform/rate-limit/address.js';
import { type GuessBudgets, guessSubject } from '../../../platform/rate-limit/guess-budget.js';
import { type IdentifierInput, normaliseIdentifier } from '../../identities/identifier.js';
import { findPasswordHolder, NOBODY } from '../../identities/repository.js';
import { recordAttempt, withdrawAttempt } from '../../sessions/repository.js';
import type { Complete, SignInResult, Strategy } from '../strategy.js';

export type PasswordInput = IdentifierInput & { password: string };

/** What the password proof uses. */
export interface PasswordStrategyDeps {
  database: Database;
  clock: Clock;
  passwords: PasswordHasher;
  guesses: GuessBudgets;
}

/**
 * The password path of POST /sign-ins. Unknown account, unverified identifier and wrong password
 * each cost one Argon2id verify (a dummy hash when there is nothing to verify against) and answer
 * the same refusal. The lock is never consulted here.
 */
export class PasswordStrategy implements Strategy<PasswordInput> {
  constructor(private readonly deps: PasswordStrategyDeps) {}

  async signIn(input: PasswordInput, meta: RequestMeta, complete: Complete): Promise<SignInResult> {
    const { db } = this.deps.database;
    // Shed before anything is written when the Argon2id queue is past its bound (503).
    this.deps.passwords.admit();
    const ident = normaliseIdentifier(input);
    // Per identifier and address prefix, known account or not: a stranger elsewhere who knows only
    // the identifier cannot hold back the owner's correct password.
    const budget = guessSubject.password(ident?.value ?? input.identifier, addressBucket(meta.ip ?? ''));
    const holder = ident ? await findPasswordHolder(db, ident) : undefined;
    // Admitted and recorded as refused in one commit, before the password is looked at: on the
    // account when there is one, by the same statement keyed to nobody when there is none. A
    // refusal then writes nothing more, so its time does not tell an account from no account
    // (docs/decisions.md, "Guessing, proxies and hardening", equal time); a success withdraws the
    // provisional record.
    const provisional = randomUUID();
    await db.transaction().execute(async (trx) => {
      await this.deps.guesses.admit(budget, trx);
      await recordAttempt(trx, {
        id: provisional,
        identityId: holder?.identityId ?? NOBODY,
        now: this.deps.clock.now(),
        method: 'password',
        outcome: 'refused',
        ip: meta.ip,
        userAgent: meta.userAgent,
      });
    });
    // A disabled identity's password is never checked: the same refusal, at the same cost.
    const hash = holder?.verifiedAt && holder.disabledAt === null ? holder.passwordHash : null;
    // The epoch is read before the password is checked: a revocation committed while the check
    // runs moves the epoch on, and the session issued below is dead on arrival.
    const ok = hash
      ? await this.deps.passwords.verify(hash, input.password)
      : await this.deps.passwords.burn(input.password);
    if (!ok || !hash || !holder) throw new Problem('identity.sign_in_refused');
    await db.transaction().execute(async (trx) => {
      await this.deps.guesses.forgive(trx, budget);
      await withdrawAttempt(trx, provisional);
    });
    return complete(
      { identityId: holder.identityId, epoch: holder.sessionEpoch, method: 'password', stage: 'first' },
      meta,
    );
  }
}
