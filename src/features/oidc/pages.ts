/*
 * The provider's own pages (sign-out, errors, the device verification pages): plain HTML in one
 * style, no script, nothing from another origin. The device pages speak the hosted pages' two
 * languages (ui/i18n.ts): the device's `ui_locales` when it sent one, else the browser's
 * Accept-Language, else English.
 */

export const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

export function page(title: string, body: string, lang: PageLocale = 'en'): string {
  return `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;color:#1b1f24}h1{font-size:1.4rem}button{font:inherit;padding:.5rem 1rem;border-radius:.4rem;border:1px solid #0b5cad;background:#0b5cad;color:#fff;cursor:pointer}button.secondary{background:#fff;color:#0b5cad}form{display:flex;gap:.5rem;margin-top:1.5rem}label{display:block;font-weight:600}input{font:inherit;font-size:1.4rem;letter-spacing:.15em;text-transform:uppercase;padding:.4rem .6rem;width:11ch;border:1px solid #57606a;border-radius:.4rem}p.error{color:#a40e26}code.user-code{font-size:1.6rem;letter-spacing:.15em}</style></head><body><main>${body}</main></body></html>`;
}

export const PAGE_LOCALES = ['en', 'fr'] as const;
export type PageLocale = (typeof PAGE_LOCALES)[number];

/** The first of the device's `ui_locales` the pages speak, else the browser's best, else English. */
export function pageLocale(uiLocales: unknown, acceptsLanguages: (langs: string[]) => string | false) {
  for (const tag of String(uiLocales ?? '').split(' ')) {
    const base = tag.toLowerCase().split('-')[0];
    if ((PAGE_LOCALES as readonly string[]).includes(base)) return base as PageLocale;
  }
  const accepted = acceptsLanguages([...PAGE_LOCALES]);
  return accepted === 'fr' ? 'fr' : 'en';
}

/**
 * The languages an Accept-Language header accepts, most wanted first (q=0 dropped): for the answer
 * the bridge gives itself, outside the library (whose Koa context reads the header for its pages).
 */
