import { type CodeShape, codeLifetimeSeconds, codeShape, InteractionError } from './api.js';
import { type Field, field, h } from './dom.js';
import type { IdentifierField, IdentifierForm } from './identifier.js';
import { t } from './messages/otp.js';
import { Cancelled } from './problems.js';
import { holdButton } from './wait.js';

/*
 * One-time codes. One plain input, not a box per character (docs/decisions.md, "One input for a
 * one-time code"): a screen reader reads one field with one label, the browser and the phone's
 * keyboard offer the code from the message (autocomplete=one-time-code), and paste, undo and
 * selection work as everywhere else. Its width and a monospace, letter-spaced font show how long
 * the code is. Typing its last character does not submit the form: the person decides.
 */

/** What a code may hold in each format (the service accepts letters in either case). */
const CHARACTER: Record<CodeShape['format'], RegExp> = {
  numeric: /[0-9]/,
  alphabetic: /[A-Za-z]/,
  alphanumeric: /[A-Za-z0-9]/,
};

/**
 * An authenticator app shows 6 to 8 digits (TOTP_DIGITS is the count at enrolment only: a factor
 * enrolled before a change keeps its own), so the field takes up to 8 and needs at least 6.
 */
const AUTHENTICATOR_DIGITS = { least: 6, most: 8 };

export interface CodeFieldOptions {
  label: string;
  name: string;
  /** Replaces the default hint, which says how long the code is. */
  hint?: string;
  /** A code from a message (VERIFICATION_CODE_*), or from an authenticator app (TOTP_DIGITS). */
  kind: 'message' | 'authenticator';
}

export interface CodeField extends Field {
  /** The code typed: its characters only, letters upper-cased. */
  value(): string;
  /**
   * In a form's onSubmit: a code that is not whole (too short) is named on this field, which takes
   * the focus, and the submission stops there (nothing is sent).
   */
  requireWhole(): void;
}

/** The sentence that says how long a code is ("The 6-digit code in the message we sent."). */
export function codeHint(kind: CodeFieldOptions['kind']): string {
  const shape = codeShape(kind);
  if (kind === 'authenticator') return t('hint.authenticator', { count: shape.length });
  const key = (
    { numeric: 'hint.numeric', alphabetic: 'hint.alphabetic', alphanumeric: 'hint.alphanumeric' } as const
  )[shape.format];
  return t(key, { count: shape.length });
}

/** A one-time-code input, the same `Field` as dom.ts's field() so that any form can use it. */
export function codeField(o: CodeFieldOptions): CodeField {
  const shape = codeShape(o.kind);
  const authenticator = o.kind === 'authenticator';
  const most = authenticator ? Math.max(shape.length, AUTHENTICATOR_DIGITS.most) : shape.length;
  const least = authenticator ? AUTHENTICATOR_DIGITS.least : shape.length;
  const allowed = CHARACTER[shape.format];
  const f = field({
    label: o.label,
    name: o.name,
    type: 'text',
    autocomplete: 'one-time-code',
    inputmode: shape.format === 'numeric' ? 'numeric' : 'text',
    maxlength: most,
    hint: o.hint ?? codeHint(o.kind),
  });
  const { input } = f;
  input.classList.add('code-input');
  input.dataset.length = String(shape.length);
  input.spellcheck = false;
  input.setAttribute('spellcheck', 'false');
  input.setAttribute('autocapitalize', shape.format === 'numeric' ? 'off' : 'characters');

  /** Only the code's characters of `text`, letters upper-cased. */
  const clean = (text: string) =>
    [...text]
      .filter((c) => allowed.test(c))
      .join('')
      .toUpperCase();

  // Whatever arrives (typed, autofilled from a message, dropped), only the code's characters stay,
  // and the caret stays after the same character.
  input.addEventListener('input', () => {
    const value = input.value;
    const cleaned = clean(value).slice(0, most);
    if (cleaned === value) return;
    const caret = Math.min(
      clean(value.slice(0, input.selectionStart ?? value.length)).length,
      cleaned.length,
    );
    input.value = cleaned;
    input.setSelectionRange(caret, caret);
  });
  // A pasted code ("123 456", "ABCD-EFGH") keeps its characters only, before maxlength would cut
  // its tail; a whole code replaces what was there.
  input.addEventListener('paste', (event) => {
    const text = event.clipboardData?.getData('text') ?? '';
    event.preventDefault();
    const code = clean(text);
    if (code === '') return;
    if (code.length >= least) {
      input.value = code.slice(0, most);
    } else {
      input.setRangeText(code, input.selectionStart ?? 0, input.selectionEnd ?? 0, 'end');
      input.value = input.value.slice(0, most);
    }
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });

  const incomplete = () =>
    authenticator
      ? t('incomplete.authenticator')
      : t(
          (
            {
              numeric: 'incomplete.numeric',
              alphabetic: 'incomplete.alphabetic',
              alphanumeric: 'incomplete.alphanumeric',
            } as const
          )[shape.format],
          { count: shape.length },
        );
  const value = () => clean(input.value);
  return {
    ...f,
    value,
    requireWhole() {
      const length = value().length;
      if (length >= least && length <= most) return;
      // The field says what is missing in the page's language and takes the focus; the form
      // stops without an alert (Cancelled ends a submission quietly).
      f.setError(incomplete());
      input.focus();
      throw new Cancelled();
    },
  };
}

