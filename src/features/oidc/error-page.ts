import type { BrandConfig } from '../../config.js';
import type { Theme } from '../../platform/colour.js';
import { escapeHtml, type PageLocale } from './pages.js';

/*
 * The OpenID Provider's error page (renderError), and the bridge's own refusals of a browser
 * request before the library sees it: a person in a browser reads it, an application never does.
 * It looks like the hosted pages (their card, the brand's name, logo and colours, light and dark by
 * the system's choice), speaks their languages (the request's `ui_locales`, else Accept-Language),
 * says in one plain sentence what went wrong, names the application when it is known, and offers a
 * way back: the application's own address (its registered client_uri), else the account pages.
 * The protocol's error code is only a small reference under it, for whoever helps the person.
 * No script; every value is escaped.
 */

/** What the page says for each of the protocol's errors: a heading's subject and a sentence. */
type Reason =
  | 'redirect'
  | 'client'
  | 'unauthorized'
  | 'request'
  | 'denied'
  | 'expired'
  | 'unavailable'
  | 'login'
  | 'other';

function reasonOf(error: string, name?: string): Reason {
  if (name === 'SessionNotFound') return 'expired';
  switch (error) {
    case 'invalid_redirect_uri':
      return 'redirect';
    case 'invalid_client':
      return 'client';
    case 'unauthorized_client':
    case 'unsupported_response_type':
    case 'unsupported_grant_type':
      return 'unauthorized';
    case 'invalid_request':
    case 'invalid_request_object':
    case 'invalid_request_uri':
    case 'request_not_supported':
    case 'request_uri_not_supported':
    case 'registration_not_supported':
    case 'unsupported_response_mode':
    case 'invalid_scope':
    case 'invalid_target':
    case 'invalid_authorization_details':
      return 'request';
    case 'access_denied':
      return 'denied';
    case 'expired_token':
    case 'expired_login_hint_token':
    case 'invalid_grant':
      return 'expired';
    case 'temporarily_unavailable':
    case 'server_error':
      return 'unavailable';
    case 'login_required':
    case 'interaction_required':
    case 'consent_required':
      return 'login';
    default:
      return 'other';
  }
}

interface Words {
  signInTitle: string;
  signOutTitle: string;
  reasons: Record<Reason, string>;
  /** The application's name, on its own line. */
  fromApp: (name: string) => string;
  backToApp: (name: string) => string;
  backToAccount: string;
  closeHint: string;
  reference: string;
  details: string;
  help: string;
  product: string;
}

const en: Words = {
  signInTitle: 'This sign-in cannot continue',
  signOutTitle: 'This sign-out cannot continue',
  reasons: {
    redirect: 'This application sent you to an address it is not allowed to use.',
    client: 'This application is not known here, or is not set up to sign you in.',
    unauthorized: 'This application is not allowed to sign you in this way.',
    request: 'This application sent a sign-in request that cannot be used.',
    denied: 'The sign-in was cancelled or refused.',
    expired: 'This sign-in took too long, or it is already finished.',
    unavailable: 'The service cannot answer right now. Try again in a few minutes.',
    login: 'You need to sign in again to continue.',
    other: 'Something went wrong with this request.',
  },
  fromApp: (name) => `Application: ${name}`,
  backToApp: (name) => `Back to ${name}`,
  backToAccount: 'Go to your account',
  closeHint: 'Go back to the application and start again. If it happens again, tell its support team.',
  reference: 'Reference:',
  details: 'Technical details',
  help: 'Get help',
  product: 'Your account',
};

const fr: Words = {
  signInTitle: 'Cette connexion ne peut pas continuer',
  signOutTitle: 'Cette déconnexion ne peut pas continuer',
  reasons: {
    redirect: "Cette application vous a envoyé vers une adresse qu'elle n'a pas le droit d'utiliser.",
    client: "Cette application n'est pas connue ici, ou n'est pas configurée pour vous connecter.",
    unauthorized: "Cette application n'a pas le droit de vous connecter de cette façon.",
    request: 'Cette application a envoyé une demande de connexion inutilisable.',
    denied: 'La connexion a été annulée ou refusée.',
    expired: 'Cette connexion a pris trop de temps, ou elle est déjà terminée.',
    unavailable: 'Le service ne peut pas répondre pour le moment. Réessayez dans quelques minutes.',
    login: 'Vous devez vous reconnecter pour continuer.',
    other: 'Un problème est survenu avec cette demande.',
  },
  fromApp: (name) => `Application : ${name}`,
  backToApp: (name) => `Retour à ${name}`,
  backToAccount: 'Aller à votre compte',
  closeHint:
    "Retournez dans l'application et recommencez. Si cela se reproduit, prévenez son équipe d'assistance.",
  reference: 'Référence :',
  details: 'Détails techniques',
  help: "Obtenir de l'aide",
  product: 'Votre compte',
};

const WORDS: Record<PageLocale, Words> = { en, fr };

