import type { SignInHistoryEntry } from '../../packages/client/src/index.js';
import { api } from '../api.js';
import { h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import { deviceIcon } from '../icons.js';
import { t } from '../messages/activity.js';
import type { PageContent } from '../router.js';
import { dayHeading, dayKey, timeOfDay } from '../when.js';
import { methodName } from './home.js';

const METHODS = ['password', 'second_factor', 'recovery_code', 'passkey', 'provider', 'code'] as const;
type Method = (typeof METHODS)[number];

/** What happened, in plain words: "Signed in with a passkey", "Wrong password". */
export function outcomeText(a: Pick<SignInHistoryEntry, 'method' | 'outcome'>): string {
  const known = (METHODS as readonly string[]).includes(a.method) ? (a.method as Method) : null;
  if (a.outcome === 'succeeded') {
    return known ? t(`history.ok.${known}`) : t('history.ok.other', { method: methodName(a.method) });
  }
  return known ? t(`history.no.${known}`) : t('history.no.other', { method: methodName(a.method) });
}

/**
 * The sign-ins, newest first, grouped by day as Google's account page shows them: the time, what
 * happened in plain words, the device with its icon, where from. "Show older sign-ins" carries on
 * in the same day's group when the next page starts in it.
 */
export async function historyPage(): Promise<PageContent> {
  const list = h('div', { id: 'history' });
  const alert = alertBox();
  const more = h('div', { class: 'actions' });
  let day: { key: string; items: HTMLUListElement } | null = null;
  const add = (a: SignInHistoryEntry) => {
    const key = dayKey(a.occurredAt);
    if (!day || day.key !== key) {
      const id = `day-${key}`;
      const items = h('ul', { class: 'items', 'aria-labelledby': id });
      list.append(h('h2', { id, class: 'day' }, dayHeading(a.occurredAt)), items);
      day = { key, items };
    }
    day.items.append(
      h(
        'li',
        null,
        deviceIcon(a.device.type),
        h(
          'span',
          { class: 'item-main' },
          h('span', { class: 'item-title' }, outcomeText(a)),
          a.outcome === 'refused' ? h('span', { class: 'badge failed' }, t('history.refused')) : null,
          h('span', { class: 'item-meta' }, [
            h('time', { datetime: a.occurredAt }, timeOfDay(a.occurredAt)),
            ` · ${[a.device.description, a.ipAddress].filter(Boolean).join(' · ')}`,
            a.noticeSentAt ? ` · ${t('history.noticeSent')}` : '',
          ]),
        ),
      ),
    );
  };
  const load = async (after?: string) => {
    const page = await api.history(after);
    for (const a of page.items) add(a);
    more.replaceChildren();
    if (page.next) {
      const next = page.next;
      more.append(actionButton(t('history.older'), alert, () => load(next)));
    }
  };
  await load();
  if (!list.firstChild) list.append(h('p', null, t('history.none')));
  return {
    title: t('history.title'),
    body: [h('section', { class: 'card', 'aria-label': t('history.listLabel') }, alert, list, more)],
  };
}
