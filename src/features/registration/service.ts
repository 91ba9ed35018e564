import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../platform/context.js';
import { checkNewPassword, type PasswordPolicyResult } from '../../platform/crypto/password-policy.js';
import { generateCode, safeEqual } from '../../platform/crypto/tokens.js';
import { Problem, type ValidationEntry } from '../../platform/http/problem.js';
import { verificationText } from '../../platform/notify/notifier.js';
import { type IdentifierInput, maskIdentifier, normaliseIdentifier } from '../identities/identifier.js';
import {
  chargeLiveChallenges,
  findIdentifier,
  liveChallenges,
  spendChallenge,
} from '../identities/repository.js';
import {
  claimIdentifier,
  deleteIdentity,
  insertIdentity,
  insertSignUpChallenge,
  markIdentifierVerified,
  revokeOtherSignUpChallenges,
  type SignUpChallengeRow,
  setIdentityPassword,
} from './repository.js';
import type { SignUpResult } from './schemas.js';

/** Contract 5: five attempts per out-of-band challenge (the identity-wide lock counts on top). */
export const SIGN_UP_MAX_ATTEMPTS = 5;

/** The route name the identity-wide lock records with each failure. */
const LOCK_ROUTE = 'sign-up-confirmation';

const POLICY_ENTRIES: Record<Exclude<PasswordPolicyResult, { ok: true }>['reason'], ValidationEntry> = {
  common: { location: 'body', field: 'password', code: 'common_password', message: 'password is too common' },
  too_short: { location: 'body', field: 'password', code: 'minLength', message: 'password is too short' },
  too_long: { location: 'body', field: 'password', code: 'maxLength', message: 'password is too long' },
};

export interface SignUpInput extends IdentifierInput {
  password: string;
}

export interface ConfirmationInput extends IdentifierInput {
  password: string;
  code: string;
}

/**
 * POST /sign-ups. Every refusal that needs no database (policy, normalisation, channel) comes
 * before the transaction, so a refused request writes nothing and sends nothing.
 */
export async function signUp(ctx: AppContext, input: SignUpInput): Promise<SignUpResult> {
  const policy = checkNewPassword(input.password);
  // The entry names the rule, never the value: the password is not echoed.
  if (!policy.ok) throw new Problem('validation.failed', { errors: [POLICY_ENTRIES[policy.reason]] });
  const ident = normaliseIdentifier(input);
  if (!ident) throw new Problem('identity.identifier_unusable');
  if (!ctx.notifier.canDeliver(ident.type)) throw new Problem('identity.identifier_channel_unavailable');

  // Argon2 runs before the transaction so no row lock is held during the hash.
  const passwordHash = await ctx.passwords.hash(input.password);
  const { format, length, lifetime } = codeSettings(ctx);
  const code = generateCode(format, length);
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + lifetime * 1000);

  await ctx.database.db.transaction().execute(async (trx) => {
    const newIdentityId = randomUUID();
    await insertIdentity(trx, { id: newIdentityId, createdAt: now });
    let identityId: string = newIdentityId;
    let identifierId = await claimIdentifier(trx, {
      id: randomUUID(),
      identityId: newIdentityId,
      type: ident.type,
      value: ident.value,
      createdAt: now,
    });
    if (!identifierId) {
      // Lost the claim (a repeat registration, or a concurrent one that committed first): the
      // address keeps its one identity, and this registration becomes another challenge on it.
      await deleteIdentity(trx, newIdentityId);
      const existing = await findIdentifier(trx, ident);
      // The winner's row was removed between the conflict and this read: a rare race; the client
      // may retry, and nothing of this attempt is kept.
      if (!existing) throw new Problem('service.unavailable');
      if (existing.verified_at !== null) throw new Problem('identity.identifier_taken');
      identityId = existing.identity_id;
      identifierId = existing.id;
    }
    // Earlier live challenges stay live (contract 3a): a stranger's registration must not
    // invalidate the owner's code in flight.
    const challengeId = randomUUID();
    await insertSignUpChallenge(trx, {
      id: challengeId,
      identityId,
      identifierId,
      codeHash: ctx.codes.hash(code),
      passwordHash,
      maxAttempts: SIGN_UP_MAX_ATTEMPTS,
      createdAt: now,
      expiresAt,
    });
    // Last statement: the append holds the chain's head lock until commit.
    await ctx.audit.append(trx, {
      name: 'identity.sign_up.requested',
      actor: null,
      target: identityId,
      outcome: 'success',
      details: { identifierType: ident.type, challengeId },
    });
  });

  // After the commit: a failed delivery still leaves the registration in place (interface 4.2),
  // and a slow channel never holds a transaction open.
  const delivery = await ctx.notifier.send({
    to: ident.value,
    type: ident.type,
    ...verificationText('sign_up', code, lifetime / 60),
  });

  return {
    identity: { identifierType: ident.type, identifier: maskIdentifier(ident.type, ident.value) },
    challengeDelivery: { status: delivery.status, resendable: delivery.resendable },
    challengeExpiresAt: expiresAt.toISOString(),
  };
}

