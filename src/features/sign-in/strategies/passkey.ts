import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import type { Database } from '../../../platform/db/database.js';
import type { RequestMeta } from '../../../platform/http/auth.js';
import { Problem } from '../../../platform/problem.js';
import { addressBucket } from '../../../platform/rate-limit/address.js';
import { type GuessBudgets, guessSubject } from '../../../platform/rate-limit/guess-budget.js';
import { findIdentity } from '../../identities/repository.js';
import type { PasskeyService } from '../../passkeys/service.js';
import { recordAttempt } from '../../sessions/repository.js';
import type { SessionGrant } from '../../sessions/service.js';
import type { Complete, Strategy } from '../strategy.js';

/** What the passkey proof uses. */
export interface PasskeyStrategyDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  guesses: GuessBudgets;
}

/**
 * POST /sign-ins/passkeys. Admitted against the guess budget of the credential and the client's
 * address prefix before anything is checked (like a password). A passkey with user verification
 * is two factors, so a session opens at once, in the transaction that spends the challenge
 * (passkeys/service.ts, `assert`). A refusal is recorded in the owner's sign-in history only when
 * the passkey really signed: a stranger sending its credential id with a bad signature leaves
 * nothing there.
 */
export class PasskeyStrategy implements Strategy<AuthenticationResponseJSON, SessionGrant> {
  constructor(
    private readonly deps: PasskeyStrategyDeps,
    private readonly passkeys: PasskeyService,
  ) {}

  async signIn(
    credential: AuthenticationResponseJSON,
    meta: RequestMeta,
    complete: Complete,
  ): Promise<SessionGrant> {
    const budget = guessSubject.passkey(credential.id, addressBucket(meta.ip ?? ''));
    await this.deps.guesses.admit(budget);
    return this.passkeys.assert(
      'sign_in',
      credential,
      'identity.sign_in_refused',
      { sessionId: null },
      async (trx, passkey) => {
        const identity = await findIdentity(trx, passkey.identityId);
        if (!identity) throw new Problem('identity.sign_in_refused');
        await this.deps.guesses.forgive(trx, budget);
        return complete(
          {
            identityId: passkey.identityId,
            epoch: identity.sessionEpoch,
            method: 'passkey',
            stage: 'final',
            admitted: true,
          },
          meta,
          trx,
        );
      },
      async (passkey, reason) => {
        const { db } = this.deps.database;
        await recordAttempt(db, {
          identityId: passkey.identityId,
          now: this.deps.clock.now(),
          method: 'passkey',
          outcome: 'refused',
          ip: meta.ip,
          userAgent: meta.userAgent,
        });
        if (reason === 'counter') {
          // A counter that went backwards on a device-bound passkey: a cloned authenticator.
          await this.deps.audit.appendOwn(db, 'identity.passkey.counter_regressed', passkey.identityId, {
            methodId: passkey.id,
          });
        }
      },
      // Once the signature verified, before the challenge's transaction: a hook never waits inside one.
      (passkey) => complete.admit({ identityId: passkey.identityId, method: 'passkey' }, meta),
    );
  }
}
