import { Type } from '@sinclair/typebox';
import { formatted, jsonText, section } from './schema.js';

const PrivateEd25519Jwk = Type.Object({
  kty: Type.Literal('OKP'),
  crv: Type.Literal('Ed25519'),
  d: Type.String(),
});

/**
 * The root secret and the keys configured beside it. Every key the service uses is derived from
 * the root secret for its own purpose by the platform (`purposeKeys`), which the loader is handed
 * (`keys`); this section reads the one it may replace, the cursor key.
 */
export const secrets = section({
  variables: {
    SECRETS_KEY: formatted('base64-32-bytes', 'must be 32 bytes in base64', {
      description:
        '32 bytes in base64. Every use goes through its own key derived by HMAC-SHA256 with a named purpose (`purposeKeys` in `src/platform/crypto/keys.ts`): sealing TOTP secrets and generated signing keys (AES-256-GCM), the audit seals, the code hashes, the guess-budget subjects, the organization invitation tokens, the sign-in links, the OpenID Provider cookies and DPoP nonces, the cursor key and the key check. The first start stores a key check; a start under another key stops. Cannot be rotated yet (see [operations](operations.md#key-rotation))',
      shown:
        'required in production; outside production generated once into `DATA_DIR/secrets.key` at start-up',
    }),
    CURSOR_SIGNING_KEY: formatted('at-least-32-bytes', 'must be at least 32 bytes', {
      description: 'HMAC-SHA256 key (at least 32 bytes) for pagination cursors',
      shown: 'derived from `SECRETS_KEY`',
    }),
    CURSOR_KEY_ID: Type.String({
      default: 'k1',
      pattern: '^[A-Za-z0-9_-]{1,32}$',
      refusal: 'must be 1 to 32 characters of A-Z a-z 0-9 _ -',
      description: 'key id for pagination cursors (change it with the key)',
    }),
    ACCESS_TOKEN_SIGNING_KEY: formatted('private-ed25519-jwk', 'must be a private Ed25519 JWK in JSON', {
      description: 'private Ed25519 JWK (JSON) that signs access tokens',
      shown: 'generated at first start and kept (sealed) in the database',
    }),
  },
  formats: {
    'base64-32-bytes': (v) => {
      const bytes = Buffer.from(v, 'base64');
      return bytes.length === 32 && bytes.toString('base64').replace(/=+$/, '') === v.replace(/=+$/, '');
    },
    'at-least-32-bytes': (v) => Buffer.byteLength(v, 'utf8') >= 32,
    'private-ed25519-jwk': jsonText(PrivateEd25519Jwk),
  },
  map: (e, shared) => ({
    /** 32 raw bytes: the root secret. Use `keys`, never this, to key anything. */
    secretsKey: shared.secretsKey,
    cursorSigningKey: e.CURSOR_SIGNING_KEY
      ? Buffer.from(e.CURSOR_SIGNING_KEY, 'utf8')
      : shared.keys.cursorSigning,
    cursorKeyId: e.CURSOR_KEY_ID,
    accessTokenSigningKey: e.ACCESS_TOKEN_SIGNING_KEY
      ? (JSON.parse(e.ACCESS_TOKEN_SIGNING_KEY) as Record<string, unknown>)
      : undefined,
  }),
});
