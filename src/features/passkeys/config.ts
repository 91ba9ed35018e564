import { Type } from '@sinclair/typebox';
import { ConfigError, parseOrigin, section } from '../../config/schema.js';

export interface WebAuthnConfig {
  /** The relying party id: a registrable domain every origin is on (or `localhost`). */
  rpId: string;
  rpName: string;
  /** The exact origins a browser may assert from (clientDataJSON.origin). */
  origins: string[];
}

interface WebAuthnVariables {
  WEBAUTHN_RP_ID?: string;
  WEBAUTHN_RP_NAME?: string;
  WEBAUTHN_ORIGINS?: string;
}

/**
 * Passkeys' relying party. In production it is on only when WEBAUTHN_RP_ID, WEBAUTHN_RP_NAME and
 * WEBAUTHN_ORIGINS are all set (none set: off; some: start-up stops naming the first missing).
 * Elsewhere, what is not set comes from PUBLIC_ORIGIN. Every origin must be an exact absolute
 * origin on the RP ID (the same host or a subdomain of it), as browsers require.
 */
function webauthnOf(
  e: WebAuthnVariables,
  production: boolean,
  publicOrigin: string,
): WebAuthnConfig | undefined {
  const names = ['WEBAUTHN_RP_ID', 'WEBAUTHN_RP_NAME', 'WEBAUTHN_ORIGINS'] as const;
  const set = names.filter((n) => e[n] !== undefined);
  if (production && set.length === 0) return undefined;
  if (production && set.length < names.length) {
    throw new ConfigError(
      names.find((n) => e[n] === undefined) as string,
      'must be set with the other WEBAUTHN_ variables (passkeys need all three in production)',
    );
  }
  const origins: string[] = [];
  for (const entry of e.WEBAUTHN_ORIGINS?.split(',') ?? [publicOrigin]) {
    const origin = parseOrigin(entry.trim());
    if (!origin) {
      throw new ConfigError(
        'WEBAUTHN_ORIGINS',
        `entry "${entry.trim()}" is not an absolute http(s) origin without path, query or wildcard`,
      );
    }
    origins.push(origin);
  }
  const rpId = e.WEBAUTHN_RP_ID ?? new URL(publicOrigin).hostname;
  for (const origin of origins) {
    const host = new URL(origin).hostname;
    if (host !== rpId && !host.endsWith(`.${rpId}`)) {
      throw new ConfigError('WEBAUTHN_ORIGINS', `entry "${origin}" is not on the relying party ${rpId}`);
    }
  }
  return { rpId, rpName: e.WEBAUTHN_RP_NAME ?? 'Identity', origins };
}

/** Passkeys' relying party (docs/passkeys.md). */
export const passkeysSection = section({
  variables: {
    WEBAUTHN_RP_ID: Type.Optional(
      Type.String({
        pattern: '^(localhost|([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]{2,63})$',
        refusal: 'must be a lower-case domain name (no scheme, port or path), or localhost',
        description:
          "passkeys' relying party id: the registrable domain every origin is on (`example.com`, or `localhost`); no scheme, port or path. Browsers refuse an IP address as an RP ID, so with the default `PUBLIC_ORIGIN` (`http://127.0.0.1:3000`) set `PUBLIC_ORIGIN=http://localhost:3000` to try passkeys in a browser",
        shown: 'outside production: the host of `PUBLIC_ORIGIN`; production: unset (passkeys off)',
      }),
    ),
    WEBAUTHN_RP_NAME: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        refusal: 'must be 1 to 64 characters',
        description: 'the name authenticators show, 1..64 characters',
        shown: 'outside production: `Identity`',
      }),
    ),
    WEBAUTHN_ORIGINS: Type.Optional(
      Type.String({
        description:
          'comma-separated exact origins a passkey may be used from, each on `WEBAUTHN_RP_ID` (the host itself or a subdomain); an invalid entry stops start-up with a line naming it. In production passkeys are on only when all three `WEBAUTHN_` variables are set; setting some but not all stops start-up',
        shown: 'outside production: `PUBLIC_ORIGIN`',
      }),
    ),
  },
  map: (e, shared) => ({
    /** The WebAuthn relying party; undefined: passkey routes are off (production without WEBAUTHN_*). */
    webauthn: webauthnOf(e, shared.production, shared.publicOrigin),
  }),
});
