import { h, uid } from './dom.js';
import { locale, onLocaleChange } from './i18n.js';
import { t } from './messages/strength.js';

/*
 * The strength meter under a new password. It judges by the service's own rule
 * (src/shared/password-policy.ts: length 12..200, not in the bundled breach list, and a zxcvbn
 * score of 3 or more), loaded
 * on the first keystroke as a separate script: zxcvbn's dictionaries are most of its weight and
 * the pages do not need them until someone types a new password.
 */

type Policy = typeof import('../src/shared/password-policy.js');

let policy: Promise<Policy> | undefined;
const loadPolicy = (): Promise<Policy> => {
  policy ??= import('../src/shared/password-policy.js');
  // A failed load (offline) may be tried again on the next keystroke.
  policy.catch(() => {
    policy = undefined;
  });
  return policy;
};

type Localiser = typeof import('./messages/strength-zxcvbn.js');

let localiser: Promise<Localiser> | undefined;
/** zxcvbn's advice in another language than English: its own small script, for those pages only. */
const loadLocaliser = (): Promise<Localiser> => {
  localiser ??= import('./messages/strength-zxcvbn.js');
  localiser.catch(() => {
    localiser = undefined;
  });
  return localiser;
};

/** The label of a zxcvbn score: 0 to 2 are refused by the service, 3 and 4 accepted. */
const LABELS = ['tooWeak', 'tooWeak', 'weak', 'good', 'strong'] as const;

interface Verdict {
  /** 1..4 segments. */
  level: 1 | 2 | 3 | 4;
  label: string;
  /** Why, and what to do, in plain words; empty for a good password. */
  advice: string;
}

/**
 * The service's verdict on a password, from the policy module itself, with the same user inputs:
 * the identifiers and the product's name as the page's header shows it (BRAND_NAME).
 */
async function verdictOf(p: Policy, password: string, userInputs: readonly string[]): Promise<Verdict> {
  const product = document.querySelector('.brand-name')?.textContent?.trim();
  const result = await p.checkNewPassword(
    password,
    p.passwordUserInputs(userInputs, product ? [product] : []),
  );
  if (result.ok) return { level: result.score === 4 ? 4 : 3, label: t(LABELS[result.score]), advice: '' };
  // In the bundled breach list: the meter says so, as the service's refusal will.
  if (result.reason === 'breached') return { level: 1, label: t('tooWeak'), advice: t('breached') };
  if (result.reason !== 'weak') {
    const advice =
      result.reason === 'too_short'
        ? t('atLeast', { count: p.MIN_PASSWORD_LENGTH })
        : t('atMost', { count: p.MAX_PASSWORD_LENGTH });
    return { level: 1, label: t('tooWeak'), advice };
  }
  // The rule words zxcvbn's advice in English; a page in French shows @zxcvbn-ts/language-fr's
  // sentences instead (ui/messages/strength-zxcvbn.ts), or the level word alone should one not be
  // found there (or its script not fetched: offline for a moment).
  const language = locale();
  const advice =
    language === 'en'
      ? result.advice
      : ((await loadLocaliser().then(
          (l) => l.localiseAdvice(result.advice, language),
          () => null,
        )) ?? '');
  return { level: result.score === 2 ? 2 : 1, label: t(LABELS[result.score]), advice };
}

/**
 * The verdict last shown under each new-password input, with the password and the page's language
 * it was for: what a refusal of that same password repeats (ui/problems.ts). Weak: gone with the
 * input.
 */
const shown = new WeakMap<HTMLInputElement, { password: string; lang: string; advice: string }>();

/**
 * The advice (in the page's language, without the level word) the meter gave for the password now
 * in the new-password input named `name`: the one in the form being sent (aria-busy) when there
 * are several. Null when the meter has not judged that password yet, or found nothing to say.
 */
export function adviceShown(name: string | undefined): string | null {
  if (!name) return null;
  const selector = `input[name="${CSS.escape(name)}"]`;
  const input =
    document.querySelector<HTMLInputElement>(`form[aria-busy="true"] ${selector}`) ??
    document.querySelector<HTMLInputElement>(selector);
  const verdict = input ? shown.get(input) : undefined;
  if (!input || !verdict || verdict.password !== input.value) return null;
  if (verdict.lang !== document.documentElement.lang) return null;
  return verdict.advice || null;
}

