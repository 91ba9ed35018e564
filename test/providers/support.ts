import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import type { ManualClock } from '../../src/platform/clock.js';

export const ISSUER = 'https://idp.example.test';
export const AUDIENCE = 'identity-service-client';
export const PROVIDER = 'acme';

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

let forger: Promise<SigningKey> | undefined;

async function makeKey(kid = randomUUID()): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { kid, privateKey, publicJwk: { ...jwk, kid, alg: 'RS256', use: 'sig' } };
}

/**
 * A real identity provider's key endpoint: serves `{ keys }` over HTTP on 127.0.0.1 and counts
 * every fetch, so a test can tell when the service went back for keys.
 */
export class ProviderSink {
  requests = 0;
  private constructor(
    private readonly server: Server,
    public current: SigningKey,
    /** Keys published at the endpoint (the current one among them). */
    public published: SigningKey[],
  ) {}

  static async start(): Promise<ProviderSink> {
    const key = await makeKey();
    let sink!: ProviderSink;
    const server = createServer((req, res) => {
      sink.requests++;
      if (req.url !== '/jwks') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: sink.published.map((k) => k.publicJwk) }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    sink = new ProviderSink(server, key, [key]);
    return sink;
  }

  get jwksUri(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/jwks`;
  }

  /** The provider rotates: a new key signs, and the endpoint publishes only the new key. */
  async rotate(): Promise<void> {
    this.current = await makeKey();
    this.published = [this.current];
  }

  /** A key the endpoint never publishes (a forger's key), under any kid. */
  static async foreignKey(kid?: string): Promise<SigningKey> {
    // RSA generation is slow: one forger's key pair serves every kid.
    forger ??= makeKey();
    const key = await forger;
    return { ...key, kid: kid ?? randomUUID() };
  }

  env(extra: Record<string, unknown>[] = []): Record<string, string> {
    return {
      IDENTITY_PROVIDERS: JSON.stringify([
        { name: PROVIDER, issuer: ISSUER, audience: AUDIENCE, jwksUri: this.jwksUri },
        ...extra,
      ]),
    };
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export function nonceHash(nonce: string): string {
  return createHash('sha256').update(nonce, 'utf8').digest('hex');
}

export interface TokenOptions {
  sub?: string;
  nonce?: string | null;
  iss?: string;
  aud?: string | string[];
  /** The authorized party claim, when the token should carry one. */
  azp?: string;
  /** Seconds relative to the test clock. */
  iatOffset?: number;
  expOffset?: number;
  key?: SigningKey;
  alg?: string;
}

/** An ID token as a provider would issue it, timed on the test clock. */
export async function idToken(
  sink: ProviderSink,
  clock: ManualClock,
  opts: TokenOptions = {},
): Promise<string> {
  const key = opts.key ?? sink.current;
  const now = Math.floor(clock.now().getTime() / 1000);
  const claims: Record<string, unknown> = {};
  if (opts.nonce !== null && opts.nonce !== undefined) claims.nonce = opts.nonce;
  if (opts.azp !== undefined) claims.azp = opts.azp;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: opts.alg ?? 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(opts.iss ?? ISSUER)
    .setAudience(opts.aud ?? AUDIENCE)
    .setSubject(opts.sub ?? `subject-${randomUUID()}`)
    .setIssuedAt(now + (opts.iatOffset ?? 0))
    .setExpirationTime(now + (opts.expOffset ?? 300))
    .sign(key.privateKey);
}

export async function issueNonce(app: FastifyInstance): Promise<{ nonce: string; expiresAt: string }> {
  const res = await app.inject({ method: 'POST', url: '/api/v1/provider-nonces' });
  if (res.statusCode !== 201) throw new Error(`nonce failed: ${res.statusCode} ${res.body}`);
  return res.json().data;
}

/** A fresh nonce and a token carrying its hash. */
export async function freshToken(
  app: FastifyInstance,
  sink: ProviderSink,
  clock: ManualClock,
  opts: Omit<TokenOptions, 'nonce'> = {},
): Promise<string> {
  const { nonce } = await issueNonce(app);
  return idToken(sink, clock, { ...opts, nonce: nonceHash(nonce) });
}

export function providerSignIn(
  app: FastifyInstance,
  token: string,
  provider = PROVIDER,
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/v1/sign-ins',
    payload: { identifierType: 'provider', provider, idToken: token },
  });
}

export function providerStepUp(
  app: FastifyInstance,
  accessToken: string,
  token: string,
  provider = PROVIDER,
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/v1/step-ups/providers',
    headers: { authorization: `Bearer ${accessToken}` },
    payload: { provider, idToken: token },
  });
}

/** Two refusals are the same when status, media type and body bytes are the same. */
export function shape(res: LightMyRequestResponse) {
  return { status: res.statusCode, contentType: res.headers['content-type'], body: res.body };
}

export function problemBody(code: string, status: number, title: string, detail: string) {
  return { type: `/problems/${code}`, title, status, detail, code, retryable: false };
}

export const SIGN_IN_REFUSED = problemBody(
  'identity.sign_in_refused',
  401,
  'Sign-in refused',
  'The sign-in was refused.',
);
export const STEP_UP_REFUSED = problemBody(
  'identity.step_up_confirmation_refused',
  403,
  'Step-up refused',
  'The step-up confirmation was refused.',
);
