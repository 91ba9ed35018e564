import { api, asProblem, type DeviceSession } from '../api.js';
import { formatDate, h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import { go, type PageContent } from '../router.js';

function describe(s: DeviceSession): string {
  const d = s.device;
  return d?.description || [d?.browser, d?.os].filter(Boolean).join(' on ') || 'Unknown device';
}

export async function devicesPage(): Promise<PageContent> {
  const alert = alertBox();
  const list = h('ul', { class: 'items', id: 'sessions' });
  let sessions: DeviceSession[];
  try {
    sessions = await api.sessions();
  } catch (error) {
    if (asProblem(error).status !== 404) throw error;
    return {
      title: 'Devices',
      body: [h('p', { class: 'info' }, 'This version of the service does not list sessions yet.')],
    };
  }
  // This device first, then the others newest first (as listed).
  sessions.sort((a, b) => Number(b.current) - Number(a.current));
  for (const s of sessions) {
    const end = s.current
      ? actionButton('Sign out here', alert, async () => {
          await api.signOut();
          go('/sign-in');
        })
      : actionButton(
          'Sign out this device',
          alert,
          async () => {
            await api.revokeSession(s.id);
            item.remove();
          },
          'danger',
          { 'aria-label': `Sign out this device: ${describe(s)}, last active ${formatDate(s.lastActiveAt)}` },
        );
    const item = h(
      'li',
      null,
      h(
        'span',
        { class: 'item-main' },
        describe(s),
        s.current ? h('span', { class: 'badge' }, 'This device') : null,
        h(
          'span',
          { class: 'item-meta' },
          [`Signed in ${formatDate(s.createdAt)}`, `last active ${formatDate(s.lastActiveAt)}`, s.ipAddress]
            .filter(Boolean)
            .join(' · '),
        ),
      ),
      end,
    );
    list.append(item);
  }
  const everywhere = actionButton(
    'Sign out everywhere',
    alert,
    async () => {
      await api.signOutEverywhere();
      go('/sign-in');
    },
    'danger',
  );
  return {
    title: 'Devices',
    body: [
      h(
        'section',
        { class: 'card', 'aria-label': 'Signed-in devices' },
        h('p', null, 'Where your account is signed in now. Sign out any device you do not recognise.'),
        alert,
        list,
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'everywhere-title' },
        h('h2', { id: 'everywhere-title' }, 'Sign out everywhere'),
        h('p', null, 'Ends every session, this one included.'),
        h('div', { class: 'actions' }, everywhere),
      ),
    ],
  };
}
