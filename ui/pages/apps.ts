import { api, type ConnectedApp } from '../api.js';
import { h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import { locale } from '../i18n.js';
import { t } from '../messages/apps.js';
import { scopeWords } from '../messages/interaction.js';
import type { PageContent } from '../router.js';

const when = (iso: string) =>
  new Date(iso).toLocaleString(locale(), { dateStyle: 'medium', timeStyle: 'short' });

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
          [app.scopes.map(scopeWords).join(' · '), t('connected', { when: when(app.since) })].join(' — '),
        ),
      ),
      actionButton(
        t('remove'),
        alert,
        async () => {
          await api.revokeApp(app.clientId);
          item.remove();
          if (list.childElementCount === 0) list.replaceWith(empty());
        },
        'danger',
        { 'aria-label': t('removeLabel', { name: app.name }) },
      ),
    );
    list.append(item);
  }
  const empty = () => h('p', { class: 'info', id: 'no-apps' }, t('none'));
  return {
    title: t('title'),
    body: [
      h(
        'section',
        { class: 'card', 'aria-label': t('label') },
        h('p', null, t('intro')),
        alert,
        apps.length > 0 ? list : empty(),
      ),
    ],
  };
}
