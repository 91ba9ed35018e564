import { Type } from '@sinclair/typebox';
import { absoluteUrl, ConfigError, formatted, oneOf, plainUrl, section } from '../../config/schema.js';
import { accentTheme, type Theme } from '../../platform/colour.js';

export interface BrandConfig {
  /** The product's name, as people see it (`Your account` when BRAND_NAME is unset). */
  name: string;
  /** BRAND_NAME is set: a name, not a phrase the pages translate. */
  named: boolean;
  /** An absolute http(s) URL (https in production); undefined: the name alone. */
  logoUrl?: string;
  /** An https: or mailto: URL; undefined: no help link. */
  supportUrl?: string;
  /** BRAND_ACCENT_COLOR, and the colours of both themes made from it. */
  accentColor: string;
  theme: Theme;
}

interface BrandVariables {
  BRAND_NAME?: string;
  BRAND_LOGO_URL?: string;
  BRAND_ACCENT_COLOR: string;
  BRAND_SUPPORT_URL?: string;
}

/** BRAND_*: the logo is https in production; the accent must keep white button text legible. */
function brandOf(e: BrandVariables, production: boolean): BrandConfig {
  if (production && e.BRAND_LOGO_URL && !e.BRAND_LOGO_URL.startsWith('https:')) {
    throw new ConfigError('BRAND_LOGO_URL', 'must be an https URL in production');
  }
  const theme = accentTheme(e.BRAND_ACCENT_COLOR);
  if ('refusal' in theme) throw new ConfigError('BRAND_ACCENT_COLOR', theme.refusal);
  return {
    name: e.BRAND_NAME ?? 'Your account',
    named: e.BRAND_NAME !== undefined,
    ...(e.BRAND_LOGO_URL ? { logoUrl: new URL(e.BRAND_LOGO_URL).href } : {}),
    ...(e.BRAND_SUPPORT_URL ? { supportUrl: e.BRAND_SUPPORT_URL } : {}),
    accentColor: e.BRAND_ACCENT_COLOR.toLowerCase(),
    theme,
  };
}

/**
 * The origins the hosted pages may load images from besides their own (their CSP's img-src): the
 * brand's logo and the logos of OIDC_CLIENTS, read at start-up. A client registered through the
 * admin API later is not among them, so its logo is shown only when it is on the public origin
 * (docs/decisions.md, "Client metadata of RFC 7591").
 */
export function pageImageOrigins(config: {
  publicOrigin: string;
  brand: { logoUrl?: string };
  oidc: { clients: readonly { logoUri?: string }[] };
}): string[] {
  const own = new URL(config.publicOrigin).origin;
  const logos = [config.brand.logoUrl, ...config.oidc.clients.map((c) => c.logoUri)];
  const origins = logos.flatMap((u) => (u ? [new URL(u).origin] : [])).filter((o) => o !== own);
  return [...new Set(origins)];
}

/** The hosted account UI and the brand every page and message carries. */
export const accountUiSection = section({
  variables: {
    ACCOUNT_UI: oneOf('on', ['on', 'off'], {
      description:
        '`on` or `off`: the hosted account UI (sign-up, sign-in, devices, security) served at `ACCOUNT_UI_PATH`, bundled in memory from `ui/` at start-up (see [security](security.md))',
    }),
    // A path of its own outside /api/ (the API's cache and CORS policies are not the UI's).
    ACCOUNT_UI_PATH: Type.String({
      default: '/account/',
      pattern: '^/(?!api/)([A-Za-z0-9._~-]+/)+$',
      refusal: 'must be an absolute path of letters, digits . _ ~ - segments ending with /, outside /api/',
      description:
        'where the account UI is served: an absolute path of `A-Z a-z 0-9 . _ ~ -` segments ending with `/`, outside `/api/`',
    }),
    // The brand: the account pages' header, title and theme; the name is the product's name for any
    // page or message the service shows a person.
    BRAND_NAME: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[^\\s\\p{Cc}]([^\\p{Cc}]*[^\\s\\p{Cc}])?$',
        refusal: 'must be 1 to 64 characters without control characters or spaces at either end',
        description:
          "the product's name: beside the logo in the account pages' header and after each page's title (`Sign in · Acme`); also the name other pages and messages of the service use for it",
        shown: '`Your account` (the account pages say it in their language)',
      }),
    ),
    BRAND_LOGO_URL: formatted('image-url', 'must be an absolute http(s) URL without user name or fragment', {
      description:
        "the logo's absolute URL (an image ~32 px tall; SVG or PNG), shown left of the name in the header. `https` in production (`http` only outside it). Its origin, and only that origin, is added to the pages' `img-src` (see [security](security.md))",
      shown: 'none (the name alone)',
    }),
    BRAND_ACCENT_COLOR: Type.String({
      default: '#1d4ed8',
      pattern: '^#[0-9a-fA-F]{6}$',
      refusal: 'must be a colour written #rrggbb',
      description:
        "`#rrggbb`: links, the primary button and the focus ring. It is used as given in the light theme, so it must reach 4.5:1 with the button's white text and the light page (WCAG AA); a lighter colour stops start-up with a line naming a darker shade that would pass. The dark theme's accent is derived: the least lightening of it that reaches 4.5:1 on the dark page",
    }),
    BRAND_SUPPORT_URL: formatted('support-url', 'must be an absolute https: or mailto: URL', {
      description:
        'where people get help (`https://…` or `mailto:…`): a "Get help" link in the footer of every account page',
      shown: 'none (no link)',
    }),
  },
  formats: {
    'image-url': (v) => absoluteUrl(v, ['http:', 'https:']) && plainUrl(v),
    'support-url': (v) => absoluteUrl(v, ['https:', 'mailto:']) && plainUrl(v),
  },
  map: (e, shared) => ({
    /** The hosted account UI (ACCOUNT_UI, ACCOUNT_UI_PATH); undefined: not served. */
    accountUi: e.ACCOUNT_UI === 'on' ? { path: e.ACCOUNT_UI_PATH } : undefined,
    /** The product's name, logo, support link and colours (BRAND_*), for every page and message. */
    brand: brandOf(e, shared.production),
  }),
});
