import { locale } from './i18n.js';
import { eyeIcon } from './icons.js';
import { t } from './messages/forms.js';

/*
 * DOM building without innerHTML: every text goes in as a text node, so nothing the service or a
 * person typed can become markup. No inline handlers or style attributes (the CSP forbids them).
 */

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | boolean | number | undefined | null | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value as EventListener);
    } else if (value === true) {
      el.setAttribute(name, '');
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

let ids = 0;
/** A document-unique id for label/description pairs. */
export const uid = (prefix: string) => `${prefix}-${++ids}`;

export interface FieldOptions {
  label: string;
  name: string;
  type?: 'text' | 'email' | 'password' | 'tel';
  autocomplete?: string;
  hint?: string;
  required?: boolean;
  inputmode?: string;
  minlength?: number;
  maxlength?: number;
  value?: string;
}

export interface Field {
  wrap: HTMLDivElement;
  input: HTMLInputElement;
  setError(message: string | null): void;
}

/** A labelled input with its hint and its error, both tied to it by aria-describedby. */
export function field(o: FieldOptions): Field {
  const id = uid(o.name);
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const input = h('input', {
    id,
    name: o.name,
    type: o.type ?? 'text',
    autocomplete: o.autocomplete ?? 'off',
    required: o.required ?? true,
    inputmode: o.inputmode,
    minlength: o.minlength,
    maxlength: o.maxlength,
    spellcheck: o.type === 'email' || o.type === 'password' ? 'false' : undefined,
    'aria-describedby': o.hint ? hintId : undefined,
  });
  if (o.value) input.value = o.value;
  const error = h('p', { class: 'field-error', id: errorId, hidden: true });
  const wrap = h(
    'div',
    { class: 'field' },
    h('label', { for: id }, o.label),
    o.hint ? h('p', { class: 'hint', id: hintId }, o.hint) : null,
    input,
    error,
  );
  const hideError = () => {
    error.textContent = '';
    error.hidden = true;
  };
  return {
    wrap,
    input,
    setError(message) {
      error.textContent = message ?? '';
      error.hidden = !message;
      markInvalid(input, message ? error : null, hideError);
    },
  };
}

/** What each input's mark is: the message's id, and what to do when the person edits the input. */
const marks = new WeakMap<HTMLInputElement, { id: string; cleared?: () => void }>();

/**
 * The one way an input is marked invalid, for a field's own message and for a form's alert about
 * it alike (a refused code, a refused password): aria-invalid="true", and `message` (given an id
 * when it has none) added to the input's aria-describedby, beside its hint and strength meter.
 * `message` null takes the mark away. The mark goes as soon as the person edits the input
 * (`cleared` then runs: a field hides its own message).
 */
export function markInvalid(
  input: HTMLInputElement,
  message: HTMLElement | null,
  cleared?: () => void,
): void {
  const previous = marks.get(input);
  const ids = (input.getAttribute('aria-describedby') ?? '')
    .split(' ')
    .filter((id) => id && id !== previous?.id);
  marks.delete(input);
  if (message) {
    if (!message.id) message.id = uid('invalid');
    ids.push(message.id);
    marks.set(input, { id: message.id, cleared });
    input.setAttribute('aria-invalid', 'true');
    if (!input.dataset.invalidWatch) {
      input.dataset.invalidWatch = '1';
      // Edits by the person only ('input' does not fire for a value set by a script).
      input.addEventListener('input', () => {
        const mark = marks.get(input);
        if (!mark) return;
        markInvalid(input, null);
        mark.cleared?.();
      });
    }
  } else input.removeAttribute('aria-invalid');
  if (ids.length) input.setAttribute('aria-describedby', ids.join(' '));
  else input.removeAttribute('aria-describedby');
}

/** Text that screen readers announce politely (route changes, copies, quiet successes). */
export function announce(message: string): void {
  const el = document.getElementById('announcer');
  if (!el) return;
  el.textContent = '';
  // A fresh text node after a tick is announced even when the message repeats.
  setTimeout(() => {
    el.textContent = message;
  }, 50);
}

/** A date and time in the pages' language (not the browser's: the words around it are in that one). */
export const formatDate = (iso: string | null | undefined): string =>
  iso ? new Date(iso).toLocaleString(locale(), { dateStyle: 'medium', timeStyle: 'short' }) : '—';

/**
 * The show-password toggle: an eye inside the password input, at its right end (the input keeps
 * its whole width in every language). Its name ("Show password") stays the same and aria-pressed
 * says whether the password shows (a toggle's name must not change with its state); the eye is
 * struck through while it shows. The input's type switches and the focus goes back to the input,
 * the caret where it was. Every password field has it (ui/new-password.ts, the sign-in's).
 */
export function passwordToggle(input: HTMLInputElement): HTMLButtonElement {
  const button = h(
    'button',
    {
      type: 'button',
      class: 'password-toggle',
      'aria-pressed': 'false',
      'aria-controls': input.id,
      'aria-label': t('showPassword'),
      title: t('showPassword'),
    },
    eyeIcon(false),
  );
  // A press keeps the focus in the field (no blur, no caret lost).
  button.addEventListener('mousedown', (event) => event.preventDefault());
  button.addEventListener('click', () => {
    const show = input.type === 'password';
    const start = input.selectionStart;
    const end = input.selectionEnd;
    input.type = show ? 'text' : 'password';
    button.setAttribute('aria-pressed', String(show));
    button.title = show ? t('hidePassword') : t('showPassword');
    button.replaceChildren(eyeIcon(show));
    input.focus();
    if (start !== null && end !== null) input.setSelectionRange(start, end);
  });
  const row = h('div', { class: 'password-row' });
  input.replaceWith(row);
  row.append(input, button);
  return button;
}
