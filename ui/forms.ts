import { asProblem } from './api.js';
import { type Field, h, markInvalid } from './dom.js';
import { t } from './messages/forms.js';
import { Cancelled, fieldMessage, messageFor, type ProblemLike } from './problems.js';
import { holdButton, isHeld } from './wait.js';

/**
 * A refusal that says how long to wait (429 with Retry-After) holds `button` back until then, with
 * a countdown beside it (ui/wait.ts); the alert already says "Try again in about 15 minutes".
 */
function holdIfWaiting(p: ProblemLike, button: HTMLButtonElement, alert: HTMLElement): void {
  if (p.code === 'rate_limit.exceeded' && p.retryAfter && p.retryAfter > 0) {
    holdButton(button, p.retryAfter, alert, alert.textContent ?? '');
  }
}

/** The fields whose empty value has a message of its own ("Enter your password."). */
const REQUIRED = {
  identifier: 'required.identifier',
  password: 'required.password',
  code: 'required.code',
  recoveryCode: 'required.recoveryCode',
} as const;

/**
 * The form's own check before anything is sent, in place of the browser's bubbles (the form has
 * `novalidate`): a required field left empty, too short or too long (counted by code points, as
 * the service counts). Answers the message, or null when the value may go.
 */
export function checkField(input: HTMLInputElement): string | null {
  if (input.disabled) return null;
  const value = input.value;
  const length = [...value].length;
  if (value.trim() === '') {
    if (!input.required) return null;
    const key = REQUIRED[input.name as keyof typeof REQUIRED];
    return t(key ?? 'required');
  }
  if (input.minLength > 0 && length < input.minLength) return t('minLength', { count: input.minLength });
  if (input.maxLength > 0 && length > input.maxLength) return t('maxLength', { count: input.maxLength });
  return null;
}

/** A button at work: a spinner beside its unchanged label (CSS, `.busy`), and aria-busy. */
export function setBusy(button: HTMLButtonElement, busy: boolean): void {
  button.classList.toggle('busy', busy);
  if (busy) button.setAttribute('aria-busy', 'true');
  else button.removeAttribute('aria-busy');
}

/**
 * The refusals that are about fields without naming them (the service answers the same for every
 * cause): the fields they mark, linked to the form's alert. A refused sign-in marks both the
 * identifier and the password, whatever the cause, so that a wrong password and an unknown
 * address still look the same.
 */
const REFUSED_FIELDS: Record<string, readonly string[]> = {
  'identity.sign_in_refused': ['identifier', 'password'],
  'identity.password_change_refused': ['currentPassword'],
  ...Object.fromEntries(
    [
      'ui.sign_up_confirmation_refused',
      'ui.sign_in_code_refused',
      'ui.code_expired',
      'identity.second_factor_refused',
      'identity.verification_refused',
      'identity.password_recovery_refused',
      'identity.step_up_confirmation_refused',
      'identity.second_factor_confirmation_refused',
      'identity.sign_in_method_confirmation_refused',
    ].map((code) => [code, ['code', 'recoveryCode']]),
  ),
};

/** A page's own refusal of the fields named (a spent recovery code): `message` in the form's alert. */
export class FieldRefusal extends Error {
  constructor(
    message: string,
    readonly fields: readonly string[],
  ) {
    super(message);
  }
}

export interface FormOptions {
  fields: Field[];
  submit: string;
  /** Extra content after the fields, before the buttons (choices, notes). */
  extra?: Node[];
  /** Buttons beside the submit button. */
  buttons?: HTMLElement[];
  onSubmit(): Promise<void>;
}

export interface Form {
  el: HTMLFormElement;
  alert: HTMLElement;
  /**
   * Reports a refusal. A wait the service asked for (429 with Retry-After) holds back `hold` (the
   * button whose action was refused) with a countdown; the form's own submissions hold the submit
   * button. Nothing is held when `hold` is not given: a refused resend must not stop the Confirm.
   */
  fail(error: unknown, hold?: HTMLButtonElement): void;
}

/**
 * A form that submits once at a time, names the refusal in an alert and on the fields it is about
 * (validation errors by field name), and moves focus to the first thing to fix.
 */
export function makeForm(o: FormOptions): Form {
  const alert = h('div', { class: 'alert', role: 'alert', tabindex: '-1', hidden: true });
  const submit = h('button', { type: 'submit' }, o.submit);
  const el = h(
    'form',
    { novalidate: true },
    alert,
    o.fields.map((f) => f.wrap),
    o.extra ?? [],
    h('div', { class: 'actions' }, submit, o.buttons ?? []),
  );
  const fail = (error: unknown, hold?: HTMLButtonElement) => {
    if (error instanceof Cancelled) return;
    const p = asProblem(error);
    let firstInvalid: HTMLInputElement | null = null;
    for (const e of p.errors ?? []) {
      const f = o.fields.find((x) => x.input.name === e.field);
      if (f) {
        f.setError(fieldMessage(e));
        firstInvalid ??= f.input;
      }
    }
    alert.textContent = messageFor(p);
    alert.hidden = false;
    // A refusal about fields it does not name: those fields marked, the alert their message.
    if (!firstInvalid) {
      const names = error instanceof FieldRefusal ? error.fields : (REFUSED_FIELDS[p.code ?? ''] ?? []);
      for (const f of o.fields) {
        if (!names.includes(f.input.name) || f.input.disabled || f.wrap.closest('[hidden]')) continue;
        markInvalid(f.input, alert);
      }
    }
    if (hold) holdIfWaiting(p, hold, alert);
    (firstInvalid ?? alert).focus();
  };
  el.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (submit.disabled) return;
    for (const f of o.fields) f.setError(null);
    alert.hidden = true;
    // The page names what is missing on the field itself, and nothing is sent.
    let firstInvalid: HTMLInputElement | null = null;
    for (const f of o.fields) {
      if (!f.wrap.isConnected || f.wrap.closest('[hidden]')) continue;
      const message = checkField(f.input);
      if (!message) continue;
      f.setError(message);
      firstInvalid ??= f.input;
    }
    if (firstInvalid) {
      firstInvalid.focus();
      return;
    }
    submit.disabled = true;
    setBusy(submit, true);
    el.setAttribute('aria-busy', 'true');
    try {
      await o.onSubmit();
    } catch (error) {
      fail(error, submit);
    } finally {
      // A wait the service asked for keeps the button disabled until its countdown ends.
      if (!isHeld(submit)) submit.disabled = false;
      setBusy(submit, false);
      el.removeAttribute('aria-busy');
    }
  });
  return { el, alert, fail };
}

/** A button that runs one action at a time and reports a refusal in `alert`. */
export function actionButton(
  label: string,
  alert: HTMLElement,
  run: () => Promise<void>,
  cls = 'secondary',
  attrs: Record<string, string> = {},
): HTMLButtonElement {
  const button = h('button', { type: 'button', class: cls, ...attrs }, label);
  button.addEventListener('click', async () => {
    if (button.disabled) return;
    button.disabled = true;
    setBusy(button, true);
    alert.hidden = true;
    try {
      await run();
    } catch (error) {
      if (error instanceof Cancelled) return;
      const p = asProblem(error);
      alert.textContent = messageFor(p);
      alert.hidden = false;
      holdIfWaiting(p, button, alert);
      alert.focus();
    } finally {
      setBusy(button, false);
      if (button.isConnected && !isHeld(button)) button.disabled = false;
    }
  });
  return button;
}

/** An alert region for a card's buttons. */
export const alertBox = () => h('div', { class: 'alert', role: 'alert', tabindex: '-1', hidden: true });
