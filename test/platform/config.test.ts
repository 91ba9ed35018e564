import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { deriveKey, loadOrCreateDevKey } from '../../src/platform/crypto/keys.js';
import { childEnv, spawnTs, within } from './support.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'idsvc-cfg-'));
const key = () => randomBytes(32).toString('base64');

/** Each class of invalid variable, with the variable the refusal must name. */
const INVALID: Array<[string, Record<string, string>, string]> = [
  ['PORT not a number', { PORT: 'abc' }, 'PORT'],
  ['PORT out of range', { PORT: '70000' }, 'PORT'],
  ['CORS origin with a path', { CORS_ORIGINS: 'https://a.example/path' }, 'CORS_ORIGINS'],
  ['CORS wildcard', { CORS_ORIGINS: '*' }, 'CORS_ORIGINS'],
  ['CORS wildcard subdomain', { CORS_ORIGINS: 'https://*.example.com' }, 'CORS_ORIGINS'],
  ['CORS origin with a query', { CORS_ORIGINS: 'https://a.example?x=1' }, 'CORS_ORIGINS'],
  ['CORS relative entry', { CORS_ORIGINS: 'https://ok.example,a.example' }, 'CORS_ORIGINS'],
  [
    'production without SECRETS_KEY',
    { NODE_ENV: 'production', SECRETS_KEY: '', PUBLIC_ORIGIN: 'https://id.example' },
    'SECRETS_KEY',
  ],
  ['production without PUBLIC_ORIGIN', { NODE_ENV: 'production' }, 'PUBLIC_ORIGIN'],
  ['SECRETS_KEY too short', { SECRETS_KEY: 'short' }, 'SECRETS_KEY'],
  ['SECRETS_KEY of 16 bytes', { SECRETS_KEY: randomBytes(16).toString('base64') }, 'SECRETS_KEY'],
  ['VERIFICATION_CODE_LENGTH below 6', { VERIFICATION_CODE_LENGTH: '5' }, 'VERIFICATION_CODE_LENGTH'],
  ['VERIFICATION_CODE_LENGTH above 12', { VERIFICATION_CODE_LENGTH: '13' }, 'VERIFICATION_CODE_LENGTH'],
  ['VERIFICATION_CODE_FORMAT unknown', { VERIFICATION_CODE_FORMAT: 'hex' }, 'VERIFICATION_CODE_FORMAT'],
  ['rate limit not count/seconds', { RATE_LIMIT_PROVES_A_PASSWORD: 'ten' }, 'RATE_LIMIT_PROVES_A_PASSWORD'],
  ['rate limit of zero', { RATE_LIMIT_SENDS_A_MESSAGE: '0/60' }, 'RATE_LIMIT_SENDS_A_MESSAGE'],
  ['DATABASE_URL other scheme', { DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
  ['DATABASE_URL not a URL', { DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
  ['REDIS_URL other scheme', { REDIS_URL: 'http://127.0.0.1:6379' }, 'REDIS_URL'],
  ['IDENTITY_PROVIDERS not JSON', { IDENTITY_PROVIDERS: 'notjson' }, 'IDENTITY_PROVIDERS'],
  ['IDENTITY_PROVIDERS missing fields', { IDENTITY_PROVIDERS: '[{"name":"x"}]' }, 'IDENTITY_PROVIDERS'],
  ['TOTP_ALGORITHM unknown', { TOTP_ALGORITHM: 'MD5' }, 'TOTP_ALGORITHM'],
  ['TOTP_DIGITS out of range', { TOTP_DIGITS: '9' }, 'TOTP_DIGITS'],
  ['LOG_LEVEL unknown', { LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
  ['PUBLIC_ORIGIN with a path', { PUBLIC_ORIGIN: 'https://id.example/x' }, 'PUBLIC_ORIGIN'],
  [
    'production below the Argon2id floor',
    { NODE_ENV: 'production', PUBLIC_ORIGIN: 'https://id.example', ARGON2_MEMORY_KIB: '19455' },
    'ARGON2_MEMORY_KIB',
  ],
  [
    'IDENTITY_PROVIDERS with a repeated name',
    {
      IDENTITY_PROVIDERS: JSON.stringify(
        ['a', 'a'].map((name) => ({ name, issuer: 'https://i.example', audience: 'x', jwks: { keys: [] } })),
      ),
    },
    'IDENTITY_PROVIDERS',
  ],
  [
    'ACCESS_TOKEN_SIGNING_KEY not Ed25519',
    { ACCESS_TOKEN_SIGNING_KEY: '{"kty":"RSA","d":"x"}' },
    'ACCESS_TOKEN_SIGNING_KEY',
  ],
  ['TRUST_PROXY as a hop count', { TRUST_PROXY: '1' }, 'TRUST_PROXY'],
  ['TRUST_PROXY as true', { TRUST_PROXY: 'true' }, 'TRUST_PROXY'],
  ['TRUST_PROXY with a bad range', { TRUST_PROXY: '10.0.0.0/8,10.0.0.0/33' }, 'TRUST_PROXY'],
  ['TRUST_PROXY with a name', { TRUST_PROXY: 'loadbalancer' }, 'TRUST_PROXY'],
  ['RATE_LIMIT_GUESSES below ten free failures', { RATE_LIMIT_GUESSES: '9/3600' }, 'RATE_LIMIT_GUESSES'],
  ['CURSOR_KEY_ID with a space', { CURSOR_KEY_ID: 'k 1' }, 'CURSOR_KEY_ID'],
  ['CURSOR_SIGNING_KEY under 32 bytes', { CURSOR_SIGNING_KEY: 'x'.repeat(31) }, 'CURSOR_SIGNING_KEY'],
  ['ARGON2_CONCURRENCY of zero', { ARGON2_CONCURRENCY: '0' }, 'ARGON2_CONCURRENCY'],
  ['SESSION_TTL not an integer', { SESSION_TTL: '1.5' }, 'SESSION_TTL'],
  ['PORT in hexadecimal', { PORT: '0x10' }, 'PORT'],
  ['PORT in exponent form', { PORT: '1e3' }, 'PORT'],
  ['PORT with a space', { PORT: ' 80' }, 'PORT'],
  ['WEBAUTHN_ORIGINS with a path', { WEBAUTHN_ORIGINS: 'https://id.example/login' }, 'WEBAUTHN_ORIGINS'],
  [
    'WEBAUTHN_ORIGINS off the relying party',
    { WEBAUTHN_RP_ID: 'id.example', WEBAUTHN_ORIGINS: 'https://id.example,https://evil.example' },
    'WEBAUTHN_ORIGINS',
  ],
  [
    'WEBAUTHN_ORIGINS on a look-alike domain',
    { WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://notexample.com' },
    'WEBAUTHN_ORIGINS',
  ],
  ['OIDC_CLIENTS not a JSON array', { OIDC_CLIENTS: '{"client_id":"x"}' }, 'OIDC_CLIENTS'],
  [
    'OIDC_CLIENTS with a short secret',
    {
      OIDC_CLIENTS: JSON.stringify([
        { client_id: 'a', client_secret: 'short', redirect_uris: ['https://a.example/cb'] },
      ]),
    },
    'OIDC_CLIENTS',
  ],
  [
    'OIDC_CLIENTS with an http redirect URI in production',
    {
      NODE_ENV: 'production',
      PUBLIC_ORIGIN: 'https://id.example',
      OIDC_CLIENTS: JSON.stringify([
        { client_id: 'a', client_secret: 'x'.repeat(32), redirect_uris: ['http://a.example/cb'] },
      ]),
    },
    'OIDC_CLIENTS',
  ],
  ['WEBAUTHN_RP_ID with a scheme', { WEBAUTHN_RP_ID: 'https://id.example' }, 'WEBAUTHN_RP_ID'],
  ['WEBAUTHN_RP_NAME too long', { WEBAUTHN_RP_NAME: 'x'.repeat(65) }, 'WEBAUTHN_RP_NAME'],
  [
    'production with WEBAUTHN_RP_ID alone',
    { NODE_ENV: 'production', PUBLIC_ORIGIN: 'https://id.example', WEBAUTHN_RP_ID: 'id.example' },
    'WEBAUTHN_RP_NAME',
  ],
];

const SECRET_CLIENT = {
  client_id: 'app',
  client_secret: 'x'.repeat(32),
  redirect_uris: ['https://a.example/cb'],
};

describe('OIDC_CLIENTS', () => {
  const env = (clients: unknown[]) => ({
    SECRETS_KEY: key(),
    DATA_DIR: tmp(),
    OIDC_CLIENTS: JSON.stringify(clients),
  });
  it.each([
    [
      { client_id: 'app', client_secret: 'x'.repeat(32) },
      'entry "app" needs redirect_uris for the authorization_code grant',
    ],
    [
      { client_id: 'app', redirect_uris: ['https://a.example/cb#x'], token_endpoint_auth_method: 'none' },
      'entry "app" redirect_uris entry',
    ],
    [
      {
        client_id: 'spa',
        token_endpoint_auth_method: 'none',
        client_secret: 'x'.repeat(32),
        redirect_uris: ['https://a.example/cb'],
      },
      'entry "spa" is public',
    ],
    [
      { client_id: 'm2m', token_endpoint_auth_method: 'none', grant_types: ['client_credentials'] },
      'entry "m2m" is public and cannot use client_credentials',
    ],
    [
      {
        client_id: 'app',
        client_secret: 'x'.repeat(32),
        redirect_uris: ['https://a.example/cb'],
        grant_types: ['implicit'],
      },
      'entry "app" grant_types',
    ],
    [
      { client_id: 'app', client_secret: 'x'.repeat(32), redirect_uris: ['https://a.example/cb'], extra: 1 },
      'entry "app" has an unknown field "extra"',
    ],
    [{ client_secret: 'x'.repeat(32) }, 'entry #1 needs a client_id'],
    // RFC 7591 metadata: accepted, and checked against the rest of the entry.
    [
      { ...SECRET_CLIENT, grant_types: ['client_credentials'], response_types: ['code'] },
      'entry "app" response_types ["code"] needs authorization_code in grant_types',
    ],
    [
      { ...SECRET_CLIENT, response_types: [] },
      'entry "app" grant_types authorization_code needs response_types ["code"]',
    ],
    [
      { ...SECRET_CLIENT, response_types: ['code id_token'] },
      'entry "app" response_types may hold only "code"',
    ],
    [
      {
        client_id: 'app',
        token_endpoint_auth_method: 'private_key_jwt',
        grant_types: ['client_credentials'],
      },
      'entry "app" token_endpoint_auth_method private_key_jwt needs jwks or jwks_uri',
    ],
    [
      { ...SECRET_CLIENT, jwks_uri: 'https://a.example/jwks.json' },
      'entry "app" jwks_uri is used only with token_endpoint_auth_method private_key_jwt',
    ],
    [
      {
        client_id: 'app',
        token_endpoint_auth_method: 'private_key_jwt',
        grant_types: ['client_credentials'],
        jwks: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'A'.repeat(43), d: 'B'.repeat(43) }] },
      },
      'entry "app" jwks key #1 holds a private member "d"',
    ],
    [
      {
        client_id: 'app',
        token_endpoint_auth_method: 'private_key_jwt',
        client_secret: 'x'.repeat(32),
        jwks_uri: 'https://a.example/jwks.json',
        grant_types: ['client_credentials'],
      },
      'entry "app" authenticates with private_key_jwt and cannot have a client_secret',
    ],
    [
      { ...SECRET_CLIENT, id_token_signed_response_alg: 'HS256' },
      'entry "app" id_token_signed_response_alg "HS256" is not enabled here (RS256 or EdDSA)',
    ],
    [
      { ...SECRET_CLIENT, userinfo_signed_response_alg: 'ES256' },
      'entry "app" userinfo_signed_response_alg "ES256" is not enabled here',
    ],
    [
      { ...SECRET_CLIENT, scope: 'openid admin' },
      'entry "app" scope "admin" is not a scope of this provider',
    ],
    [
      { ...SECRET_CLIENT, default_max_age: 0 },
      'entry "app" default_max_age must be a whole number of seconds',
    ],
    [
      { ...SECRET_CLIENT, logo_uri: 'javascript:alert(1)' },
      'entry "app" logo_uri must be an absolute https URL',
    ],
    [
      { ...SECRET_CLIENT, tos_uri: 'http://a.example/terms' },
      'entry "app" tos_uri must be an absolute https URL',
    ],
    [{ ...SECRET_CLIENT, contacts: 'ops@a.example' }, 'entry "app" contacts must be an array'],
    [
      { ...SECRET_CLIENT, dpop_bound_access_tokens: 'yes' },
      'entry "app" dpop_bound_access_tokens must be true or false',
    ],
    [
      { ...SECRET_CLIENT, software_statement: 'eyJ.x.y' },
      'entry "app" has an unknown field "software_statement"',
    ],
  ])('refuses %j with one line naming the entry', (entry, words) => {
    let error: unknown;
    try {
      loadConfig(env([entry]));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe('OIDC_CLIENTS');
    expect((error as Error).message).toContain(words);
    expect((error as Error).message).not.toContain('\n');
  });

  it('accepts the RFC 7591 and OpenID Connect Registration names that mean something here', () => {
    const config = loadConfig(
      env([
        {
          ...SECRET_CLIENT,
          client_name: 'App',
          response_types: ['code'],
          grant_types: ['authorization_code', 'refresh_token'],
          logo_uri: 'https://cdn.a.example/logo.png',
          client_uri: 'https://a.example/',
          policy_uri: 'https://a.example/privacy',
          tos_uri: 'https://a.example/terms',
          contacts: ['ops@a.example'],
          scope: 'openid email email',
          default_max_age: 3600,
          require_auth_time: true,
          id_token_signed_response_alg: 'EdDSA',
          userinfo_signed_response_alg: 'RS256',
          dpop_bound_access_tokens: true,
        },
        {
          client_id: 'job',
          token_endpoint_auth_method: 'private_key_jwt',
          jwks_uri: 'https://job.example/jwks.json',
          grant_types: ['client_credentials'],
          response_types: [],
        },
      ]),
    );
    const [app, job] = config.oidc.clients;
    expect(app).toMatchObject({
      responseTypes: ['code'],
      logoUri: 'https://cdn.a.example/logo.png',
      clientUri: 'https://a.example/',
      policyUri: 'https://a.example/privacy',
      tosUri: 'https://a.example/terms',
      contacts: ['ops@a.example'],
      scope: 'openid email',
      defaultMaxAge: 3600,
      requireAuthTime: true,
      idTokenSignedResponseAlg: 'EdDSA',
      userinfoSignedResponseAlg: 'RS256',
      dpopBoundAccessTokens: true,
    });
    expect(job).toMatchObject({
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwksUri: 'https://job.example/jwks.json',
      responseTypes: [],
      dpopBoundAccessTokens: false,
    });
    expect(job.clientSecret).toBeUndefined();
  });

  it('accepts the device authorization grant without redirect_uris, public or confidential', () => {
    const grant = 'urn:ietf:params:oauth:grant-type:device_code';
    const config = loadConfig(
      env([
        { client_id: 'tv', token_endpoint_auth_method: 'none', grant_types: [grant, 'refresh_token'] },
        { client_id: 'cli', client_secret: 'x'.repeat(32), grant_types: [grant] },
      ]),
    );
    const [tv, cli] = config.oidc.clients;
    expect(tv).toMatchObject({ grantTypes: [grant, 'refresh_token'], responseTypes: [], redirectUris: [] });
    expect(cli).toMatchObject({ grantTypes: [grant], responseTypes: [], redirectUris: [] });
    // With the code flow beside it, the code flow's rule still holds.
    expect(() =>
      loadConfig(
        env([
          { client_id: 'both', client_secret: 'x'.repeat(32), grant_types: [grant, 'authorization_code'] },
        ]),
      ),
    ).toThrow('entry "both" needs redirect_uris for the authorization_code grant');
  });

  it('refuses a repeated client_id and accepts a valid list', () => {
    const valid = {
      client_id: 'app',
      client_secret: 'x'.repeat(32),
      redirect_uris: ['https://a.example/cb'],
    };
    expect(() => loadConfig(env([valid, valid]))).toThrow('entry "app" repeats a client_id');
    const config = loadConfig(
      env([
        valid,
        { client_id: 'spa', token_endpoint_auth_method: 'none', redirect_uris: ['http://localhost:5173/cb'] },
      ]),
    );
    expect(config.oidc.clients.map((c) => [c.clientId, c.requirePkce, c.firstParty])).toEqual([
      ['app', true, false],
      ['spa', true, false],
    ]);
  });
});

describe('IDENTITY_PROVIDERS', () => {
  const env = (providers: unknown[], extra: Record<string, string> = {}) => ({
    SECRETS_KEY: key(),
    DATA_DIR: tmp(),
    IDENTITY_PROVIDERS: JSON.stringify(providers),
    ...extra,
  });
  const P8 = '-----BEGIN PRIVATE KEY-----\nMIGT\n-----END PRIVATE KEY-----';
  it.each([
    [{ name: 'x' }, 'entry "x" needs an issuer'],
    [
      { name: 'x', issuer: 'https://i.example' },
      'entry "x" needs jwksUri or jwks (ID-token sign-in) or clientId (redirect sign-in)',
    ],
    [
      { name: 'Bad Name', clientId: 'c', clientSecret: 's', issuer: 'https://i.example' },
      'entry "Bad Name" needs a name',
    ],
    [{ name: 'g', preset: 'myspace', clientId: 'c', clientSecret: 's' }, 'entry "g" preset must be one of'],
    [{ name: 'g', preset: 'google', clientId: 'c' }, 'entry "g" needs a clientSecret'],
    [
      { name: 'g', preset: 'google', clientId: 'c', clientSecret: 's', autoLink: 'email' },
      'autoLink must be',
    ],
    [
      { name: 'g', preset: 'google', clientId: 'c', clientSecret: 's', signUp: 'yes' },
      'signUp must be true or false',
    ],
    [
      { name: 'g', preset: 'google', clientId: 'c', clientSecret: 's', scopes: 'email profile' },
      'scopes must include openid',
    ],
    [
      { name: 'g', preset: 'google', clientId: 'c', clientSecret: 's', tenants: ['x'] },
      'tenants applies to the microsoft preset only',
    ],
    [
      { name: 'm', preset: 'microsoft', clientId: 'c', clientSecret: 's', tenants: ['not-a-guid'] },
      'tenants must be',
    ],
    [{ name: 'a', preset: 'apple', clientId: 'c', clientSecret: 's' }, 'instead of clientSecret'],
    [
      { name: 'a', preset: 'apple', clientId: 'c', teamId: 'T', keyId: 'K' },
      'needs teamId, keyId and privateKey',
    ],
    [
      { name: 'a', preset: 'apple', clientId: 'c', teamId: 'T', keyId: 'K', privateKey: 'x' },
      'privateKey must be the PEM',
    ],
    [
      { name: 'h', preset: 'github', clientId: 'c', clientSecret: 's', issuer: 'https://github.com' },
      'has no issuer',
    ],
    [{ name: 'o', issuer: 'https://i.example', clientSecret: 's' }, 'clientSecret needs a clientId'],
    [{ name: 'o', preset: 'google' }, 'has a preset, which needs a clientId'],
    [{ name: 'o', clientId: 'c', clientSecret: 's' }, 'entry "o" needs an issuer'],
    [
      { name: 'o', clientId: 'c', clientSecret: 's', issuer: 'https://i.example', extra: 1 },
      'has an unknown field "extra"',
    ],
  ])('refuses %j with one line naming the entry', (entry, words) => {
    let error: unknown;
    try {
      loadConfig(env([entry]));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe('IDENTITY_PROVIDERS');
    expect((error as Error).message).toContain(words);
    expect((error as Error).message).not.toContain('\n');
  });

  it('refuses an http issuer in production and accepts it outside', () => {
    const entry = { name: 'o', clientId: 'c', clientSecret: 's', issuer: 'http://127.0.0.1:9999' };
    expect(() =>
      loadConfig(env([entry], { NODE_ENV: 'production', PUBLIC_ORIGIN: 'https://id.example' })),
    ).toThrow('entry "o" issuer must be an https URL');
    expect(loadConfig(env([entry])).identityProviders[0].issuer).toBe('http://127.0.0.1:9999');
  });

  it('fills in the presets and keeps the ID-token path beside redirect sign-in', () => {
    const config = loadConfig(
      env([
        {
          name: 'google',
          preset: 'google',
          clientId: 'g-id',
          clientSecret: 'g-secret',
          jwksUri: 'https://www.googleapis.com/oauth2/v3/certs',
        },
        {
          name: 'entra',
          preset: 'microsoft',
          clientId: 'm',
          clientSecret: 's',
          tenants: ['9188040D-6C67-4C5B-B112-36A304B66DAD'],
          autoLink: 'verified_email',
        },
        {
          name: 'apple',
          preset: 'apple',
          clientId: 'com.example.web',
          teamId: 'TEAM',
          keyId: 'KEY',
          privateKey: P8,
          signUp: false,
        },
        { name: 'github', preset: 'github', clientId: 'gh', clientSecret: 's', displayName: 'GitHub (work)' },
        { name: 'legacy', issuer: 'https://l.example', audience: 'aud', jwks: { keys: [] } },
      ]),
    );
    const [google, entra, apple, github, legacy] = config.identityProviders;
    expect(google).toMatchObject({
      displayName: 'Google',
      issuer: 'https://accounts.google.com',
      audience: 'g-id',
      redirect: {
        clientId: 'g-id',
        scopes: 'openid email profile',
        responseMode: 'query',
        autoLink: 'off',
        signUp: true,
      },
    });
    expect(entra.issuer).toBe('https://login.microsoftonline.com/common/v2.0');
    expect(entra.redirect).toMatchObject({
      autoLink: 'verified_email',
      tenants: ['9188040d-6c67-4c5b-b112-36a304b66dad'],
    });
    expect(apple.redirect).toMatchObject({
      responseMode: 'form_post',
      scopes: 'openid email name',
      signUp: false,
    });
    expect(apple.redirect?.apple?.teamId).toBe('TEAM');
    expect(apple.redirect?.clientSecret).toBeUndefined();
    expect(github).toMatchObject({
      displayName: 'GitHub (work)',
      redirect: { scopes: 'read:user user:email' },
    });
    expect(github.issuer).toBeUndefined();
    expect(legacy.redirect).toBeUndefined();
    expect(legacy.audience).toBe('aud');
  });
});

// Start-up (src/serve.ts) refuses a bad configuration by writing `${ConfigError.message}\n` to
// stderr and exiting 1, nothing else. So every refusal is checked in-process on the environment a
// child would get (childEnv, loadConfig with the start-up's own devSecretsKey), and two real starts,
// of two classes of variable, prove end to end that what start-up prints is exactly that message
// (each start costs a second or more of CPU: one per refusal made this file one of the slowest).
const SPAWNED = new Set(['PORT not a number', 'IDENTITY_PROVIDERS not JSON']);

/** The environment a refused start gets, as main.ts would read it. */
const startEnv = (env: Record<string, string>) =>
  childEnv({
    NODE_ENV: 'development',
    DATA_DIR: tmp(),
    SECRETS_KEY: key(),
    DATABASE_URL: 'memory://',
    PORT: '0',
    ...env,
  });

/** The line start-up writes to stderr for this environment: the refusal's message and a newline. */
function startUpRefusal(env: NodeJS.ProcessEnv): string {
  let thrown: unknown;
  try {
    loadConfig(env, { devSecretsKey: loadOrCreateDevKey });
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  return `${(thrown as ConfigError).message}\n`;
}

it('every spawned case is in the table', () => {
  expect(INVALID.filter(([name]) => SPAWNED.has(name))).toHaveLength(SPAWNED.size);
});

describe('loadConfig', () => {
  it('applies the defaults of contract section 7', () => {
    const secretsKey = key();
    const c = loadConfig({ SECRETS_KEY: secretsKey });
    expect(c.host).toBe('127.0.0.1');
    expect(c.port).toBe(3000);
    expect(c.databaseUrl).toBeUndefined();
    expect(c.dataDir).toBe(resolve('./data'));
    expect(c.redisUrl).toBeUndefined();
    expect(c.publicOrigin).toBe('http://127.0.0.1:3000');
    expect(c.corsOrigins).toEqual([]);
    expect(c.secretsKey.toString('base64')).toBe(secretsKey);
    expect(c.cursorSigningKey.length).toBeGreaterThanOrEqual(32);
    expect(c.cursorSigningKey.equals(c.secretsKey)).toBe(false);
    expect(c.cursorSigningKey.equals(deriveKey(c.secretsKey, 'cursor-signing-key'))).toBe(true);
    expect(c.accessTokenSigningKey).toBeUndefined();
    expect(c.smtpUrl).toBeUndefined();
    expect(c.smsWebhookUrl).toBeUndefined();
    expect(c.identityProviders).toEqual([]);
    expect(c.verificationCodeFormat).toBe('numeric');
    expect(c.verificationCodeLength).toBe(6);
    expect(c.totpAlgorithm).toBe('SHA1');
    expect(c.totpDigits).toBe(6);
    expect(c.totpPeriod).toBe(30);
    expect(c.rateLimits).toEqual({
      sendsAMessage: { max: 5, windowSeconds: 900 },
      answersAChallenge: { max: 10, windowSeconds: 60 },
      provesAPassword: { max: 10, windowSeconds: 60 },
      accountExports: { max: 5, windowSeconds: 3600 },
      pictureUploads: { max: 20, windowSeconds: 3600 },
      oidcClients: { max: 600, windowSeconds: 60 },
      oidcAuthorizations: { max: 60, windowSeconds: 60 },
      guesses: { free: 10, maxDelaySeconds: 43200 },
    });
    expect(c.signInNotices).toBe(true);
    // Private by default like the operators' listener, whatever HOST the service answers on.
    expect(loadConfig({ DATA_DIR: tmp(), HOST: '0.0.0.0' }).metrics.host).toBe('127.0.0.1');
    expect(loadConfig({ DATA_DIR: tmp(), HOST: '0.0.0.0', METRICS_HOST: '0.0.0.0' }).metrics.host).toBe(
      '0.0.0.0',
    );
    expect(c.trustProxy).toBe(false);
    expect(c.logLevel).toBe('info');
    expect(c.production).toBe(false);
  });

  it('outside production, the start-up generates SECRETS_KEY into DATA_DIR and reuses it', () => {
    const dir = tmp();
    const a = loadConfig({ DATA_DIR: dir }, { devSecretsKey: loadOrCreateDevKey });
    expect(a.secretsKey.length).toBe(32);
    expect(existsSync(join(dir, 'secrets.key'))).toBe(true);
    expect(readFileSync(join(dir, 'secrets.key'), 'utf8').trim()).toBe(a.secretsKey.toString('base64'));
    const b = loadConfig({ DATA_DIR: dir }, { devSecretsKey: loadOrCreateDevKey });
    expect(b.secretsKey.equals(a.secretsKey)).toBe(true);
  });

  it('reading the configuration alone writes nothing: without the start-up key file the key is random', () => {
    const dir = tmp();
    const a = loadConfig({ DATA_DIR: dir });
    const b = loadConfig({ DATA_DIR: dir });
    expect(readdirSync(dir)).toEqual([]);
    expect(a.secretsKey.length).toBe(32);
    expect(a.secretsKey.equals(b.secretsKey)).toBe(false);
  });

  it('derives every purpose key once from SECRETS_KEY, each its own', () => {
    const c = loadConfig({ SECRETS_KEY: key() });
    const purposes = {
      sealing: 'sealing',
      auditSeal: 'audit-seal',
      outOfBandCodes: 'out-of-band-codes',
      cursorSigning: 'cursor-signing-key',
      guessBudgets: 'guess-budgets',
      keyCheck: 'key-check',
      oidcCookies: 'oidc-cookies',
      oidcDpopNonces: 'oidc-dpop-nonces',
      organizationInvitations: 'organization-invitations',
      signInLinks: 'sign-in-links',
    } as const;
    expect(Object.keys(c.keys).sort()).toEqual(Object.keys(purposes).sort());
    for (const [name, purpose] of Object.entries(purposes)) {
      expect(c.keys[name as keyof typeof purposes].equals(deriveKey(c.secretsKey, purpose)), name).toBe(true);
    }
    expect(new Set(Object.values(c.keys).map((k) => k.toString('hex'))).size).toBe(10);
  });

  it('reads valid values', () => {
    const c = loadConfig({
      SECRETS_KEY: key(),
      HOST: '0.0.0.0',
      PORT: '8080',
      DATABASE_URL: 'postgres://u@db.example:5432/x',
      REDIS_URL: 'redis://127.0.0.1:6379',
      CORS_ORIGINS: 'https://app.example, http://localhost:5173/',
      IDENTITY_PROVIDERS: JSON.stringify([
        {
          name: 'acme',
          issuer: 'https://acme.example',
          audience: 'id',
          jwksUri: 'https://acme.example/jwks',
        },
      ]),
      VERIFICATION_CODE_FORMAT: 'alphanumeric',
      VERIFICATION_CODE_LENGTH: '12',
      TOTP_ALGORITHM: 'SHA256',
      RATE_LIMIT_PROVES_A_PASSWORD: '3/30',
      TRUST_PROXY: '10.0.0.0/8, 192.0.2.7,2001:db8::/32',
      LOG_LEVEL: 'warn',
    });
    expect(c.host).toBe('0.0.0.0');
    expect(c.port).toBe(8080);
    expect(c.publicOrigin).toBe('http://0.0.0.0:8080');
    expect(c.databaseUrl).toBe('postgres://u@db.example:5432/x');
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.corsOrigins).toEqual(['https://app.example', 'http://localhost:5173']);
    expect(c.identityProviders).toHaveLength(1);
    expect(c.identityProviders[0].name).toBe('acme');
    expect(c.verificationCodeFormat).toBe('alphanumeric');
    expect(c.verificationCodeLength).toBe(12);
    expect(c.totpAlgorithm).toBe('SHA256');
    expect(c.rateLimits.provesAPassword).toEqual({ max: 3, windowSeconds: 30 });
    expect(c.trustProxy).toEqual(['10.0.0.0/8', '192.0.2.7', '2001:db8::/32']);
    expect(c.logLevel).toBe('warn');
    expect(loadConfig({ SECRETS_KEY: key(), DATABASE_URL: 'memory://' }).databaseUrl).toBe('memory://');
  });

  it('production with a SECRETS_KEY and a PUBLIC_ORIGIN starts', () => {
    const c = loadConfig({
      NODE_ENV: 'production',
      SECRETS_KEY: key(),
      PUBLIC_ORIGIN: 'https://id.example',
      DATA_DIR: tmp(),
    });
    expect(c.production).toBe(true);
    expect(c.publicOrigin).toBe('https://id.example');
  });

  it('passkeys: outside production the relying party comes from PUBLIC_ORIGIN', () => {
    const c = loadConfig({ SECRETS_KEY: key(), DATA_DIR: tmp(), PUBLIC_ORIGIN: 'https://id.example' });
    expect(c.webauthn).toEqual({ rpId: 'id.example', rpName: 'Identity', origins: ['https://id.example'] });
  });

  it('passkeys: in production they are off without WEBAUTHN_*, on with all three', () => {
    const base = {
      NODE_ENV: 'production',
      SECRETS_KEY: key(),
      PUBLIC_ORIGIN: 'https://id.example',
      DATA_DIR: tmp(),
    };
    expect(loadConfig(base).webauthn).toBeUndefined();
    const on = loadConfig({
      ...base,
      WEBAUTHN_RP_ID: 'example.com',
      WEBAUTHN_RP_NAME: 'Example',
      WEBAUTHN_ORIGINS: 'https://example.com, https://app.example.com',
    });
    expect(on.webauthn).toEqual({
      rpId: 'example.com',
      rpName: 'Example',
      origins: ['https://example.com', 'https://app.example.com'],
    });
  });

  it('passkeys: the refusal of a bad origin names the entry', () => {
    expect(() =>
      loadConfig({ SECRETS_KEY: key(), DATA_DIR: tmp(), WEBAUTHN_ORIGINS: 'https://a.example,ftp://b' }),
    ).toThrow(
      'invalid configuration: WEBAUTHN_ORIGINS entry "ftp://b" is not an absolute http(s) origin without path, query or wildcard',
    );
  });

  it('sign-in codes: off by default; SIGN_IN_CODES names channels (sms is a phone number); junk is refused', () => {
    const base = { SECRETS_KEY: key(), DATA_DIR: tmp() };
    expect(loadConfig(base).signInCodes).toEqual({
      channels: [],
      withPassword: true,
      links: true,
      signUp: false,
    });
    expect(
      loadConfig({ ...base, SIGN_IN_CODES: 'sms,email', SIGN_IN_CODES_WITH_PASSWORD: 'off' }).signInCodes,
    ).toEqual({ channels: ['phone', 'email'], withPassword: false, links: true, signUp: false });
    expect(loadConfig({ ...base, SIGN_IN_CODES: 'email,email' }).signInCodes.channels).toEqual(['email']);
    expect(loadConfig({ ...base, SIGN_IN_LINKS: 'off' }).signInCodes.links).toBe(false);
    expect(() => loadConfig({ ...base, SIGN_IN_LINKS: 'yes' })).toThrow(/SIGN_IN_LINKS must be/);
    for (const junk of ['on', 'push', 'email,', 'off,email']) {
      expect(() => loadConfig({ ...base, SIGN_IN_CODES: junk })).toThrow(
        'invalid configuration: SIGN_IN_CODES must be off or a comma-separated list of email, sms',
      );
    }
  });

  it('sign-up by code: off by default; on needs SIGN_IN_CODES; anything but on or off is refused', () => {
    const base = { SECRETS_KEY: key(), DATA_DIR: tmp() };
    expect(
      loadConfig({ ...base, SIGN_IN_CODES: 'email', SIGN_IN_CODES_SIGN_UP: 'on' }).signInCodes.signUp,
    ).toBe(true);
    expect(() => loadConfig({ ...base, SIGN_IN_CODES_SIGN_UP: 'on' })).toThrow(
      'invalid configuration: SIGN_IN_CODES_SIGN_UP needs SIGN_IN_CODES to name a channel',
    );
    expect(() => loadConfig({ ...base, SIGN_IN_CODES: 'email', SIGN_IN_CODES_SIGN_UP: 'yes' })).toThrow(
      'invalid configuration: SIGN_IN_CODES_SIGN_UP must be one of on, off',
    );
  });

  it.each(INVALID)('refuses %s, naming the variable', (_name, env, variable) => {
    let thrown: unknown;
    try {
      loadConfig({ SECRETS_KEY: key(), DATA_DIR: tmp(), ...env });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).variable).toBe(variable);
    expect((thrown as ConfigError).message).toContain(variable);
    expect((thrown as ConfigError).message).not.toContain('\n');
  });
});

describe('start-up refusal: one line on stderr, exit 1', () => {
  it.each(INVALID)('%s: the line names the variable, with no stack', (_name, env, variable) => {
    const stderr = startUpRefusal(startEnv(env));
    expect(stderr.endsWith('\n')).toBe(true);
    expect(stderr.split('\n')).toHaveLength(2); // one line plus the final newline
    expect(stderr).toContain(variable);
    expect(stderr).not.toContain('    at ');
    expect(stderr).not.toMatch(/Error:/);
  });
});

describe.concurrent('start-up refusal (node --import tsx src/main.ts)', () => {
  it.each(
    INVALID.filter(([name]) => SPAWNED.has(name)),
  )('exits 1 with exactly the refusal line on %s', async (_name, env, variable) => {
    const full = startEnv(env);
    const expected = startUpRefusal(full);
    const run = spawnTs('src/main.ts', full as Record<string, string>);
    const { code } = await within(run.exited, 25_000, 'main.ts to exit');
    const stderr = run.stderr();
    expect(code).toBe(1);
    expect(stderr).toBe(expected);
    expect(stderr.split('\n')).toHaveLength(2); // one line plus the final newline
    expect(stderr).toContain(variable);
    expect(stderr).not.toContain('    at ');
    expect(stderr).not.toMatch(/Error:/);
    expect(run.stdout()).not.toContain('listening');
  });
});
