/*
 * The configuration: one TypeBox schema, checked by Ajv, composed here from its sections. Each
 * section declares its variables (schema, default, refusal, description) and maps them into its
 * part of `Config`; `docs/configuration.md` is generated from them (`npm run config:docs`). The
 * sections of the service as a whole live in src/config/; a feature's rules live in the feature
 * (its `config.ts`). This file is the composition root: the one place that meets the sections of
 * the features and the platform's key derivation (docs/decisions.md, "The configuration in
 * sections"). The order of the list is the order of the documentation's table.
 */

import { admin } from './config/admin.js';
import { breachedPasswords } from './config/breached-passwords.js';
import { codes } from './config/codes.js';
import { database } from './config/database.js';
import { hashing } from './config/hashing.js';
import { http } from './config/http.js';
import { lifetimes } from './config/lifetimes.js';
import { compose } from './config/load.js';
import { logging } from './config/logging.js';
import { messaging } from './config/messaging.js';
import { notices } from './config/notices.js';
import { operations } from './config/operations.js';
import { production } from './config/production.js';
import { rateLimits } from './config/rate-limits.js';
import { secrets } from './config/secrets.js';
import { server } from './config/server.js';
import { tracing } from './config/tracing.js';
import { accountUiSection } from './features/account-ui/config.js';
import { eventsSection } from './features/events/config.js';
import { hooksSection } from './features/events/hooks/config.js';
import { oidcSection } from './features/oidc/config.js';
import { organizationsSection } from './features/organizations/config.js';
import { passkeysSection } from './features/passkeys/config.js';
import { providersSection } from './features/providers/config.js';
import { signInSection } from './features/sign-in/config.js';
import { purposeKeys } from './platform/crypto/keys.js';

export const { Environment, loadConfig } = compose(
  [
    server,
    database,
    http,
    secrets,
    messaging,
    providersSection,
    oidcSection,
    codes,
    rateLimits,
    logging,
    lifetimes,
    hashing,
    breachedPasswords,
    operations,
    passkeysSection,
    signInSection,
    organizationsSection,
    eventsSection,
    hooksSection,
    notices,
    accountUiSection,
    admin,
    tracing,
    production,
  ],
  // Every key the service uses, each derived once from SECRETS_KEY for its own purpose.
  purposeKeys,
);

/** The service's configuration: what the sections make of the declared variables. */
export type Config = ReturnType<typeof loadConfig>;

export { ADMIN_KEY_NAME } from './config/admin.js';
export type { CodeFormat, TotpAlgorithm } from './config/codes.js';
export type { RateLimitSetting } from './config/rate-limits.js';
export { ConfigError } from './config/schema.js';
export { type BrandConfig, pageImageOrigins } from './features/account-ui/config.js';
export {
  DEVICE_CODE_GRANT,
  OIDC_CLIENT_ID,
  OIDC_SCOPES,
  type OidcClientConfig,
} from './features/oidc/config.js';
export type { WebAuthnConfig } from './features/passkeys/config.js';
export type { IdentityProviderConfig, ProviderPreset } from './features/providers/config.js';
