import { api, asProblem } from '../../api.js';
import { h, uid } from '../../dom.js';
import { actionButton } from '../../forms.js';
import { t } from '../../messages/security.js';
import { displayNameOf, takeProviderReturn, takeStartedIntent } from '../../providers.js';
import { go, type PageContent } from '../../router.js';

/** A focused Security page: the "Back to Security" link first, then its cards. */
export function focusedPage(title: string, body: (Node | string)[]): PageContent {
  return {
    title,
    body: [h('p', { class: 'back-link' }, h('a', { href: '#/security' }, t('back'))), ...body],
  };
}

/** A card with its heading (id `${id}-title`), the heading focusable for step changes. */
export function card(id: string, title: string): { el: HTMLElement; heading: HTMLElement } {
  const heading = h('h2', { id: `${id}-title`, tabindex: '-1' }, title);
  return { el: h('section', { class: 'card', id, 'aria-labelledby': `${id}-title` }, heading), heading };
}

export interface ConfirmOptions {
  /** The button's text ("Remove") and its accessible name when it needs the item's name. */
  label: string;
  ariaLabel?: string;
  cls?: string;
  /** "Remove this passkey?" and what it means. */
  question: string;
  detail: string;
  /** The confirming button's text ("Remove"). */
  confirm: string;
  alert: HTMLElement;
  run: () => Promise<void>;
}

/**
 * A destructive action that confirms first: the button opens an inline question with [confirm]
 * [Cancel] after it (in its list item, else its parent); the focus goes to the question. Cancel
 * closes it and gives the focus back to the button; the confirming button runs the action (with
 * its step-up, as any protected action).
 */
export function confirmButton(o: ConfirmOptions): HTMLButtonElement {
  const open = h(
    'button',
    { type: 'button', class: o.cls ?? 'danger', 'aria-expanded': 'false', 'aria-label': o.ariaLabel },
    o.label,
  );
  let box: HTMLElement | null = null;
  const close = () => {
    box?.remove();
    box = null;
    open.setAttribute('aria-expanded', 'false');
  };
  open.addEventListener('click', () => {
    if (box) {
      box.focus();
      return;
    }
    const questionId = uid('confirm');
    const detailId = `${questionId}-detail`;
    const yes = actionButton(o.confirm, o.alert, o.run, 'danger');
    const no = h('button', { type: 'button', class: 'secondary' }, t('confirm.cancel'));
    no.addEventListener('click', () => {
      close();
      open.focus();
    });
    box = h(
      'div',
      {
        class: 'confirm',
        role: 'group',
        tabindex: '-1',
        'aria-labelledby': questionId,
        'aria-describedby': detailId,
      },
      h('p', { class: 'confirm-question', id: questionId }, o.question),
      h('p', { class: 'hint', id: detailId }, o.detail),
      h('div', { class: 'actions' }, yes, no),
    );
    box.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') no.click();
    });
    const place = open.closest('li') ?? open.parentElement;
    place?.append(box);
    open.setAttribute('aria-expanded', 'true');
    box.focus();
  });
  return open;
}

export interface Said {
  text: string;
  ok: boolean;
}

const capital = (s: string) => `${s.charAt(0).toUpperCase()}${s.slice(1)}`;

export interface Returned {
  said?: Said;
  link?: { provider: string; result: string | null; error: string | null };
}

/** The focused page open last in this tab: where a provider flow's answer to Security is taken. */
const PAGE_KEY = 'identity-service.security-page';
let forwarded: Returned | null = null;

/**
 * What a provider flow brought back. The service sends every flow started from Security back to
 * `#/security` (its allowed return addresses); the overview takes the answer and forwards it to
 * the focused page it belongs to: a link flow's to the linked accounts, a step-up's (the step-up
 * box's "Use <provider>") to the page open last, where the handoff code became the elevation.
 */
export async function takeReturn(route: string): Promise<Returned> {
  if (route !== '/security') {
    sessionStorage.setItem(PAGE_KEY, JSON.stringify(route));
    const r = forwarded ?? {};
    forwarded = null;
    return r;
  }
  const back = takeProviderReturn(route);
  if (!back) return {};
  const providers = await api.providers();
  const name = displayNameOf(providers, back.provider);
  const Name = capital(name);
  let r: Returned;
  if (back.handoff) {
    takeStartedIntent();
    try {
      await api.stepUpWithProviderHandoff(back.handoff);
      r = { said: { text: t('linked.confirmedWith', { Name }), ok: true } };
    } catch (error) {
      r = {
        said: {
          text:
            asProblem(error).code === 'identity.step_up_unavailable'
              ? t('linked.notEnough', { Name })
              : t('linked.notConfirmed', { Name }),
          ok: false,
        },
      };
    }
  } else if (takeStartedIntent() === 'step_up') {
    r = { said: { text: t('linked.notConfirmed', { Name }), ok: false } };
  } else {
    r = { link: { provider: name, result: back.result, error: back.error } };
  }
  forwarded = r;
  let last: unknown = null;
  try {
    last = JSON.parse(sessionStorage.getItem(PAGE_KEY) ?? 'null');
  } catch {
    // Not ours: the linked accounts page.
  }
  go(!r.link && typeof last === 'string' && last.startsWith('/security/') ? last : '/security/linked');
  return r;
}

/** What came back from a provider, said at the top of the page (focused once it is shown). */
export function saidBox(said: Said | undefined): HTMLElement | null {
  if (!said) return null;
  const el = said.ok
    ? h('p', { class: 'notice', role: 'status', tabindex: '-1' }, said.text)
    : h('p', { class: 'alert', role: 'alert', tabindex: '-1' }, said.text);
  setTimeout(() => el.isConnected && el.focus(), 0);
  return el;
}

/**
 * A visible success line at the top of a card's redrawn content, which takes the focus: the
 * button that was pressed is gone with the old list, so the focus stays in the card.
 */
export function saySuccess(body: HTMLElement, text: string): void {
  const note = h('p', { class: 'notice', role: 'status', tabindex: '-1' }, text);
  body.prepend(note);
  note.focus();
}