/** Each meter's redraw in a new language, by its element (weak: gone with the page). */
const redraws = new WeakMap<Element, () => void>();
onLocaleChange(() => {
  for (const el of document.querySelectorAll('.strength')) redraws.get(el)?.();
});

interface StrengthMeter {
  el: HTMLElement;
  /** The id of the sentence, for the input's aria-describedby. */
  textId: string;
}

/** Time to wait after the last keystroke before judging and announcing. */
const SETTLE_MS = 300;

/**
 * A bar of four segments (role=meter, named "Password strength") and a sentence read out politely
 * once typing pauses. The bar is hidden while the field is empty. `userInputs` gives the person's own
 * identifiers (a password built on them is weak); when it gives none, the form's identifier field
 * is used.
 */
export function strengthMeter(input: HTMLInputElement, userInputs?: () => readonly string[]): StrengthMeter {
  const textId = uid('strength');
  const segments = [1, 2, 3, 4].map(() => h('span', { class: 'strength-segment' }));
  const bar = h(
    'div',
    {
      class: 'strength-bar',
      role: 'meter',
      'aria-label': t('meter'),
      'aria-valuemin': 0,
      'aria-valuemax': 4,
      'aria-valuenow': 0,
      'aria-valuetext': t('unrated'),
    },
    segments,
  );
  const text = h('p', { class: 'strength-text', id: textId, 'aria-live': 'polite' });
  bar.hidden = true;
  // The sentence stays in the page (empty) so that screen readers hear its first change too.
  const el = h('div', { class: 'strength', 'data-level': '0' }, bar, text);

  const identifiers = (): readonly string[] => {
    const given = userInputs?.() ?? [];
    if (given.length > 0) return given;
    const own = input.form?.querySelector<HTMLInputElement>('input[name="identifier"]');
    return own?.value ? [own.value] : [];
  };

  const show = (v: Verdict) => {
    el.dataset.level = String(v.level);
    bar.setAttribute('aria-valuenow', String(v.level));
    bar.setAttribute('aria-valuetext', v.label);
    segments.forEach((s, i) => {
      s.classList.toggle('on', i < v.level);
    });
    const sentence = v.advice ? `${v.label}. ${t('advice', { advice: v.advice })}` : `${v.label}.`;
    if (text.textContent !== sentence) text.textContent = sentence;
  };

  let timer: ReturnType<typeof setTimeout> | undefined;
  const judge = async () => {
    const password = input.value;
    if (password === '') {
      bar.hidden = true;
      text.textContent = '';
      return;
    }
    try {
      const lang = document.documentElement.lang;
      const verdict = await verdictOf(await loadPolicy(), password, identifiers());
      // Typed on (or the language changed) while the rule loaded: a newer judgement follows.
      if (input.value !== password || document.documentElement.lang !== lang) return;
      bar.hidden = false;
      show(verdict);
      shown.set(input, { password, lang, advice: verdict.advice });
    } catch {
      // Without the rule there is no meter; the service still checks on submit.
      bar.hidden = true;
    }
  };
  input.addEventListener('input', () => {
    // Fetch the rule and its dictionaries while the person types on.
    void loadPolicy()
      .then((p) => p.preparePasswordPolicy())
      .catch(() => undefined);
    if (locale() !== 'en') void loadLocaliser().catch(() => undefined);
    clearTimeout(timer);
    timer = setTimeout(judge, SETTLE_MS);
  });
  // Leaving the field (to press the button) judges at once: a refusal of this password then has
  // the advice to repeat (adviceShown).
  input.addEventListener('change', () => {
    clearTimeout(timer);
    void judge();
  });
  // The page's words in the new language, the password judged again for its advice.
  redraws.set(el, () => {
    bar.setAttribute('aria-label', t('meter'));
    if (input.value === '') bar.setAttribute('aria-valuetext', t('unrated'));
    clearTimeout(timer);
    void judge();
  });
  return { el, textId };
}
