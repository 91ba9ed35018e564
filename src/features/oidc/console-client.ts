import type { Config } from '../../config.js';
import type { OidcClientConfig } from './config.js';

/**
 * The operators' console's client id: a built-in first-party public client of the admin origin
 * (docs/admin.md, "Operators"). OIDC_CLIENTS may not use it while the admin listener is on.
 */
export const CONSOLE_CLIENT_ID = 'console';

/** Where the provider sends an operator back with the code: on the admin listener only. */
export const CONSOLE_CALLBACK_PATH = '/console/callback';

/**
 * The console's client while the admin listener is on: authorization code with PKCE (S256, a
 * public client: no secret to keep in a browser), first party (no consent page: the service
 * signs its own operators in), `openid` only, no refresh token (a console session is short).
 */
export function consoleClient(config: Pick<Config, 'admin'>): OidcClientConfig | undefined {
  if (config.admin.port === 0) return undefined;
  const origin = config.admin.console.origin;
  return {
    clientId: CONSOLE_CLIENT_ID,
    clientName: 'Operators console',
    redirectUris: [`${origin}${CONSOLE_CALLBACK_PATH}`],
    postLogoutRedirectUris: [`${origin}/console/`],
    grantTypes: ['authorization_code'],
    responseTypes: ['code'],
    tokenEndpointAuthMethod: 'none',
    firstParty: true,
    requirePkce: true,
    idTokenSignedResponseAlg: 'RS256',
    contacts: [],
    scope: 'openid',
    requireAuthTime: true,
    dpopBoundAccessTokens: false,
  };
}

/** OIDC_CLIENTS and, while the admin listener is on, the console's client. */
export function configuredClients(config: Pick<Config, 'admin' | 'oidc'>): OidcClientConfig[] {
  const console = consoleClient(config);
  return console ? [...config.oidc.clients, console] : [...config.oidc.clients];
}