/**
 * POST /sign-ups/confirmations. Every cause of failure ends in the same refusal, and each costs one
 * Argon2 verification (a real one, or a burn against the dummy hash), so neither the answer nor its
 * timing tells an unknown address from a wrong code or a wrong password.
 */
export async function confirmSignUp(ctx: AppContext, input: ConfirmationInput): Promise<void> {
  const ident = normaliseIdentifier(input);
  if (!ident) throw new Problem('identity.identifier_unusable');
  const db = ctx.database.db;
  const codeHash = ctx.codes.hash(input.code);

  // Read outside a transaction: the Argon2 work below must not run while holding row locks. The
  // compare-and-set in the write transaction re-checks everything this read relied on.
  const identifier = await findIdentifier(db, ident);
  const live = identifier
    ? await liveChallenges<SignUpChallengeRow>(
        db,
        'sign_up',
        { identifierId: identifier.id },
        ctx.clock.now(),
      )
    : [];
  // Constant-time compare over every live challenge (no early exit). Two registrations can draw the
  // same code, so each match is tried with the password until one verifies.
  const matches = live.filter((c) => safeEqual(c.code_hash, codeHash));
  let admitted: SignUpChallengeRow | undefined;
  for (const candidate of matches) {
    if (await ctx.passwords.verify(candidate.password_hash, input.password)) {
      admitted = candidate;
      break;
    }
  }
  if (matches.length === 0) await ctx.passwords.burn(input.password);

  if (identifier && admitted) {
    const challenge = admitted;
    // The lock is never consulted here: a correct code on a locked account still confirms.
    await db.transaction().execute(async (trx) => {
      const now = ctx.clock.now();
      // Of two confirmations racing with one code, only one spends it.
      if (!(await spendChallenge(trx, challenge.id, 'sign_up', now)))
        throw new Problem('identity.verification_refused');
      if (!(await markIdentifierVerified(trx, identifier.id, now))) {
        throw new Problem('identity.verification_refused');
      }
      // Contract 3a: the identity's password becomes the password of the challenge that confirmed.
      // It only ever fills a pending identity's empty password; an established account's password
      // is never replaced through a sign-up challenge.
      if (!(await setIdentityPassword(trx, identifier.identity_id, challenge.password_hash, now))) {
        throw new Problem('identity.verification_refused');
      }
      await revokeOtherSignUpChallenges(trx, identifier.id, challenge.id, now);
      await ctx.audit.append(trx, {
        name: 'identity.identifier.verified',
        actor: identifier.identity_id,
        target: identifier.identity_id,
        outcome: 'success',
        details: { identifierType: ident.type, identifierId: identifier.id, via: 'sign_up' },
      });
    });
    return;
  }

  if (identifier && live.length > 0) {
    await db.transaction().execute(async (trx) => {
      const charged = await chargeLiveChallenges(
        trx,
        'sign_up',
        { identifierId: identifier.id },
        ctx.clock.now(),
      );
      // One request is one failure on the identity-wide lock, however many challenges it charged.
      if (charged > 0) await ctx.lock.recordFailure(trx, identifier.identity_id, LOCK_ROUTE);
    });
  }
  // Locked or not, the answer stays the same 422: the lock only stops guessing.
  throw new Problem('identity.verification_refused');
}

function codeSettings(ctx: AppContext) {
  return {
    format: ctx.config.verificationCodeFormat,
    length: ctx.config.verificationCodeLength,
    lifetime: ctx.config.lifetimes.challenge,
  };
}
