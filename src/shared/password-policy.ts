import type { Score, ZxcvbnFactory } from '@zxcvbn-ts/core';

/**
 * The one rule for a new password, shared by the service (sign-up, change, recovery, through
 * src/platform/crypto/password-policy.ts, which adds its refusal) and the hosted page's strength
 * meter, which loads this very module lazily (ui/strength.ts): what the meter calls good is what
 * the service accepts. Like everything in src/shared/, it runs in the browser as it is: it imports
 * nothing from Node and nothing of the service (scripts/layers.ts).
 */

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 200;
/** zxcvbn's score (0..4) a new password must reach: "safely unguessable" (docs/decisions.md). */
export const MIN_PASSWORD_SCORE = 3;
/**
 * zxcvbn estimates the first 64 characters only: its matching grows fast with the length (200
 * characters of digits and symbols took over a second), 64 keep the worst case near 20 ms of CPU.
 */
const ESTIMATED_LENGTH = 64;

export type PasswordPolicyResult =
  | { ok: true; score: Score }
  | { ok: false; reason: 'too_short' | 'too_long' }
  /** In the bundled list of passwords seen in breaches (breachedOffline): `message` says so. */
  | { ok: false; reason: 'breached'; message: string }
  /** `advice`: zxcvbn's warning and first suggestion; `message`: the refusal's sentence with it. */
  | { ok: false; reason: 'weak'; score: Score; advice: string; message: string };

let estimator: Promise<ZxcvbnFactory> | undefined;
/**
 * The bundled breach list: the entries of zxcvbn's own common-password list (@zxcvbn-ts/language-
 * common, `passwords-common`, ranked by how often they appear in leaked password dumps) that are
 * long enough to pass the length rule, about 300 of its 49,000; shorter ones are refused by length
 * anyway. Filled with the estimator (docs/security.md, "Breached passwords").
 */
let breachList: ReadonlySet<string> = new Set();

/** The sentence of a breached password's refusal (the page words its own, ui/messages/forms.ts). */
export const BREACHED_PASSWORD_MESSAGE =
  'This password has appeared in data breaches, so attackers try it first. Choose another one.';

/**
 * The word lists with every word that fits in Latin-1 as a one-byte string. Each list is decoded
 * from one text, and a list with a single word beyond Latin-1 (English's common words have some)
 * decodes all its words as two-byte strings. zxcvbn makes each word a property name, and V8 keeps
 * one copy of each property name and string literal per process: the first to arrive sets the
 * representation. The dictionaries are built before the first request, so words such as "up",
 * "ok" or "active" then reached every answer that says them as two-byte strings, and an answer
 * holding one two-byte string is built, measured and encoded to UTF-8 as two-byte text
 * (docs/performance.md, "Fifth round"). The other lists are left as they are.
 */
function oneByteWords(dictionary: Record<string, (string | number)[]>): Record<string, (string | number)[]> {
  const out: Record<string, (string | number)[]> = {};
  for (const [name, words] of Object.entries(dictionary)) {
    out[name] = words.some((word) => typeof word === 'string' && BEYOND_LATIN_1.test(word))
      ? words.map(oneByte)
      : words;
  }
  return out;
}

const BEYOND_LATIN_1 = /[\u0100-\uffff]/;

/** The same text, rebuilt one character at a time (V8 builds it one-byte) when it fits in Latin-1. */
function oneByte(word: string | number): string | number {
  if (typeof word !== 'string' || BEYOND_LATIN_1.test(word)) return word;
  const codes = new Array<number>(word.length);
  for (let i = 0; i < word.length; i++) codes[i] = word.charCodeAt(i);
  return String.fromCharCode(...codes);
}

/**
 * zxcvbn and its dictionaries, imported and built on first use (about 0.2 s to import and 0.2 s to
 * build), then kept for the process: a test file that sets no password never loads them, and in
 * the page they are a separate file again.
 */
