/**
 * Whether an identity may sign in by code now: enabled, not erased, and without a password unless
 * SIGN_IN_CODES_WITH_PASSWORD allows one. The one rule POST /sign-ins/codes sends by, its answer
 * admits by, a sign-up by code picks its message by, and the admin detail reports.
 */
export function maySignInByCode(
  identity: { disabledAt: Date | string | null; erasedAt: Date | string | null; hasPassword: boolean },
  codes: { withPassword: boolean },
): boolean {
  return (
    identity.disabledAt === null &&
    identity.erasedAt === null &&
    (codes.withPassword || !identity.hasPassword)
  );
}
