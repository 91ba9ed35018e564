import { HOTP, Secret, TOTP } from 'otpauth';
import type { TotpAlgorithm } from '../../config.js';
import { safeEqual } from '../../platform/crypto/tokens.js';

/** The policy a factor was enrolled under; kept on its row and used for every later check. */
export interface TotpPolicy {
  algorithm: TotpAlgorithm;
  digits: number;
  period: number;
}

export const OTPAUTH_ISSUER = 'Identity Service';

/**
 * Accepted clock drift: the current time step and one step either side (RFC 6238 section 5.2
 * recommends at most one step of network delay). Wider windows multiply a guesser's odds.
 */
export const STEP_WINDOW = 1;

/** 20 random bytes (160 bits, the RFC 4226 recommendation), base32 as authenticator apps expect. */
export function newSecret(): string {
  return new Secret({ size: 20 }).base32;
}

export function otpauthUri(secret: string, policy: TotpPolicy, label: string): string {
  return new TOTP({
    issuer: OTPAUTH_ISSUER,
    label,
    secret: Secret.fromBase32(secret),
    algorithm: policy.algorithm,
    digits: policy.digits,
    period: policy.period,
  }).toString();
}

/**
 * The time step a code belongs to, or null when it matches none in the window. Every step of the
 * window is computed and compared in constant time, so the cost does not depend on which matched.
 */
export function matchStep(secret: string, policy: TotpPolicy, code: string, now: Date): number | null {
  const key = Secret.fromBase32(secret);
  const current = TOTP.counter({ period: policy.period, timestamp: now.getTime() });
  let matched: number | null = null;
  for (let delta = -STEP_WINDOW; delta <= STEP_WINDOW; delta++) {
    const step = current + delta;
    const expected = HOTP.generate({
      secret: key,
      algorithm: policy.algorithm,
      digits: policy.digits,
      counter: step,
    });
    // The newest matching step wins: it is the one a replay check must remember.
    if (safeEqual(expected, code)) matched = step;
  }
  return matched;
}
