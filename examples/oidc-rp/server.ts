/**
 * A minimal OpenID Connect relying party for the identity service's OpenID Provider
 * (docs/oidc.md): node:http and openid-client only, sessions kept in this process's memory.
 *
 *   ISSUER=http://localhost:3000 CLIENT_ID=example-rp CLIENT_SECRET=… PORT=4000 npx tsx examples/oidc-rp/server.ts
 *
 * Routes: `/` (a sign-in link, or the signed-in person's name, picture, claims and userinfo), `/login`,
 * `/callback`, `/logout` (RP-initiated logout) and `POST /backchannel-logout`.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as client from 'openid-client';

const ISSUER = required('ISSUER');
const CLIENT_ID = required('CLIENT_ID');
const CLIENT_SECRET = required('CLIENT_SECRET');
const PORT = Number(process.env.PORT ?? 4000);
/** Where the browser reaches this app: redirect URIs are matched exactly, so it must be the registered one. */
const BASE_URL = process.env.BASE_URL ?? `http://localhost:${PORT}`;
const REDIRECT_URI = `${BASE_URL}/callback`;
const POST_LOGOUT_REDIRECT_URI = `${BASE_URL}/`;
// `profile` asks for the person's name, picture and language (name, given_name, family_name,
// picture, locale): the service answers them at userinfo, each only when the person has it.
const SCOPE = process.env.SCOPE ?? 'openid email phone profile';
const COOKIE = 'example_rp_session';
const BACKCHANNEL_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`${name} is required (see examples/oidc-rp/README.md)\n`);
    process.exit(1);
  }
  return value;
}

// Plain HTTP is refused by openid-client; it is allowed here only for a local development issuer
// (http://localhost:3000). A deployed provider is https:// and this option stays off.
const insecure = new URL(ISSUER).protocol === 'http:';
const config = await client.discovery(
  new URL(ISSUER),
  CLIENT_ID,
  undefined,
  // The service enforces the method registered for the client (client_secret_basic by default).
  client.ClientSecretBasic(CLIENT_SECRET),
  insecure ? { execute: [client.allowInsecureRequests] } : undefined,
);
const metadata = config.serverMetadata();
if (!metadata.jwks_uri) throw new Error('the discovery document has no jwks_uri');
// The provider's keys, fetched (and refetched for an unknown kid) by jose: back-channel logout tokens.
const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));

/** One browser's state, named by a random cookie value. */
interface Session {
  /** Between /login and /callback. */
  pending?: { state: string; nonce: string; verifier: string };
  signedIn?: {
    idToken: string;
    claims: client.IDToken;
    userinfo: client.UserInfoResponse;
    refreshToken?: string;
  };
}
const sessions = new Map<string, Session>();

function cookieOf(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === COOKIE) return value.join('=');
  }
  return undefined;
}

/** The browser's session, made (with its cookie) when it has none. */
function sessionOf(req: IncomingMessage, res: ServerResponse): Session {
  const id = cookieOf(req);
  const found = id ? sessions.get(id) : undefined;
  if (found) return found;
  const fresh = randomBytes(32).toString('base64url');
  const session: Session = {};
  sessions.set(fresh, session);
  // Secure is left out only so that the example works on http://localhost.
  const secure = BASE_URL.startsWith('https:') ? '; Secure' : '';
  res.setHeader('set-cookie', `${COOKIE}=${fresh}; Path=/; HttpOnly; SameSite=Lax${secure}`);
  return session;
}

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

