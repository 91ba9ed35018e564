import { api } from '../api.js';
import { formatDate, h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import type { PageContent } from '../router.js';
import { methodName } from './home.js';

export async function historyPage(): Promise<PageContent> {
  const list = h('ul', { class: 'items', id: 'history' });
  const alert = alertBox();
  const more = h('div', { class: 'actions' });
  const load = async (after?: string) => {
    const page = await api.history(after);
    for (const a of page.items) {
      list.append(
        h(
          'li',
          null,
          h(
            'span',
            { class: 'item-main' },
            formatDate(a.occurredAt),
            h('span', { class: a.outcome === 'succeeded' ? 'badge' : 'badge failed' }, a.outcome),
            h(
              'span',
              { class: 'item-meta' },
              [methodName(a.method), a.device.description, a.ipAddress].filter(Boolean).join(' · '),
            ),
          ),
        ),
      );
    }
    more.replaceChildren();
    if (page.next) {
      const next = page.next;
      more.append(actionButton('Show older sign-ins', alert, () => load(next)));
    }
  };
  await load();
  if (!list.firstChild) list.append(h('li', null, 'No sign-ins yet.'));
  return {
    title: 'Sign-in history',
    body: [h('section', { class: 'card', 'aria-label': 'Sign-ins, newest first' }, alert, list, more)],
  };
}
