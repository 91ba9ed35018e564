import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../platform/context.js';
import { checkNewPassword } from '../../platform/crypto/password-policy.js';
import { generateCode, safeEqual } from '../../platform/crypto/tokens.js';
import { Problem } from '../../platform/http/problem.js';
import { verificationText } from '../../platform/notify/notifier.js';
import { type IdentifierInput, normaliseIdentifier } from '../identities/identifier.js';
import {
  bumpSessionEpoch,
  chargeLiveChallenges,
  findIdentifier,
  findIdentity,
  liveChallenges,
  spendChallenge,
} from '../identities/repository.js';
import type { SessionPrincipal } from '../sessions/guard.js';
import { adoptEpoch, lockSession, revokeIdentitySessions } from '../sessions/repository.js';
import {
  insertRecoveryChallenge,
  type RecoveryChallengeRow,
  revokeRecoveryChallenges,
  setPassword,
} from './repository.js';

/** Contract 5: five attempts per out-of-band challenge (the identity-wide lock counts on top). */
export const RECOVERY_MAX_ATTEMPTS = 5;
const LOCK_ROUTE = 'password-recovery-confirmation';

/**
 * The password policy runs before anything secret is consulted, so its refusal (400, naming the
 * rule, as at sign-up) says nothing about the current password, the account or the code.
 */
function checkPolicy(password: string): void {
  const policy = checkNewPassword(password);
  if (policy.ok) return;
  const entry =
    policy.reason === 'common'
      ? { code: 'common_password', message: 'newPassword is too common' }
      : policy.reason === 'too_short'
        ? { code: 'minLength', message: 'newPassword is too short' }
        : { code: 'maxLength', message: 'newPassword is too long' };
  throw new Problem('validation.failed', { errors: [{ location: 'body', field: 'newPassword', ...entry }] });
}

export class PasswordService {
  constructor(private readonly ctx: AppContext) {}

  /**
   * POST /password-changes. A wrong current password, an identity without a password and a
   * password changed meanwhile all answer the same 422. Success ends every other session: the
   * epoch moves on (sign-ins still verifying the old password are dead on arrival) and the
   * caller's session alone is moved to the new epoch.
   */
  async change(
    principal: SessionPrincipal,
    input: { currentPassword: string; newPassword: string },
  ): Promise<void> {
    checkPolicy(input.newPassword);
    const { identityId, sessionId } = principal;
    const { db } = this.ctx.database;
    const refusal = () => new Problem('identity.password_change_refused');
    // Argon2 runs outside the transaction; the row is re-checked under its lock below.
    const identity = await findIdentity(db, identityId);
    const verifiedHash = identity?.password_hash ?? null;
    const ok = verifiedHash
      ? await this.ctx.passwords.verify(verifiedHash, input.currentPassword)
      : await this.ctx.passwords.burn(input.currentPassword);
    if (!ok) throw refusal();
    const newHash = await this.ctx.passwords.hash(input.newPassword);
    const now = this.ctx.clock.now();
    await db.transaction().execute(async (trx) => {
      const locked = await findIdentity(trx, identityId, true);
      // Changed or removed since it was verified: the proof no longer holds.
      if (!locked || locked.password_hash !== verifiedHash) throw refusal();
      const session = await lockSession(trx, sessionId);
      if (!session || session.revoked_at !== null || session.epoch !== locked.session_epoch) {
        // The caller's session ended while this request waited: it is not revived here.
        throw new Problem('identity.session_required', { headers: { 'www-authenticate': 'Bearer' } });
      }
      await setPassword(trx, identityId, newHash, now);
      const epoch = await bumpSessionEpoch(trx, identityId);
      await adoptEpoch(trx, sessionId, epoch);
      const ended = await revokeIdentitySessions(trx, identityId, 'password_changed', now, sessionId);
      await this.ctx.audit.append(trx, {
        name: 'identity.password.changed',
        actor: identityId,
        target: identityId,
        outcome: 'success',
        details: { sessionsEnded: ended },
      });
    });
  }

