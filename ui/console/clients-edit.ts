import { announce, append, h } from '../dom.js';
import { t } from '../messages/console.js';
import { tx } from '../messages/console-orgs.js';
import { ConsoleProblem, InvalidField, type OidcClient } from './api.js';
import { clientAdmin } from './api-orgs.js';
import type { ConsoleKit } from './kit.js';

/*
 * Editing and deleting a registered OpenID client from the console (owner only; docs/admin.md,
 * "The console's pages"). The edit reads the client and its ETag when the dialog opens and sends
 * the change with If-Match, so a change made meanwhile is refused (412), not overwritten.
 */

/** The shell's helpers, lent at each drawing (kit.ts). */
let kit: ConsoleKit;
const problemText: ConsoleKit['problemText'] = (e) => kit.problemText(e);
const confirmThen: ConsoleKit['confirmThen'] = (...a) => kit.confirmThen(...a);
const route: ConsoleKit['route'] = () => kit.route();

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

function refusal(err: unknown): string {
  if (err instanceof InvalidField) return t('invalidClient', { field: err.field });
  if (err instanceof ConsoleProblem && err.status === 412) return tx('changedMeanwhile');
  return problemText(err);
}

/** The Edit and Delete buttons of a client the admin API registered. */
export function clientActs(c: OidcClient, shell: ConsoleKit): HTMLElement[] {
  kit = shell;
  return [
    h(
      'button',
      {
        type: 'button',
        class: 'button secondary',
        'aria-label': tx('editOf', { client: c.client_id }),
        onclick: () => void editClient(c.client_id),
      },
      tx('edit'),
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'button danger',
        'aria-label': tx('deleteOf', { client: c.client_id }),
        onclick: () =>
          confirmThen(
            tx('confirmDeleteClient', { client: c.client_id }),
            async () => {
              await clientAdmin.delete(c.client_id);
              announce(tx('clientDeleted', { client: c.client_id }));
              void route();
            },
            refusal,
            true,
          ),
      },
      tx('delete'),
    ),
  ];
}

async function editClient(clientId: string): Promise<void> {
  const { client, etag } = await clientAdmin.read(clientId).catch((err) => {
    announce(problemText(err));
    return Promise.reject(err);
  });
  const dialog = h('dialog', { class: 'confirm-dialog', 'aria-labelledby': 'edit-title' });
  const error = h('p', { class: 'field-error', role: 'alert' });
  const field = (id: string, label: string, control: HTMLElement) =>
    h('div', { class: 'field' }, h('label', { for: id }, label), control);
  const name = h('input', {
    id: 'edit-name',
    name: 'client_name',
    type: 'text',
    required: true,
    autocomplete: 'off',
    value: client.client_name ?? '',
  }) as HTMLInputElement;
  const redirects = h('textarea', { id: 'edit-redirects', name: 'redirect_uris', rows: 3, required: true });
  (redirects as HTMLTextAreaElement).value = client.redirect_uris.join('\n');
  const logouts = h('textarea', { id: 'edit-logouts', name: 'post_logout_redirect_uris', rows: 2 });
  (logouts as HTMLTextAreaElement).value = (client.post_logout_redirect_uris ?? []).join('\n');
  const form = h(
    'form',
    {
      method: 'dialog',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = '';
        try {
          const logoutUris = lines((logouts as HTMLTextAreaElement).value);
          const logoutsChanged =
            logoutUris.join('\n') !== (client.post_logout_redirect_uris ?? []).join('\n');
          await clientAdmin.update(clientId, etag, {
            client_name: name.value.trim(),
            redirect_uris: lines((redirects as HTMLTextAreaElement).value),
            ...(logoutsChanged ? { post_logout_redirect_uris: logoutUris } : {}),
          });
          dialog.close();
          announce(tx('clientSaved', { client: clientId }));
          void route();
        } catch (err) {
          error.textContent = refusal(err);
        }
      },
    },
    h('h2', { id: 'edit-title' }, tx('editTitle', { client: clientId })),
    field('edit-name', t('clientNameLabel'), name),
    field('edit-redirects', tx('redirectsLabel'), redirects),
    field('edit-logouts', tx('logoutRedirectsLabel'), logouts),
    error,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'button' }, tx('save')),
      h('button', { type: 'button', class: 'button secondary', onclick: () => dialog.close() }, t('cancel')),
    ),
  );
  dialog.addEventListener('close', () => dialog.remove());
  append(dialog, [form]);
  document.body.appendChild(dialog);
  dialog.showModal();
  name.focus();
}
