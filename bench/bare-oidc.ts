/**
 * The OpenID Provider's reference (npm run bench): oidc-provider alone, the version the service
 * uses, on Node's own HTTP server with the library's in-memory adapter (no adapter configured), the
 * same client shape (client_secret_basic), the same token shape (opaque access tokens of scope
 * `openid email` on a grant, rotated refresh tokens, RS256 ID tokens) and the same claims. No
 * Fastify, no database, no session or grant liveness, no guess budget: what the library itself
 * costs per request. Started as its own process like the service, listening on PORT until SIGTERM.
 *
 * GET /bench/grants?n=50 mints n grants for the bench's scenarios (an access and a refresh token
 * each, for a person with a verified email), as the code flow would leave them.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';
import { BENCH_CLIENT } from './oidc.js';

const ISSUER = 'https://id.bench.example';
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const emails = new Map<string, string>();

const provider = new Provider(ISSUER, {
  clients: [
    {
      client_id: BENCH_CLIENT.id,
      client_secret: process.env.BENCH_CLIENT_SECRET ?? BENCH_CLIENT.secret,
      redirect_uris: [BENCH_CLIENT.redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  async findAccount(_ctx, sub) {
    const email = emails.get(sub);
    if (!email) return undefined;
    return { accountId: sub, claims: async () => ({ sub, email, email_verified: true }) };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  scopes: ['openid', 'offline_access', 'email'],
  jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'bench', use: 'sig', alg: 'RS256' }] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  features: {
    devInteractions: { enabled: false },
    introspection: { enabled: true },
    revocation: { enabled: true },
    userinfo: { enabled: true },
  },
  rotateRefreshToken: true,
  // Stated, so the library prints no notice of its defaults.
  ttl: { AccessToken: 3600, Grant: 14 * 86400, IdToken: 3600, RefreshToken: 14 * 86400, Session: 86400 },
  routes: {
    token: '/oidc/token',
    userinfo: '/oidc/userinfo',
    introspection: '/oidc/token/introspection',
    revocation: '/oidc/token/revocation',
    authorization: '/oidc/auth',
  },
});
const callback = provider.callback();

/** Grants as a code exchange leaves them: a grant, its access token and its refresh token. */
async function mint(n: number) {
  const grants: { accessToken: string; refreshToken: string }[] = [];
  for (let i = 0; i < n; i++) {
    const accountId = randomBytes(16).toString('hex');
    emails.set(accountId, `bench-${i}@example.com`);
    const grant = new provider.Grant({ accountId, clientId: BENCH_CLIENT.id });
    grant.addOIDCScope('openid email');
    const grantId = await grant.save();
    const client = await provider.Client.find(BENCH_CLIENT.id);
    if (!client) throw new Error('the bench client is missing');
    const shape = { accountId, grantId, scope: 'openid email', gty: 'authorization_code', client };
    const accessToken = await new provider.AccessToken(shape).save();
    const refreshToken = await new provider.RefreshToken({
      ...shape,
      authTime: Math.floor(Date.now() / 1000),
    }).save();
    grants.push({ accessToken, refreshToken });
  }
  return grants;
}

const server = createServer((req, res) => {
  if (req.url === '/health/ready' || req.url === '/health/live') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    return;
  }
  if (req.url?.startsWith('/bench/grants')) {
    const n = Number(new URL(req.url, 'http://x').searchParams.get('n') ?? 50);
    mint(n).then(
      (grants) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(grants)),
      (error) => res.writeHead(500).end(String(error)),
    );
    return;
  }
  callback(req, res);
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.once('SIGTERM', () => {
  server.close(() => process.exit(0));
});