  /**
   * POST /password-recoveries. The answer and its cost are the same whether or not the address
   * belongs to an account: a code is always generated and hashed, one transaction always writes
   * an audit record, and the message (only for a verified address) leaves after the answer, so a
   * slow channel cannot be timed.
   */
  async start(input: IdentifierInput): Promise<{ challengeExpiresAt: string }> {
    const ident = normaliseIdentifier(input);
    // Both refusals depend on the address's shape and the configuration only, never on an account.
    if (!ident) throw new Problem('identity.identifier_unusable');
    if (!this.ctx.notifier.canDeliver(ident.type))
      throw new Problem('identity.identifier_channel_unavailable');
    const { db } = this.ctx.database;
    const lifetime = this.ctx.config.lifetimes.challenge;
    const code = generateCode(this.ctx.config.verificationCodeFormat, this.ctx.config.verificationCodeLength);
    const codeHash = this.ctx.codes.hash(code);
    const now = this.ctx.clock.now();
    const expiresAt = new Date(now.getTime() + lifetime * 1000);
    const identifier = await findIdentifier(db, ident);
    const known = identifier?.verified_at ? identifier : undefined;
    await db.transaction().execute(async (trx) => {
      const challengeId = randomUUID();
      if (known) {
        await insertRecoveryChallenge(trx, {
          id: challengeId,
          identityId: known.identity_id,
          identifierId: known.id,
          codeHash,
          maxAttempts: RECOVERY_MAX_ATTEMPTS,
          now,
          expiresAt,
        });
      }
      // Recorded either way (no address in the record), which also keeps the work alike.
      await this.ctx.audit.append(trx, {
        name: 'identity.password_recovery.requested',
        actor: null,
        target: known?.identity_id ?? null,
        outcome: known ? 'success' : 'failure',
        details: { identifierType: ident.type, challengeId: known ? challengeId : null },
      });
    });
    if (known) {
      const message = {
        to: ident.value,
        type: ident.type,
        ...verificationText('password_recovery', code, lifetime / 60),
      };
      // After the answer is on its way; the notifier reports failures as results and logs them.
      setImmediate(() => {
        this.ctx.notifier.send(message).catch((err: unknown) => {
          this.ctx.log.error({ errClass: (err as Error)?.name }, 'recovery message failed');
        });
      });
    }
    return { challengeExpiresAt: expiresAt.toISOString() };
  }

  /**
   * POST /password-recoveries/confirmations. Every failure (unusable or unknown address, wrong,
   * spent, expired or exhausted code, lost race) answers the same 422. A wrong code counts toward
   * the identity-wide lock like other codes; the lock never stops a correct code. Success sets the
   * password and ends every session of the identity, with no exception.
   */
  async confirm(input: IdentifierInput & { code: string; newPassword: string }): Promise<void> {
    checkPolicy(input.newPassword);
    const refusal = () => new Problem('identity.password_recovery_refused');
    const ident = normaliseIdentifier(input);
    const { db } = this.ctx.database;
    const codeHash = this.ctx.codes.hash(input.code);
    const identifier = ident ? await findIdentifier(db, ident) : undefined;
    const known = identifier?.verified_at ? identifier : undefined;
    const live = known
      ? await liveChallenges<RecoveryChallengeRow>(
          db,
          'password_recovery',
          { identifierId: known.id },
          this.ctx.clock.now(),
        )
      : [];
    let match: RecoveryChallengeRow | undefined;
    for (const c of live) {
      if (safeEqual(c.code_hash, codeHash) && !match) match = c;
    }

    if (known && match) {
      const challenge = match;
      const newHash = await this.ctx.passwords.hash(input.newPassword);
      const now = this.ctx.clock.now();
      const done = await db.transaction().execute(async (trx) => {
        if (!(await spendChallenge(trx, challenge.id, 'password_recovery', now))) return false;
        const identityId = challenge.identity_id;
        await findIdentity(trx, identityId, true);
        await setPassword(trx, identityId, newHash, now);
        await bumpSessionEpoch(trx, identityId);
        const ended = await revokeIdentitySessions(trx, identityId, 'password_recovered', now);
        await revokeRecoveryChallenges(trx, identityId, now);
        await this.ctx.audit.append(trx, {
          name: 'identity.password.recovered',
          actor: identityId,
          target: identityId,
          outcome: 'success',
          details: { identifierType: known.type, sessionsEnded: ended },
        });
        return true;
      });
      if (!done) throw refusal();
      return;
    }

    if (known && live.length > 0) {
      await db.transaction().execute(async (trx) => {
        const charged = await chargeLiveChallenges(
          trx,
          'password_recovery',
          { identifierId: known.id },
          this.ctx.clock.now(),
        );
        // One request is one failure on the identity-wide lock, however many challenges it charged.
        if (charged > 0) await this.ctx.lock.recordFailure(trx, known.identity_id, LOCK_ROUTE);
      });
    }
    throw refusal();
  }
}
