import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { type Asset, asset, bundleUi } from './bundle.js';

/**
 * The page runs only its own script and style sheet and talks only to its own origin: no inline
 * code, no third party, never framed. img-src 'self' is for the icon alone (the QR code is an SVG
 * built with DOM calls, not an image).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** What the page must know before it draws: where the API is, and whether passkeys are on. */
export interface UiSettings {
  api: string;
  /** The WebAuthn relying party id; null: the passkey routes are off (404). */
  passkeyRpId: string | null;
}

function send(request: FastifyRequest, reply: FastifyReply, a: Asset, cache: string) {
  reply.headers(SECURITY_HEADERS).header('cache-control', cache).header('etag', a.etag);
  if (request.headers['if-none-match'] === a.etag) return reply.code(304).send();
  return reply.type(a.type).send(a.body);
}

/**
 * The hosted account UI at ACCOUNT_UI_PATH: one page, its hashed script and style sheet, an icon
 * and the settings. Every route is hidden from the OpenAPI document: it is not part of the API.
 */
export const accountUiRoutes: FastifyPluginAsync<{ ctx: AppContext; api: string }> = async (app, opts) => {
  const ui = opts.ctx.config.accountUi;
  if (!ui) return;
  const bundle = await bundleUi();
  const settings: UiSettings = { api: opts.api, passkeyRpId: opts.ctx.config.webauthn?.rpId ?? null };
  const settingsAsset = asset(
    'settings',
    'json',
    'application/json; charset=utf-8',
    Buffer.from(JSON.stringify(settings)),
    false,
  );
  const hide = { schema: { hide: true } };

  app.get(ui.path.slice(0, -1), hide, async (_request, reply) =>
    reply.headers(SECURITY_HEADERS).redirect(ui.path, 301),
  );
  app.get(ui.path, hide, async (request, reply) => send(request, reply, bundle.index, 'no-cache'));
  app.get(`${ui.path}${settingsAsset.name}`, hide, async (request, reply) =>
    send(request, reply, settingsAsset, 'no-cache'),
  );
  for (const a of bundle.assets) {
    const cache = a.name.startsWith('favicon')
      ? 'public, max-age=86400'
      : 'public, max-age=31536000, immutable';
    app.get(`${ui.path}${a.name}`, hide, async (request, reply) => send(request, reply, a, cache));
  }
};
