import { interactions, type SignInOutcome } from '../api.js';
import { pendingStep } from '../identifier.js';
import { go } from '../router.js';

/*
 * Between the two steps of a sign-in: what an accepted first step (a password, or a provider's
 * sign-in, from the sign-in or the sign-up page) leaves for the second step, and where a completed
 * sign-in goes.
 */

/**
 * The ticket of a password (or a provider's sign-in) accepted but waiting for its second step:
 * this tab's sessionStorage, so a reload keeps the step (never the URL, never localStorage), and
 * dropped on success, on "Start again" and once expired. `uid` is the OpenID Provider interaction
 * the sign-in was for (#/authorize/<uid>), kept across the step so the person goes back to the
 * application afterwards; `via` names the provider when the first step was "Continue with …".
 */
export interface Pending {
  ticket: string;
  expiresAt: string;
  uid: string | null;
  via: string | null;
  /** The first step was a code sent by message, or its link (sign-in by code), not a password. */
  byCode?: 'code' | 'link';
}
export const PENDING = 'sign-in';

/** Where a completed sign-in goes: the account, or back to the provider's interaction. */
export function finish(uid: string | null): void {
  if (uid) interactions.continue(uid);
  else go('/');
}

/**
 * A first step accepted (password, provider or code): done, or on to the second step. `via` is the
 * provider's name when the first step was "Continue with …"; `byCode` when it was a sign-in code
 * or its link.
 */
export function afterFirstStep(
  result: SignInOutcome,
  uid: string | null,
  via: string | null = null,
  byCode: 'code' | 'link' | null = null,
): void {
  if (result.kind === 'second_factor_required') {
    pendingStep.write(PENDING, {
      ticket: result.ticket,
      expiresAt: result.expiresAt,
      uid,
      via,
      ...(byCode ? { byCode } : {}),
    } satisfies Pending);
    go('/sign-in/second-factor');
  } else {
    finish(uid);
  }
}
