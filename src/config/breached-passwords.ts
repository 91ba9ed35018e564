import { formatted, integer, section } from './schema.js';

/** The breach check of new passwords beyond the bundled list (docs/security.md, "Breached passwords"). */
export const breachedPasswords = section({
  variables: {
    BREACHED_PASSWORDS_RANGE_URL: formatted('http-url', 'must be an absolute URL using http: or https:', {
      description:
        "base address of a k-anonymity range API (Have I Been Pwned's Pwned Passwords protocol, or a mirror of it): a new password is sent as the first 5 hex characters of its SHA-1 only (`GET <url>/range/<prefix>`, `Add-Padding: true`) and refused when the answer lists its hash; a timeout or error lets the password through and is logged. Unset: only the bundled list of breached passwords is checked",
      shown: 'unset (bundled list only)',
    }),
    BREACHED_PASSWORDS_TIMEOUT_MS: integer(1500, 10, 30000, {
      description:
        'how long a new password waits for the range API (BREACHED_PASSWORDS_RANGE_URL), the whole answer included, before it is let through',
    }),
  },
  map: (e) => ({
    /** The range API, when configured; the bundled list is always checked. */
    breachedPasswords: e.BREACHED_PASSWORDS_RANGE_URL
      ? { rangeUrl: e.BREACHED_PASSWORDS_RANGE_URL, timeoutMs: e.BREACHED_PASSWORDS_TIMEOUT_MS }
      : null,
  }),
});
