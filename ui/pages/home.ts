import { api } from '../api.js';
import { formatDate, h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import type { PageContent } from '../router.js';

const METHOD_NAMES: Record<string, string> = {
  password: 'Password',
  email: 'Email address',
  phone: 'Phone number',
  provider: 'Linked provider',
  passkey: 'Passkey',
  recovery_code: 'Recovery code',
  second_factor: 'Authenticator app',
  totp: 'Authenticator app',
};
export const methodName = (kind: string) => METHOD_NAMES[kind] ?? kind;

export async function homePage(): Promise<PageContent> {
  const context = await api.context();
  return {
    title: 'Your account',
    body: [
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'ids-title' },
        h('h2', { id: 'ids-title' }, 'Your addresses'),
        h('p', { class: 'hint' }, 'Shown masked, as the service always answers them.'),
        h(
          'ul',
          { class: 'items' },
          context.identifiers.map((i) =>
            h(
              'li',
              null,
              h(
                'span',
                { class: 'item-main' },
                h('span', { class: 'identifier' }, i.value),
                h(
                  'span',
                  { class: 'item-meta' },
                  `${methodName(i.type)} · verified ${formatDate(i.verifiedAt)}`,
                ),
              ),
            ),
          ),
        ),
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'methods-title' },
        h('h2', { id: 'methods-title' }, 'How you sign in'),
        h(
          'ul',
          { class: 'items', id: 'methods' },
          context.methods.map((m) => h('li', null, methodName(m))),
        ),
        h('p', null, h('a', { href: '#/security' }, 'Manage password, authenticator, passkeys and methods')),
      ),
      exportSection(),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'more-title' },
        h('h2', { id: 'more-title' }, 'Activity'),
        h(
          'ul',
          null,
          h('li', null, h('a', { href: '#/devices' }, 'Devices signed in')),
          h('li', null, h('a', { href: '#/history' }, 'Sign-in history')),
        ),
      ),
    ],
  };
}

/** Everything the service holds about the person, as a JSON file made in the page. */
function exportSection(): HTMLElement {
  const alert = alertBox();
  const status = h('p', { role: 'status' });
  const button = actionButton('Download your data', alert, async () => {
    const data = await api.exportAccount();
    const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: 'application/json' }));
    const a = h('a', { href: url, download: 'account-export.json', hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    status.textContent = 'Downloaded account-export.json.';
  });
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'export-title' },
    h('h2', { id: 'export-title' }, 'Your data'),
    h('p', null, 'A copy of everything the service holds about you, as JSON (addresses unmasked).'),
    alert,
    status,
    h('div', { class: 'actions' }, button),
  );
}
