import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import { parseStoredHash } from '../../../platform/crypto/imported-hashes.js';
import type { PasswordHasher } from '../../../platform/crypto/passwords.js';
import type { Database } from '../../../platform/db/database.js';
import type { RequestMeta } from '../../../platform/http/auth.js';
import { Problem } from '../../../platform/problem.js';
import { addressBucket } from '../../../platform/rate-limit/address.js';
import { type GuessBudgets, guessSubject } from '../../../platform/rate-limit/guess-budget.js';
import type { HashProfiles } from '../../identities/hash-profiles.js';
import { type IdentifierInput, normaliseIdentifier } from '../../identities/identifier.js';
import { findPasswordHolder, NOBODY, upgradePasswordHash } from '../../identities/repository.js';
import { refuseAddressUnderSso } from '../../organizations/sso-requirement/rule.js';
import { recordAttempt, withdrawAttempt } from '../../sessions/repository.js';
import type { Complete, SignInResult, Strategy } from '../strategy.js';

export type PasswordInput = IdentifierInput & { password: string };

/** What the password proof uses. */
export interface PasswordStrategyDeps {
  database: Database;
  clock: Clock;
  passwords: PasswordHasher;
  guesses: GuessBudgets;
  audit: AuditLog;
  /** The imported hash profiles present, measured: the floor of every refusal (equal time). */
  hashProfiles: Pick<HashProfiles, 'ready'>;
}

/**
 * The password path of POST /sign-ins. Unknown account, unverified identifier and wrong password
 * each cost one Argon2id verify (a dummy hash when there is nothing to verify against) and answer
 * the same refusal. The lock is never consulted here. Once imported hashes exist (bcrypt, PBKDF2,
 * scrypt…), every refusal is padded to the slowest imported profile's verification time, so it
 * tells neither an imported hash nor an absent account; an imported hash that verifies is replaced
 * by Argon2id in the sign-in's own transaction (docs/decisions.md, "Imported password hashes").
 */
export class PasswordStrategy implements Strategy<PasswordInput> {
  constructor(private readonly deps: PasswordStrategyDeps) {}

  async signIn(input: PasswordInput, meta: RequestMeta, complete: Complete): Promise<SignInResult> {
    const { db } = this.deps.database;
    // Shed before anything is written when the Argon2id queue is past its bound (503).
    this.deps.passwords.admit();
    // Through the hasher's door: a burst of sign-ins does its reads a few at a time, each just
    // before its turn at the hash, not all at once on the event loop (docs/performance.md).
    const { ok, hash, holder, began, budget, provisional } = await this.deps.passwords.enter(() =>
      this.check(input, meta),
    );
    if (!ok || !hash || !holder) {
      await this.deps.passwords.padRefusal(began);
      throw new Problem('identity.sign_in_refused');
    }
    await db.transaction().execute(async (trx) => {
      await this.deps.guesses.forgive(trx, budget);
      await withdrawAttempt(trx, provisional);
    });
    const proven = {
      identityId: holder.identityId,
      epoch: holder.sessionEpoch,
      method: 'password',
      stage: 'first',
    } as const;
    if (!this.deps.passwords.needsUpgrade(hash)) return complete(proven, meta);
    // An imported hash: Argon2id of the password just proved, made before the transaction (no
    // transaction waits on a hash), swapped by compare-and-set in the sign-in's transaction so the
    // session and the upgrade commit together or not at all.
    const upgraded = await this.deps.passwords.hash(input.password);
    await complete.admit(proven, meta);
    return db.transaction().execute(async (trx) => {
      if (await upgradePasswordHash(trx, holder.identityId, hash, upgraded)) {
        await this.deps.audit.appendOwn(trx, 'identity.password.upgraded', holder.identityId, {
          from: parseStoredHash(hash)?.scheme ?? 'unknown',
        });
      }
      return complete({ ...proven, admitted: true }, meta, trx);
    });
  }

  /** The reads, the provisional refusal and the hash: the part of the path inside the door. */
  private async check(input: PasswordInput, meta: RequestMeta) {
    const { db } = this.deps.database;
    // A padded refusal is measured from here, not from the check: the reads and the provisional
    // record before it cost an account a little more than no account, and the floor covers that
    // too (docs/decisions.md, "Imported password hashes", equal time).
    const began = performance.now();
    const ident = normaliseIdentifier(input);
    // Require SSO: decided by the address's domain alone, before any account or password is read,
    // so known or unknown, right or wrong password, the answer is the same (docs/sso.md).
    await refuseAddressUnderSso(db, ident);
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
    await this.deps.hashProfiles.ready();
    const ok = hash
      ? await this.deps.passwords.verify(hash, input.password)
      : await this.deps.passwords.burn(input.password);
    return { ok, hash, holder, began, budget, provisional };
  }
}