export function acceptedLanguages(header: string | undefined): (langs: string[]) => string | false {
  const ranked = (header ?? '')
    .split(',')
    .map((part, i) => {
      const [tag, ...params] = part.trim().split(';');
      const q = Number(
        params
          .find((p) => p.trim().startsWith('q='))
          ?.trim()
          .slice(2) ?? '1',
      );
      return { tag: tag.toLowerCase().split('-')[0], q: Number.isNaN(q) ? 0 : q, i };
    })
    .filter((l) => l.tag !== '' && l.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  return (langs) => ranked.find((l) => langs.includes(l.tag))?.tag ?? false;
}

/**
 * Every text of the device pages and the browser endpoints' limit page, English and French with the
 * same keys (a missing one is a type error).
 */
const en = {
  inputTitle: 'Connect a device',
  inputIntro: 'Enter the code shown on your device.',
  codeLabel: 'Code',
  wrongCode: 'That code is not valid, or no longer. Check the code on your device and type it again.',
  aborted: 'The sign-in on your device was cancelled. Start again on your device.',
  failed: 'This sign-in cannot continue. Start again on your device.',
  continue: 'Continue',
  confirmTitle: 'Confirm the device',
  confirmIntro: '{client} asks to sign in on a device. Check that your device shows this code:',
  confirmWarning:
    'If you did not start this, or your device shows another code, cancel: whoever holds that device would be signed in as you.',
  cancel: 'Cancel',
  successTitle: 'Device connected',
  successHeading: 'You can go back to your device',
  successBody: '{client} is signed in on your device. You can close this page.',
  limitTitle: 'Too many attempts',
  limitBody: 'Too many codes were tried from your network. Wait {seconds} seconds, then try again.',
  signInLimitTitle: 'Too many sign-in requests',
  signInLimitBody:
    'Too many requests came from your network in a short time. Wait {seconds} seconds, then go back to the app and try again.',
} as const;
const fr: Record<keyof typeof en, string> = {
  inputTitle: 'Connecter un appareil',
  inputIntro: 'Saisissez le code affiché sur votre appareil.',
  codeLabel: 'Code',
  wrongCode:
    "Ce code n'est pas valide, ou ne l'est plus. Vérifiez le code affiché sur votre appareil et saisissez-le à nouveau.",
  aborted: 'La connexion sur votre appareil a été annulée. Recommencez sur votre appareil.',
  failed: 'Cette connexion ne peut pas continuer. Recommencez sur votre appareil.',
  continue: 'Continuer',
  confirmTitle: "Confirmer l'appareil",
  confirmIntro:
    '{client} demande à se connecter sur un appareil. Vérifiez que votre appareil affiche ce code :',
  confirmWarning:
    "Si vous n'êtes pas à l'origine de cette demande, ou si votre appareil affiche un autre code, annulez : la personne qui détient cet appareil serait connectée en votre nom.",
  cancel: 'Annuler',
  successTitle: 'Appareil connecté',
  successHeading: 'Vous pouvez retourner sur votre appareil',
  successBody: '{client} est connecté sur votre appareil. Vous pouvez fermer cette page.',
  limitTitle: 'Trop de tentatives',
  limitBody:
    'Trop de codes ont été essayés depuis votre réseau. Attendez {seconds} secondes, puis réessayez.',
  signInLimitTitle: 'Trop de demandes de connexion',
  signInLimitBody:
    "Trop de demandes sont venues de votre réseau en peu de temps. Attendez {seconds} secondes, puis retournez dans l'application et réessayez.",
};
const CATALOGUE: Record<PageLocale, Record<keyof typeof en, string>> = { en, fr };

/** A text with its `{name}` places filled, every value escaped. */
function text(lang: PageLocale, key: keyof typeof en, values: Record<string, string> = {}): string {
  return escapeHtml(CATALOGUE[lang][key]).replace(/\{(\w+)\}/g, (_, name: string) =>
    escapeHtml(values[name] ?? ''),
  );
}

/** What the library's own form carries: where it posts and its anti-CSRF value (user_code_form). */
export interface DeviceForm {
  action: string;
  xsrf: string;
}

export type DeviceInputError = 'wrong_code' | 'aborted' | 'failed';

/** The verification page: the person types the code their device shows. */
export function deviceInputPage(
  lang: PageLocale,
  form: DeviceForm,
  error?: DeviceInputError,
  typed?: string,
): string {
  const message =
    error === 'wrong_code'
      ? `<p class="error" role="alert">${text(lang, 'wrongCode')}</p>`
      : error === 'aborted'
        ? `<p class="error" role="alert">${text(lang, 'aborted')}</p>`
        : error === 'failed'
          ? `<p class="error" role="alert">${text(lang, 'failed')}</p>`
          : '';
  const value = typed ? ` value="${escapeHtml(typed)}"` : '';
  return page(
    CATALOGUE[lang].inputTitle,
    `<h1>${text(lang, 'inputTitle')}</h1><p>${text(lang, 'inputIntro')}</p>${message}<form id="device-input" method="post" action="${escapeHtml(form.action)}"><input type="hidden" name="xsrf" value="${escapeHtml(form.xsrf)}"><div><label for="user_code">${text(lang, 'codeLabel')}</label><input id="user_code" name="user_code" type="text" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" maxlength="20" required autofocus${value}></div><button type="submit">${text(lang, 'continue')}</button></form>`,
    lang,
  );
}

/** The confirmation: the code again beside the client's name, before the sign-in. */
export function deviceConfirmPage(lang: PageLocale, form: DeviceForm, clientName: string, userCode: string) {
  const hidden = `<input type="hidden" name="xsrf" value="${escapeHtml(form.xsrf)}"><input type="hidden" name="user_code" value="${escapeHtml(userCode)}">`;
  return page(
    CATALOGUE[lang].confirmTitle,
    `<h1>${text(lang, 'confirmTitle')}</h1><p>${text(lang, 'confirmIntro', { client: clientName })}</p><p><code class="user-code">${escapeHtml(userCode)}</code></p><p>${text(lang, 'confirmWarning')}</p><form method="post" action="${escapeHtml(form.action)}">${hidden}<button autofocus type="submit" name="confirm" value="yes">${text(lang, 'continue')}</button><button class="secondary" type="submit" name="abort" value="yes">${text(lang, 'cancel')}</button></form>`,
    lang,
  );
}

/** After the consent: the device receives its tokens at its next poll. */
export function deviceSuccessPage(lang: PageLocale, clientName: string): string {
  return page(
    CATALOGUE[lang].successTitle,
    `<h1>${text(lang, 'successHeading')}</h1><p>${text(lang, 'successBody', { client: clientName })}</p>`,
    lang,
  );
}

/** The verification endpoint's per-address limit, as a page (never a redirect). */
export function deviceLimitPage(lang: PageLocale, seconds: string): string {
  return page(
    CATALOGUE[lang].limitTitle,
    `<h1>${text(lang, 'limitTitle')}</h1><p>${text(lang, 'limitBody', { seconds })}</p>`,
    lang,
  );
}

/**
 * The per-address limit of the authorization and end-session endpoints, as a page: a person's
 * browser is their only caller, and the app's redirect_uri is not checked yet when it refuses.
 */
export function signInLimitPage(lang: PageLocale, seconds: string): string {
  return page(
    CATALOGUE[lang].signInLimitTitle,
    `<h1>${text(lang, 'signInLimitTitle')}</h1><p><code>rate_limit.exceeded</code></p><p>${text(lang, 'signInLimitBody', { seconds })}</p>`,
    lang,
  );
}
