import en from '@zxcvbn-ts/language-en/dist/translations.mjs';
import fr from '@zxcvbn-ts/language-fr/dist/translations.mjs';
import type { Locale } from '../i18n.js';

/*
 * zxcvbn's advice in the page's language, loaded with the rule on the first keystroke and only on
 * a page that is not in English (ui/strength.ts).
 *
 * The rule is the service's (src/shared/password-policy.ts), shared with the page, and
 * words its advice in English for the service's own refusal: zxcvbn's warning and first
 * suggestion, each one of @zxcvbn-ts/language-en's fixed sentences, or a closing sentence of its
 * own when zxcvbn has neither. Each sentence is found in the English table and replaced by the
 * sentence under the same key in the page's language (@zxcvbn-ts/language-fr), so the score and
 * the advice stay the service's while the words are the person's.
 */

type Translations = typeof en;
const TABLES: Record<Exclude<Locale, 'en'>, Translations> = { fr };

/** The rule's own sentence when zxcvbn gives no feedback (password-policy.ts, adviceFrom). */
const CLOSING: Record<Locale, string> = {
  en: 'Add more words or make it longer.',
  fr: 'Ajoutez des mots ou allongez-le.',
};

/** A sentence ends with its full stop (a few of language-fr's have none). */
const sentence = (text: string) => (/[.!?…)]$/.test(text.trim()) ? text.trim() : `${text.trim()}.`);

/** English sentence → the same sentence in `to`, longest first (one may begin another). */
function pairs(to: Exclude<Locale, 'en'>): [string, string][] {
  const table = TABLES[to];
  const found: [string, string][] = [[CLOSING.en, CLOSING[to]]];
  for (const group of ['warnings', 'suggestions'] as const) {
    const source: Record<string, string> = en[group];
    const target: Record<string, string> = table[group];
    for (const [key, text] of Object.entries(source)) {
      if (target[key]) found.push([text, sentence(target[key])]);
    }
  }
  return found.sort((a, b) => b[0].length - a[0].length);
}
const cache = new Map<Locale, [string, string][]>();

/**
 * The rule's English `advice` in `to`; null when a sentence is not one of zxcvbn's (a newer
 * zxcvbn): the page then shows the level word alone rather than English words in French.
 */
export function localiseAdvice(advice: string, to: Locale): string | null {
  if (to === 'en') return advice;
  let table = cache.get(to);
  if (!table) {
    table = pairs(to);
    cache.set(to, table);
  }
  const out: string[] = [];
  let rest = advice.trim();
  while (rest !== '') {
    const hit = table.find(([english]) => rest === english || rest.startsWith(`${english} `));
    if (!hit) return null;
    out.push(hit[1]);
    rest = rest.slice(hit[0].length).trim();
  }
  return out.join(' ');
}
