import { append, h } from '../dom.js';
import { tp } from '../messages/console-operators.js';

/**
 * A secret shown once (an organization's new SCIM token): the webhook secret's dialog (its title,
 * "shown this once", the value in a code block) with a Copy button and its outcome read out. The
 * page keeps the value nowhere: once the dialog closes it is gone from the document.
 */
export function showOnce(o: {
  title: string;
  once: string;
  value: string;
  /** The code block's id (what the tests and the screenshots find it by). */
  id: string;
  after?: () => void;
}): void {
  const dialog = h('dialog', {
    class: 'confirm-dialog',
    'aria-labelledby': 'once-title',
    'aria-describedby': 'once-text',
  });
  const code = h('code', { class: 'secret', id: o.id }, o.value);
  const status = h('p', { class: 'hint', role: 'status' });
  const copy = h(
    'button',
    {
      type: 'button',
      class: 'button secondary',
      'aria-label': tp('copyOf'),
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(o.value);
          status.textContent = tp('copied');
        } catch {
          // Refused (no permission, an insecure origin): the value is selected for a manual copy.
          getSelection()?.selectAllChildren(code);
          status.textContent = tp('copyRefused');
        }
      },
    },
    tp('copy'),
  );
  const back = document.activeElement as HTMLElement | null;
  append(dialog, [
    h('h2', { id: 'once-title' }, o.title),
    h('p', { id: 'once-text' }, o.once),
    h('p', null, code),
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
