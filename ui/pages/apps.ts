import { api, type ConnectedApp } from '../api.js';
import { formatDate, h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import type { PageContent } from '../router.js';
import { SCOPE_WORDS } from './interaction.js';

/**
 * #/apps: the applications that signed in with this account (docs/oidc.md): what each may see,
 * since when, and a way to take the access back (its grants end, and it is told at once).
 */
export async function appsPage(): Promise<PageContent> {
  const alert = alertBox();
  const apps: ConnectedApp[] = await api.connectedApps();
  const list = h('ul', { class: 'items', id: 'apps' });
  for (const app of apps) {
    const item = h(
      'li',
      null,
      h(
        'span',
        { class: 'item-main' },
        app.name,
        h(
          'span',
          { class: 'item-meta' },
          [app.scopes.map((s) => SCOPE_WORDS[s] ?? s).join(' · '), `Connected ${formatDate(app.since)}`].join(
            ' — ',
          ),
        ),
      ),
      actionButton(
        'Remove access',
        alert,
        async () => {
          await api.revokeApp(app.clientId);
          item.remove();
          if (list.childElementCount === 0) list.replaceWith(empty());
        },
        'danger',
        { 'aria-label': `Remove access for ${app.name}` },
      ),
    );
    list.append(item);
  }
  const empty = () => h('p', { class: 'info', id: 'no-apps' }, 'No app has access to your account.');
  return {
    title: 'Connected apps',
    body: [
      h(
        'section',
        { class: 'card', 'aria-label': 'Apps with access to your account' },
        h(
          'p',
          null,
          'Apps you signed in to with this account. Removing access signs you out of the app and it must ask again.',
        ),
        alert,
        apps.length > 0 ? list : empty(),
      ),
    ],
  };
}