function zxcvbn(): Promise<ZxcvbnFactory> {
  estimator ??= (async () => {
    const [{ ZxcvbnFactory }, common, english] = await Promise.all([
      import('@zxcvbn-ts/core'),
      import('@zxcvbn-ts/language-common'),
      import('@zxcvbn-ts/language-en'),
    ]);
    breachList = new Set(
      common.dictionary['passwords-common'].filter(
        (word): word is string => typeof word === 'string' && [...word].length >= MIN_PASSWORD_LENGTH,
      ),
    );
    return new ZxcvbnFactory({
      dictionary: oneByteWords({ ...common.dictionary, ...english.dictionary }),
      graphs: common.adjacencyGraphs,
      translations: english.translations,
      maxLength: ESTIMATED_LENGTH,
      // Each extra l33t substitution multiplies the work on passwords full of digits and symbols.
      l33tMaxSubstitutions: 2,
    });
  })();
  // A failed load is tried again next time (in the page: offline for a moment).
  estimator.catch(() => {
    estimator = undefined;
  });
  return estimator;
}

/**
 * Loads and builds the estimator now. The service awaits it before its port opens (src/serve.ts),
 * so the first new password does not stall the event loop (and every request behind it) for the
 * build; tests and the page load it on first use.
 */
export async function preparePasswordPolicy(): Promise<void> {
  await zxcvbn();
}

/** Words of the service itself that a person may build a password on, besides the product's name. */
const PRODUCT_WORDS = ['account', 'identity'];

/**
 * What zxcvbn treats as the person's own data: each identifier whole, an address's local part (and
 * its pieces) and domain name, a phone number's digits and its last ten, nine and eight digits (the
 * national number without the country code), and the product's name (BRAND_NAME, whole and word by
 * word) with PRODUCT_WORDS.
 */
export function passwordUserInputs(
  identifiers: readonly string[],
  productNames: readonly string[] = [],
): string[] {
  const inputs = new Set<string>(PRODUCT_WORDS);
  for (const name of productNames) {
    const lower = name.trim().toLowerCase();
    if (lower === '') continue;
    inputs.add(lower);
    for (const word of lower.split(/[^\p{L}\p{N}]+/u)) if (word.length >= 3) inputs.add(word);
  }
  for (const raw of identifiers) {
    const value = raw.trim().toLowerCase();
    if (value === '') continue;
    inputs.add(value);
    const at = value.lastIndexOf('@');
    if (at > 0) {
      const local = value.slice(0, at);
      inputs.add(local);
      for (const piece of local.split(/[._+-]/)) if (piece.length >= 3) inputs.add(piece);
      const domain = value.slice(at + 1).split('.')[0];
      if (domain && domain.length >= 3) inputs.add(domain);
      continue;
    }
    const digits = value.replace(/\D/g, '');
    if (digits.length >= 6) {
      inputs.add(digits);
      // The national number without the country code, whatever the code's length.
      for (const n of [10, 9, 8]) if (digits.length > n) inputs.add(digits.slice(-n));
    }
  }
  return [...inputs];
}

/** Advice built from zxcvbn's fixed feedback sentences only: it never contains the password. */
function adviceFrom(warning: string | null, suggestions: readonly string[]): string {
  const parts: string[] = [];
  if (warning) parts.push(warning);
  if (suggestions[0]) parts.push(suggestions[0]);
  else if (!warning) parts.push('Add more words or make it longer.');
  return parts.join(' ');
}

/**
 * 12..200 characters counted by Unicode code points ([...s].length), no composition rules, not
 * exactly one of the bundled breached passwords (breachList), and a zxcvbn score of at least
 * MIN_PASSWORD_SCORE with the person's identifiers as their own data.
 */
export async function checkNewPassword(
  password: string,
  userInputs: readonly string[] = [],
): Promise<PasswordPolicyResult> {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return { ok: false, reason: 'too_short' };
  if (length > MAX_PASSWORD_LENGTH) return { ok: false, reason: 'too_long' };
  const estimator = await zxcvbn();
  // Before the estimate: a listed password is refused for what it is, not as merely guessable.
  if (breachList.has(password)) return { ok: false, reason: 'breached', message: BREACHED_PASSWORD_MESSAGE };
  const result = estimator.check(password, [...userInputs]);
  if (result.score >= MIN_PASSWORD_SCORE) return { ok: true, score: result.score };
  const advice = adviceFrom(result.feedback.warning, result.feedback.suggestions);
  return {
    ok: false,
    reason: 'weak',
    score: result.score,
    advice,
    message: `This password is too easy to guess. ${advice}`,
  };
}
