import { append, h } from '../dom.js';
import { tp } from '../messages/console-operators.js';

/** A value shown in the dialog: in a code block, with its own Copy button. */
interface Shown {
  value: string;
  /** The code block's id (what the tests and the screenshots find it by). */
  id: string;
  /** The Copy button's accessible name ("Copy the token" by default). */
  copyOf?: string;
  /** What is said when the browser refuses to copy. */
  copyRefused?: string;
}

/**
 * A secret shown once (an organization's new SCIM token, a webhook endpoint's signing secret): a
 * dialog (its title, "shown this once", the value in a code block) with a Copy button and its
 * outcome read out; `also`, a second value under its label (an Ed25519 public key) with its own
 * Copy. The page keeps the value nowhere: once the dialog closes it is gone from the document.
 */
export function showOnce(
  o: Shown & {
    title: string;
    once: string;
    also?: Shown & { label: string };
    after?: () => void;
  },
): void {
  const dialog = h('dialog', {
    class: 'confirm-dialog',
    'aria-labelledby': 'once-title',
    'aria-describedby': 'once-text',
  });
  const status = h('p', { class: 'hint', role: 'status' });
  const copyButton = (shown: Shown) => {
    const code = h('code', { class: 'secret', id: shown.id }, shown.value);
    const button = h(
      'button',
      {
        type: 'button',
        class: 'button secondary',
        'aria-label': shown.copyOf ?? tp('copyOf'),
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(shown.value);
            status.textContent = tp('copied');
          } catch {
            // Refused (no permission, an insecure origin): the value is selected for a manual copy.
            getSelection()?.selectAllChildren(code);
            status.textContent = shown.copyRefused ?? tp('copyRefused');
          }
        },
      },
      tp('copy'),
    );
    return { code, button };
  };
  const first = copyButton(o);
  const second = o.also ? copyButton(o.also) : null;
  const copy = first.button;
  const back = document.activeElement as HTMLElement | null;
  append(dialog, [
    h('h2', { id: 'once-title' }, o.title),
    h('p', { id: 'once-text' }, o.once),
    h('p', null, first.code),
    o.also && second
      ? h('div', null, h('p', null, o.also.label), h('p', null, second.code), h('p', null, second.button))
      : null,
    h(
      'form',
      { method: 'dialog', class: 'actions' },
      copy,
      h('button', { type: 'submit', class: 'button' }, tp('done')),
    ),
    status,
  ]);
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (back?.isConnected) back.focus();
    o.after?.();
  });
  document.body.appendChild(dialog);
  dialog.showModal();
  copy.focus();
}