/** The hosted pages' colours (ui/styles.css), light and dark, with the brand's accent. */
function styles(theme: Theme): string {
  const { light, dark } = theme;
  return [
    `:root{--ink:#1b1f24;--muted:#4b5563;--line:#d1d5db;--bg:#f6f7f9;--card:#fff;--accent:${light.accent};--accent-ink:${light.accentInk};--accent-soft:${light.accentSoft};color-scheme:light dark;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;line-height:1.5;color:var(--ink);background:var(--bg)}`,
    `@media (prefers-color-scheme:dark){:root{--ink:#e6e8eb;--muted:#a3acb8;--line:#3a414b;--bg:#0f1216;--card:#181c22;--accent:${dark.accent};--accent-ink:${dark.accentInk};--accent-soft:${dark.accentSoft}}}`,
    '*{box-sizing:border-box}body{margin:0;min-height:100vh;display:flex;flex-direction:column;align-items:center}',
    'header{width:100%;max-width:28rem;padding:1.5rem 1rem .5rem}.brand{margin:0;display:flex;align-items:center;gap:.5rem;font-weight:600}.brand img{height:2rem;width:auto}',
    'main{width:calc(100% - 2rem);max-width:28rem;margin:.5rem 1rem;padding:1.75rem;background:var(--card);border:1px solid var(--line);border-radius:.75rem}',
    'h1{font-size:1.35rem;line-height:1.3;margin:0 0 .75rem}p{margin:.5rem 0}a{color:var(--accent)}',
    '.app{color:var(--muted)}.actions{margin:1.25rem 0 .75rem}',
    '.button{display:inline-block;padding:.6rem 1.1rem;border-radius:.5rem;background:var(--accent);color:var(--accent-ink);text-decoration:none;font-weight:600}',
    '.button:focus-visible,a:focus-visible,summary:focus-visible{outline:3px solid var(--accent);outline-offset:2px}',
    '.ref{font-size:.85rem;color:var(--muted);margin-top:1.25rem}.ref code{font-size:.85rem}details{font-size:.85rem;color:var(--muted)}details p{overflow-wrap:anywhere}',
    'footer{width:100%;max-width:28rem;padding:.5rem 1rem 2rem;font-size:.9rem}',
  ].join('\n');
}

export interface ErrorPageInput {
  lang: PageLocale;
  /** The protocol's error code: shown only as a small reference. */
  error: string;
  /** The library's own description (English, technical): under "Technical details". */
  description?: string;
  /** The error's class name (SessionNotFound is an invalid_request of its own kind). */
  errorName?: string;
  /** A sign-out (the end-session endpoint) rather than a sign-in. */
  signOut?: boolean;
  /** The application, when the request named one that is registered. */
  client?: { name: string; uri?: string };
  brand: Pick<BrandConfig, 'name' | 'named' | 'logoUrl' | 'supportUrl' | 'theme'>;
  /** The account pages (ACCOUNT_UI_PATH on the public origin); undefined when they are off. */
  accountUrl?: string;
}

/** The page itself: escaped throughout, no script, nothing from another origin but the brand's logo. */
export function errorPage(input: ErrorPageInput): string {
  const w = WORDS[input.lang] ?? en;
  const heading = input.signOut ? w.signOutTitle : w.signInTitle;
  const product = input.brand.named ? input.brand.name : w.product;
  const logo = input.brand.logoUrl ? `<img src="${escapeHtml(input.brand.logoUrl)}" alt="">` : '';
  const sentence = w.reasons[reasonOf(input.error, input.errorName)];
  const app = input.client ? `<p class="app">${escapeHtml(w.fromApp(input.client.name))}</p>` : '';
  const back = input.client?.uri
    ? `<a class="button" href="${escapeHtml(input.client.uri)}">${escapeHtml(w.backToApp(input.client.name))}</a>`
    : input.accountUrl
      ? `<a class="button" href="${escapeHtml(input.accountUrl)}">${escapeHtml(w.backToAccount)}</a>`
      : '';
  const details = input.description
    ? `<details><summary>${escapeHtml(w.details)}</summary><p>${escapeHtml(input.description)}</p></details>`
    : '';
  const help = input.brand.supportUrl
    ? `<footer><a href="${escapeHtml(input.brand.supportUrl)}">${escapeHtml(w.help)}</a></footer>`
    : '';
  return `<!doctype html><html lang="${input.lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex"><title>${escapeHtml(heading)} · ${escapeHtml(product)}</title><style>${styles(input.brand.theme)}</style></head><body><header><p class="brand">${logo}<span>${escapeHtml(product)}</span></p></header><main><h1>${escapeHtml(heading)}</h1>${app}<p>${escapeHtml(sentence)}</p><p>${escapeHtml(w.closeHint)}</p>${back ? `<p class="actions">${back}</p>` : ''}<p class="ref">${escapeHtml(w.reference)} <code>${escapeHtml(input.error)}</code></p>${details}</main>${help}</body></html>`;
}