function html(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Example RP</title></head><body><main>${body}</main></body></html>`,
  );
}

function redirect(res: ServerResponse, to: string): void {
  res.writeHead(303, { location: to, 'cache-control': 'no-store' });
  res.end();
}

function home(req: IncomingMessage, res: ServerResponse): void {
  const id = cookieOf(req);
  const signedIn = id ? sessions.get(id)?.signedIn : undefined;
  if (!signedIn) {
    html(res, 200, `<h1>Example RP</h1><p>You are not signed in.</p><p><a href="/login">Sign in</a></p>`);
    return;
  }
  // The `profile` scope's claims, from userinfo (the ID token of the code flow carries only the
  // `openid` scope's claims), else from the ID token: shown as an app would, a face and a name.
  const claim = (name: string): string | undefined => {
    const value = signedIn.userinfo[name] ?? signedIn.claims[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const name = claim('name');
  const picture = claim('picture');
  // Only an https:// address (or the local development provider's own http:// one) becomes an <img>.
  const pictureShown =
    picture && (picture.startsWith('https://') || (insecure && picture.startsWith(`${metadata.issuer}/`)));
  const profile =
    (pictureShown
      ? `<img id="picture" src="${escapeHtml(picture)}" alt="" width="64" height="64" referrerpolicy="no-referrer">`
      : '') +
    `<dl id="profile">` +
    (['name', 'given_name', 'family_name', 'locale'] as const)
      .map((key) => {
        const value = claim(key);
        return value ? `<dt>${key}</dt><dd id="claim-${key}">${escapeHtml(value)}</dd>` : '';
      })
      .join('') +
    `</dl>`;
  html(
    res,
    200,
    `<h1>Example RP</h1><p>Signed in as <strong>${escapeHtml(name ?? String(signedIn.userinfo.email ?? signedIn.claims.sub))}</strong>.</p>` +
      profile +
      `<h2>ID token claims</h2><pre id="claims">${escapeHtml(JSON.stringify(signedIn.claims, null, 2))}</pre>` +
      `<h2>Userinfo</h2><pre id="userinfo">${escapeHtml(JSON.stringify(signedIn.userinfo, null, 2))}</pre>` +
      `<p><a href="/logout">Sign out</a></p>`,
  );
}

async function login(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const session = sessionOf(req, res);
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  session.pending = { state, nonce, verifier };
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  redirect(res, url.href);
}

async function callback(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const id = cookieOf(req);
  const session = id ? sessions.get(id) : undefined;
  const pending = session?.pending;
  if (!session || !pending) {
    html(res, 400, `<h1>No sign-in in progress</h1><p><a href="/login">Start again</a></p>`);
    return;
  }
  session.pending = undefined;
  // openid-client checks state, exchanges the code with the PKCE verifier, and validates the ID
  // token (signature against the JWKS, iss, aud, exp, nonce); an error answer (access_denied…) throws.
  const tokens = await client.authorizationCodeGrant(config, new URL(req.url ?? '/', BASE_URL), {
    pkceCodeVerifier: pending.verifier,
    expectedState: pending.state,
    expectedNonce: pending.nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  if (!claims || !tokens.id_token) throw new Error('no ID token');
  const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
  session.signedIn = { idToken: tokens.id_token, claims, userinfo, refreshToken: tokens.refresh_token };
  redirect(res, '/');
}

function logout(req: IncomingMessage, res: ServerResponse): void {
  const id = cookieOf(req);
  const signedIn = id ? sessions.get(id)?.signedIn : undefined;
  if (id) sessions.delete(id);
  if (!signedIn) {
    redirect(res, '/');
    return;
  }
  // RP-initiated logout: the provider asks the person to confirm, ends its session and the hosted
  // session, then comes back to the registered post_logout_redirect_uri.
  const url = client.buildEndSessionUrl(config, {
    id_token_hint: signedIn.idToken,
    post_logout_redirect_uri: POST_LOGOUT_REDIRECT_URI,
  });
  redirect(res, url.href);
}

function readBody(req: IncomingMessage, limit = 64 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
      if (body.length > limit) reject(new Error('body too large'));
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

/**
 * OpenID Connect Back-Channel Logout 1.0: the provider POSTs a signed logout token when a grant
 * ends (sign-out, sign-out everywhere, a password change, an operator's action…). Verified here
 * against the provider's JWKS; the matching sessions are dropped. Answers 200, or 400 when the token
 * is refused (the spec's answers).
 */
async function backchannelLogout(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const logoutToken = new URLSearchParams(await readBody(req)).get('logout_token');
  let payload: Record<string, unknown>;
  try {
    if (!logoutToken) throw new Error('no logout_token');
    ({ payload } = await jwtVerify(logoutToken, jwks, {
      issuer: metadata.issuer,
      audience: CLIENT_ID,
      typ: 'logout+jwt',
      maxTokenAge: '5 minutes',
    }));
    const events = payload.events as Record<string, unknown> | undefined;
    if (typeof events?.[BACKCHANNEL_EVENT] !== 'object') throw new Error('not a back-channel logout event');
    if (payload.nonce !== undefined) throw new Error('a logout token has no nonce');
    if (typeof payload.sid !== 'string' && typeof payload.sub !== 'string') throw new Error('no sid or sub');
  } catch (error) {
    res.writeHead(400, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify({ error: 'invalid_request', error_description: (error as Error).message }));
    return;
  }
  // The service sends sid (backchannel_logout_session_required): drop that provider session's
  // sessions here; with only a sub, every session of that person.
  let dropped = 0;
  for (const [id, s] of sessions) {
    const c = s.signedIn?.claims;
    if (!c) continue;
    if (typeof payload.sid === 'string' ? c.sid === payload.sid : c.sub === payload.sub) {
      sessions.delete(id);
      dropped++;
    }
  }
  process.stdout.write(`back-channel logout: sub=${payload.sub} sid=${payload.sid} dropped=${dropped}\n`);
  res.writeHead(200, { 'cache-control': 'no-store' });
  res.end();
}

const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', BASE_URL).pathname;
  const route = `${req.method} ${path}`;
  const handled = (async () => {
    if (route === 'GET /') return home(req, res);
    if (route === 'GET /login') return login(req, res);
    if (route === 'GET /callback') return callback(req, res);
    if (route === 'GET /logout') return logout(req, res);
    if (route === 'POST /backchannel-logout') return backchannelLogout(req, res);
    html(res, 404, '<h1>Not found</h1>');
  })();
  handled.catch((error: unknown) => {
    const e = error as { error?: string; error_description?: string; message?: string };
    process.stderr.write(`${route}: ${e.error ?? ''} ${e.error_description ?? e.message ?? String(error)}\n`);
    if (!res.headersSent)
      html(
        res,
        500,
        `<h1>Sign-in failed</h1><p><code>${escapeHtml(String(e.error ?? e.message ?? 'error'))}</code> ${escapeHtml(String(e.error_description ?? ''))}</p><p><a href="/">Home</a></p>`,
      );
  });
});

server.listen(PORT, () => {
  process.stdout.write(`example RP on ${BASE_URL} (issuer ${metadata.issuer})\n`);
});