/** Seconds before another code can be asked for (the service's send limit still applies). */
export const RESEND_COOLDOWN = 30;

export interface CodeSent {
  /** "Code sent to …": a status, read out politely, shown above the form. */
  status: HTMLParagraphElement;
  /** "Send a new code": what it does is the page's. */
  resend: HTMLButtonElement;
  /** After a send: says so, and holds the resend button back for RESEND_COOLDOWN seconds. */
  sent(): void;
  /**
   * When the last code was sent (this browser's clock, ms), for the page to keep across a reload;
   * null when this page did not see it sent.
   */
  sentAt(): number | null;
  /** A send seen earlier (before a reload): its time, kept by the page. */
  sentEarlier(at: number): void;
  /**
   * A refusal of the code: when the last code's lifetime (CHALLENGE_TTL) has passed, the page's own
   * "This code has expired" on `field` and in the alert, else the refusal as it came. The service
   * answers expired and wrong codes alike (docs/api.md); the page knows when it sent the code.
   */
  explain(error: unknown, field: string): unknown;
}

/** "It expires in 15 minutes.": the configured lifetime of a code sent by message (CHALLENGE_TTL). */
export function codeExpiresText(): string {
  const seconds = codeLifetimeSeconds();
  if (seconds >= 7200 && seconds % 3600 === 0) return t('expiresIn.hours', { count: seconds / 3600 });
  return t('expiresIn.minutes', { count: Math.max(1, Math.floor(seconds / 60)) });
}

/**
 * The resend button and the status that says where the last code went. `sentText` words the
 * status when "Code sent to …" would say too much (recovery never says whether an account exists).
 */
export function codeSent(who: IdentifierForm, sentText?: string): CodeSent {
  const status = h('p', { class: 'code-sent', role: 'status' });
  const resend = h('button', { type: 'button', class: 'secondary' }, t('resend'));
  let timer: number | undefined;
  let last: number | null = null;
  return {
    status,
    resend,
    sentAt: () => last,
    sentEarlier(at) {
      last = at;
    },
    explain(error, field) {
      if (last === null || Date.now() < last + codeLifetimeSeconds() * 1000) return error;
      return new InteractionError({
        code: 'ui.code_expired',
        status: 422,
        errors: [{ field, code: 'code_expired' }],
      });
    },
    sent() {
      last = Date.now();
      // Emptied, then written after a tick: a screen reader announces a second "Code sent" too.
      status.textContent = '';
      window.clearTimeout(timer);
      timer = window.setTimeout(() => {
        status.textContent = sentText ?? t('sent', { identifier: who.identifier });
      }, 50);
      // The status is left as it is when the wait ends (it never equals the empty message). A step
      // drawn before its page is shown starts the wait once the button is on the page (a wait on
      // a button off the page ends at once).
      resend.disabled = true;
      const end = Date.now() + RESEND_COOLDOWN * 1000;
      const hold = (tries: number) => {
        if (resend.isConnected) holdButton(resend, (end - Date.now()) / 1000, status, '');
        else if (tries > 0) window.setTimeout(() => hold(tries - 1), 20);
      };
      hold(250);
    },
  };
}

/** "Use a different address" (or phone number): back to the first step, the address kept to edit. */
export function differentAddress(who: IdentifierForm, onClick: () => void): HTMLButtonElement {
  const button = h(
    'button',
    { type: 'button', class: 'link' },
    t(who.identifierType === 'phone' ? 'different.phone' : 'different.email'),
  );
  button.addEventListener('click', onClick);
  return button;
}

/** Puts an identifier back in the identifier field (its country too), as if typed. */
export function refill(field: IdentifierField, who: IdentifierForm): void {
  field.input.value = who.identifier;
  if (who.identifierType === 'phone') field.country.value = who.country;
  field.input.dispatchEvent(new Event('input', { bubbles: true }));
}
