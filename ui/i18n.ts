/*
 * The hosted pages' languages. Every string a person reads comes from a catalogue: one file per
 * area in ui/messages/, English and French side by side, so a missing translation is a type error
 * (the French object must have exactly the English keys). The language is the first of the
 * browser's preferred languages (navigator.languages, what it sends as Accept-Language) that the
 * pages speak, or the OpenID Provider's `ui_locales` when an application asked for one; English
 * otherwise.
 *
 * `en-XA` is the pseudo-locale (as in Chrome and Android): English wrapped in ⟦ ⟧, so a test can
 * see any text on a page that did not come from a catalogue.
 */

import { LOCALES, type Locale } from '../src/shared/locales.js';

// One list for the pages, the service's messages and the identity's kept language.
export { LOCALES, type Locale };
const PSEUDO = 'en-xa';

/** A message that depends on a count: Intl.PluralRules picks the form ("one", "other", …). */
export interface Plural {
  one: string;
  other: string;
  zero?: string;
  two?: string;
  few?: string;
  many?: string;
}
type Message = string | Plural;
type Params = Record<string, string | number>;

let current: Locale = 'en';
let pseudo = false;

/** The pages' language: what dates, numbers and plurals follow too (the pseudo-locale's is English). */
export const locale = (): Locale => current;

/** The first of `preferred` (BCP 47 tags, most wanted first) that the pages speak, else English. */
export function chooseLocale(preferred: readonly string[]): { locale: Locale; pseudo: boolean } {
  for (const tag of preferred) {
    const lower = tag.toLowerCase();
    if (lower === PSEUDO) return { locale: 'en', pseudo: true };
    const base = lower.split('-')[0] as Locale;
    if ((LOCALES as readonly string[]).includes(base)) return { locale: base, pseudo: false };
  }
  return { locale: 'en', pseudo: false };
}

const listeners = new Set<() => void>();

/** Called after each switch of language (the frame redraws its own words). */
export function onLocaleChange(listener: () => void): void {
  listeners.add(listener);
}

/** Switches the pages' language (before a render: strings are read when a page is drawn). */
export function setLocale(choice: { locale: Locale; pseudo: boolean }): void {
  const changed = choice.locale !== current || choice.pseudo !== pseudo;
  current = choice.locale;
  pseudo = choice.pseudo;
  // Outside a page (the browser tests read the catalogues to find what a person reads) there is
  // no document to label.
  if (typeof document !== 'undefined') document.documentElement.lang = pseudo ? 'en-XA' : current;
  if (changed) for (const listener of listeners) listener();
}

function fill(text: string, params: Params | undefined): string {
  if (!params) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole));
}

function pick(message: Message, params: Params | undefined): string {
  if (typeof message === 'string') return message;
  const count = Number(params?.count ?? 0);
  // An explicit `zero` is the catalogue's wording for none ("No live session"); English and French
  // have no such plural category, so Intl.PluralRules alone would never pick it.
  if (count === 0 && message.zero !== undefined) return message.zero;
  const form = new Intl.PluralRules(current).select(count) as keyof Plural;
  return message[form] ?? message.other;
}

/**
 * One area's catalogue: `t(key, params)` answers the message in the current language, with
 * `{name}` placeholders filled from params (and the plural form chosen by `params.count`).
 */
export function messages<const E extends Record<string, Message>>(
  en: E,
  fr: { [K in keyof E]: E[K] extends string ? string : Plural },
): (key: keyof E & string, params?: Params) => string {
  const catalogues: Record<Locale, Record<string, Message>> = { en, fr };
  return (key, params) => {
    const text = fill(pick(catalogues[current][key], params), params);
    return pseudo ? `⟦${text}⟧` : text;
  };
}
