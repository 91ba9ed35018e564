/**
 * The claims of a JWT the client needs (times, the session id), read without verifying the
 * signature: the service verifies; a client only schedules with them.
 */
export function readClaims(token: string): { iat?: number; exp?: number; sid?: string; sub?: string } {
  try {
    const part = token.split('.')[1] ?? '';
    const base64 = part
      .replace(/-/g, '+')
      .replace(/_/g, '/')
      .padEnd(Math.ceil(part.length / 4) * 4, '=');
    const value: unknown = JSON.parse(atob(base64));
    return typeof value === 'object' && value !== null
      ? (value as { iat?: number; exp?: number; sid?: string; sub?: string })
      : {};
  } catch {
    return {};
  }
}
