import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { type BrandConfig, type CodeFormat, pageImageOrigins } from '../../config.js';
import type { AppContext } from '../../context.js';
import type { Theme, ThemeColours } from '../../platform/colour.js';
import { anyEnabledConnection } from '../organizations/connections/repository.js';
import { type Asset, asset, bundleUi } from './bundle.js';

/**
 * The page runs only its own script and style sheets and talks only to its own origin: no inline
 * code, no third party, never framed. img-src 'self' is for the icon (the QR code is an SVG built
 * with DOM calls, not an image), plus exactly the origins of the brand's logo and of the OIDC_CLIENTS
 * logos shown on the consent page, when they are elsewhere (pageImageOrigins).
 */
export function contentSecurityPolicy(imageOrigins: readonly string[] = []): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    ["img-src 'self'", ...imageOrigins].join(' '),
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
/** The policy without a logo elsewhere (the default). */
export const CONTENT_SECURITY_POLICY = contentSecurityPolicy();

export function securityHeaders(csp: string): Record<string, string> {
  return {
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  };
}

/** What the page must know before it draws: where the API is, whether passkeys are on, the brand. */
export interface UiSettings {
  api: string;
  /** The WebAuthn relying party id; null: the passkey routes are off (404). */
  passkeyRpId: string | null;
  /**
   * The product's name, logo and help link (BRAND_*); null where not configured (without a name
   * the pages say "Your account" in their language).
   */
  brand: { name: string | null; logoUrl: string | null; supportUrl: string | null };
  /**
   * The one-time codes the page asks for: the messages' codes (VERIFICATION_CODE_LENGTH and
   * VERIFICATION_CODE_FORMAT) and an authenticator's digits at enrolment (TOTP_DIGITS).
   */
  code: { length: number; format: CodeFormat };
  authenticatorDigits: number;
  /** How long a code sent by message stays valid, in seconds (CHALLENGE_TTL): "It expires in …". */
  codeLifetimeSeconds: number;
  /**
   * The identifier types that may sign in by code (SIGN_IN_CODES: `sms` is `phone`); empty when
   * off. The sign-in card offers "Email me a code" / "Text me a code" for these.
   */
  signInCodes: ('email' | 'phone')[];
  /** Whether a sign-in code's message carries a link to these pages too (SIGN_IN_LINKS). */
  signInLinks: boolean;
  /**
   * Whether any SAML connection is enabled: the sign-in then asks for the identifier first and
   * sends an address whose domain signs in through an IdP there (docs/sso.md). Read per request.
   */
  sso: boolean;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The brand's colours as CSS custom properties, light and dark: a style sheet of its own (the CSP
 * allows no inline style), content-hashed like the others. ui/styles.css holds the defaults.
 */
function themeCss(theme: Theme): string {
  const vars = (c: ThemeColours) =>
    `--accent:${c.accent};--accent-ink:${c.accentInk};--accent-soft:${c.accentSoft};--focus:${c.accent}`;
  return `:root{${vars(theme.light)}}\n@media (prefers-color-scheme:dark){:root{${vars(theme.dark)}}}\n`;
}

/**
 * The page with the brand written in (its title and header are right before the script runs) and
 * the theme's hashed name. The bundle's page is shared by every app in the process; this is the app's.
 */
function brandedIndex(index: Asset, brand: BrandConfig, theme: Asset): Asset {
  const name = escapeHtml(brand.name);
  const logo = brand.logoUrl
    ? // Decorative: the name beside it says what it would.
      `<img class="brand-logo" src="${escapeHtml(brand.logoUrl)}" alt="">`
    : '';
  let html = index.body.toString('utf8');
  const slots: [string, string][] = [
    ['<title>Your account</title>', `<title>${name}</title>`],
    [
      '<p class="brand">Your account</p>',
      `<p class="brand">${logo}<span class="brand-name">${name}</span></p>`,
    ],
    ['href="theme.css"', `href="${theme.name}"`],
  ];
  for (const [slot, filled] of slots) {
    if (!html.includes(slot)) throw new Error(`account UI: ui/index.html has lost ${slot}`);
    html = html.replace(slot, () => filled); // a function: no `$&` patterns in a name
  }
  return asset('index', 'html', index.type, Buffer.from(html), false);
}

export function send(
  request: FastifyRequest,
  reply: FastifyReply,
  a: Asset,
  cache: string,
  headers: Record<string, string>,
) {
  reply.headers(headers).header('cache-control', cache).header('etag', a.etag);
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
  const { brand } = opts.ctx.config;
  const bundle = await bundleUi();
  const headers = securityHeaders(contentSecurityPolicy(pageImageOrigins(opts.ctx.config)));
  const settings: Omit<UiSettings, 'sso'> = {
    api: opts.api,
    passkeyRpId: opts.ctx.config.webauthn?.rpId ?? null,
    brand: {
      name: brand.named ? brand.name : null,
      logoUrl: brand.logoUrl ?? null,
      supportUrl: brand.supportUrl ?? null,
    },
    code: {
      length: opts.ctx.config.verificationCodeLength,
      format: opts.ctx.config.verificationCodeFormat,
    },
    authenticatorDigits: opts.ctx.config.totpDigits,
    codeLifetimeSeconds: opts.ctx.config.lifetimes.challenge,
    signInCodes: [...opts.ctx.config.signInCodes.channels],
    signInLinks: opts.ctx.config.signInCodes.channels.length > 0 && opts.ctx.config.signInCodes.links,
  };
  // Two versions (with and without SSO), each with its etag; which one is a query per request.
  const settingsAssets = [false, true].map((sso) =>
    asset(
      'settings',
      'json',
      'application/json; charset=utf-8',
      Buffer.from(JSON.stringify({ ...settings, sso } satisfies UiSettings)),
      false,
    ),
  ) as [Asset, Asset];
  const settingsAsset = settingsAssets[0];
  const theme = asset('theme', 'css', 'text/css; charset=utf-8', Buffer.from(themeCss(brand.theme)));
  const index = brandedIndex(bundle.index, brand, theme);
  const hide = { schema: { hide: true } };

  app.get(ui.path.slice(0, -1), hide, async (_request, reply) =>
    reply.headers(headers).redirect(ui.path, 301),
  );
  app.get(ui.path, hide, async (request, reply) => send(request, reply, index, 'no-cache', headers));
  app.get(`${ui.path}${settingsAsset.name}`, hide, async (request, reply) => {
    const sso = await anyEnabledConnection(opts.ctx.database.db);
    return send(request, reply, settingsAssets[sso ? 1 : 0], 'no-cache', headers);
  });
  for (const a of [...bundle.assets, theme]) {
    const cache = a.name.startsWith('favicon')
      ? 'public, max-age=86400'
      : 'public, max-age=31536000, immutable';
    app.get(`${ui.path}${a.name}`, hide, async (request, reply) => send(request, reply, a, cache, headers));
  }
};
