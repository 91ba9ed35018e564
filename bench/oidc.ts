/**
 * The OpenID Provider's scenarios (bench/run.ts): one confidential client in OIDC_CLIENTS, and one
 * grant per chain obtained by the authorization code flow before the load, as a browser and a
 * relying party would (docs/oidc.md): the hosted session's cookie from POST /browser-session, the
 * provider's redirects followed with the cookies they set, the code exchanged with its PKCE verifier.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';

export const BENCH_CLIENT = {
  id: 'bench-rp',
  secret: `bench-${randomBytes(24).toString('base64url')}`,
  // Exact match; never reached (the flow stops at the redirect that carries the code).
  redirectUri: 'http://127.0.0.1:9/callback',
};

/** A public device client (RFC 8628): a TV or a CLI polls the token endpoint with its device code. */
export const BENCH_DEVICE_CLIENT = 'bench-tv';

/** OIDC_CLIENTS for the bench's service: a first-party client (no consent page) and a device client. */
export function benchOidcClients(): string {
  return JSON.stringify([
    {
      client_id: BENCH_CLIENT.id,
      client_secret: BENCH_CLIENT.secret,
      client_name: 'Bench RP',
      redirect_uris: [BENCH_CLIENT.redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      first_party: true,
    },
    {
      client_id: BENCH_DEVICE_CLIENT,
      client_name: 'Bench TV',
      token_endpoint_auth_method: 'none',
      grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
    },
  ]);
}

/** Authorization: Basic for the bench client (client_secret_basic, form-encoded parts). */
export const clientBasic = () =>
  `Basic ${Buffer.from(
    `${encodeURIComponent(BENCH_CLIENT.id)}:${encodeURIComponent(BENCH_CLIENT.secret)}`,
  ).toString('base64')}`;

class Jar {
  readonly #cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /max-age=0/i.test(line)) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/**
 * A DPoP key (RFC 9449) made and used with node:crypto alone: autocannon's setupRequest is
 * synchronous, so each request's proof is signed there, with its own jti, the access token's hash
 * and the last server nonce seen.
 */
export class DpopKey {
  readonly #privateKey: KeyObject;
  readonly #header: string;
  nonce: string | undefined;

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#privateKey = privateKey;
    const { kty, crv, x, y } = publicKey.export({ format: 'jwk' });
    this.#header = b64(JSON.stringify({ alg: 'ES256', typ: 'dpop+jwt', jwk: { kty, crv, x, y } }));
  }

  proof(htm: string, htu: string, accessToken?: string): string {
    const payload = b64(
      JSON.stringify({
        htm,
        htu,
        iat: Math.floor(Date.now() / 1000),
        jti: randomBytes(16).toString('base64url'),
        ...(this.nonce ? { nonce: this.nonce } : {}),
        ...(accessToken ? { ath: createHash('sha256').update(accessToken).digest('base64url') } : {}),
      }),
    );
    const input = `${this.#header}.${payload}`;
    const signature = sign('sha256', Buffer.from(input), {
      key: this.#privateKey,
      dsaEncoding: 'ieee-p1363',
    });
    return `${input}.${signature.toString('base64url')}`;
  }
}

const b64 = (text: string) => Buffer.from(text).toString('base64url');

export interface OidcTokens {
  accessToken: string;
  refreshToken: string;
}

/**
 * One grant by the code flow for a person holding `serviceRefreshToken` (a fresh sign-in's):
 * handed over to the hosted cookie, then /oidc/auth followed to the redirect URI. `base` is where
 * the service listens; `publicOrigin` its issuer (the provider's redirects name it).
 */
export async function codeFlowGrant(
  base: string,
  publicOrigin: string,
  serviceRefreshToken: string,
  dpop?: DpopKey,
): Promise<OidcTokens> {
  const jar = new Jar();
  const handover = await fetch(`${base}/api/v1/browser-session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: publicOrigin },
    body: JSON.stringify({ refreshToken: serviceRefreshToken }),
  });
  if (handover.status !== 201) throw new Error(`browser-session ${handover.status} ${await handover.text()}`);
  jar.take(handover);

  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const state = randomBytes(16).toString('base64url');
  const query = new URLSearchParams({
    client_id: BENCH_CLIENT.id,
    response_type: 'code',
    scope: 'openid email',
    redirect_uri: BENCH_CLIENT.redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    nonce: randomBytes(16).toString('base64url'),
  });
  let url = `${base}/oidc/auth?${query}`;
  let code: string | null = null;
  for (let i = 0; i < 10 && code === null; i++) {
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(res);
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || !location) {
      throw new Error(`code flow stopped at ${url}: ${res.status} ${(await res.text()).slice(0, 300)}`);
    }
    const next = new URL(location, publicOrigin);
    if (next.href.startsWith(BENCH_CLIENT.redirectUri)) {
      if (next.searchParams.get('state') !== state) throw new Error('state mismatch');
      code = next.searchParams.get('code');
      if (!code) throw new Error(`no code: ${next.search}`);
    } else {
      // The provider names its issuer; the bench reaches the same service at `base`.
      url = `${base}${next.pathname}${next.search}`;
    }
  }
  if (code === null) throw new Error('too many redirects');
  const exchange = (proof?: string) =>
    fetch(`${base}/oidc/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: clientBasic(),
        ...(proof ? { dpop: proof } : {}),
      },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code as string,
        redirect_uri: BENCH_CLIENT.redirectUri,
        code_verifier: verifier,
      }).toString(),
    });
  let token = await exchange(dpop?.proof('POST', `${base}/oidc/token`));
  // The provider requires its nonce in every proof: the first answer gives it (use_dpop_nonce).
  if (dpop && token.status === 400 && token.headers.get('dpop-nonce')) {
    dpop.nonce = token.headers.get('dpop-nonce') as string;
    token = await exchange(dpop.proof('POST', `${base}/oidc/token`));
  }
  if (dpop) dpop.nonce = token.headers.get('dpop-nonce') ?? dpop.nonce;
  const body = (await token.json()) as { access_token?: string; refresh_token?: string };
  if (token.status !== 200 || !body.access_token || !body.refresh_token) {
    throw new Error(`token ${token.status} ${JSON.stringify(body)}`);
  }
  return { accessToken: body.access_token, refreshToken: body.refresh_token };
}
