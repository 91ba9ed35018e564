/**
 * The languages the service speaks to a person: the hosted pages' (ui/i18n.ts), every email and
 * SMS (src/platform/notify/templates.ts) and the OpenID Provider's own pages. An identity keeps one
 * of them (identities.locale, migration 0027). Like everything in src/shared/, it runs in the
 * browser as it is: nothing from Node, nothing of the service (scripts/layers.ts).
 */

export const LOCALES = ['en', 'fr'] as const;
export type Locale = (typeof LOCALES)[number];

export function isLocale(value: unknown): value is Locale {
  return typeof value === 'string' && (LOCALES as readonly string[]).includes(value);
}

/** The first of `tags` (BCP 47, most wanted first) whose language is spoken here, else undefined. */
export function firstSpoken(tags: readonly string[]): Locale | undefined {
  for (const tag of tags) {
    const base = tag.trim().toLowerCase().split('-')[0];
    if (isLocale(base)) return base;
  }
  return undefined;
}

/**
 * The languages of an Accept-Language header, most wanted first (RFC 9110 12.5.4: by weight, then
 * in the order written; `q=0` drops a language; `*` names none in particular).
 */
export function acceptLanguageTags(header: string | undefined): string[] {
  return (header ?? '')
    .slice(0, 1024)
    .split(',')
    .map((part, i) => {
      const [tag, ...params] = part.trim().split(';');
      const weight = params.find((p) => p.trim().startsWith('q='));
      const q = weight === undefined ? 1 : Number(weight.trim().slice(2));
      return { tag: tag.trim(), q: Number.isFinite(q) ? q : 0, i };
    })
    .filter((l) => l.tag !== '' && l.tag !== '*' && l.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map((l) => l.tag);
}

/** The request's language: Accept-Language's best spoken here, else `fallback` (DEFAULT_LOCALE). */
export function localeOfRequest(acceptLanguage: string | undefined, fallback: Locale): Locale {
  return firstSpoken(acceptLanguageTags(acceptLanguage)) ?? fallback;
}
