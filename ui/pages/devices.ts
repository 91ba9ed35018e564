import { api, asProblem, type DeviceSession } from '../api.js';
import { announce, formatDate, h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import { deviceIcon } from '../icons.js';
import { t } from '../messages/activity.js';
import { go, type PageContent } from '../router.js';
import { ACTIVE_NOW_MS, ago } from '../when.js';
import { methodName } from './home.js';
import { confirmButton } from './security/common.js';

function describe(s: DeviceSession): string {
  const d = s.device;
  return d?.description || [d?.browser, d?.os].filter(Boolean).join(' on ') || t('devices.unknown');
}

/** In use now: this device, or one renewed within an access token's life. */
const activeNow = (s: DeviceSession, now: number): boolean =>
  s.current || now - Date.parse(s.lastActiveAt) < ACTIVE_NOW_MS;

/** "Active now", else "Last active 3 hours ago". */
function activity(s: DeviceSession, now: number): string {
  if (activeNow(s, now)) return t('devices.activeNow');
  return t('devices.lastActive', { when: ago(s.lastActiveAt, now) });
}

/**
 * The signed-in devices, as Google's account page shows them: an icon for the kind of device, its
 * browser and system, "This device" first, "Active now" or when it was last used, where and how it
 * signed in. Signing one out says so, and focus moves to the next device (or the list's text).
 */
export async function devicesPage(): Promise<PageContent> {
  const alert = alertBox();
  const done = h('p', { class: 'success', role: 'status', hidden: true });
  const intro = h('p', { tabindex: '-1' }, t('devices.intro'));
  const list = h('ul', { class: 'items devices', id: 'sessions' });
  let sessions: DeviceSession[];
  try {
    sessions = await api.sessions();
  } catch (error) {
    if (asProblem(error).status !== 404) throw error;
    return {
      title: t('devices.title'),
      body: [h('p', { class: 'info' }, t('devices.unsupported'))],
    };
  }
  const now = Date.now();
  // This device first, then the others newest first (as listed).
  sessions.sort((a, b) => Number(b.current) - Number(a.current));
  for (const s of sessions) {
    const name = describe(s);
    const end = s.current
      ? actionButton(t('devices.signOutHere'), alert, async () => {
          await api.signOut();
          go('/sign-in');
        })
      : actionButton(
          t('devices.signOut'),
          alert,
          async () => {
            await api.revokeSession(s.id);
            const next = (item.nextElementSibling ?? item.previousElementSibling) as HTMLElement | null;
            item.remove();
            done.textContent = t('devices.signedOut', { name });
            done.hidden = false;
            announce(done.textContent);
            const target = next?.querySelector('button') ?? intro;
            target.focus();
          },
          'danger',
          { 'aria-label': t('devices.signOutLabel', { name, activity: activity(s, now) }) },
        );
    const item = h(
      'li',
      null,
      deviceIcon(s.device?.type),
      h(
        'span',
        { class: 'item-main' },
        h('span', { class: 'item-title' }, name),
        s.current ? h('span', { class: 'badge' }, t('devices.thisDevice')) : null,
        h('span', { class: activeNow(s, now) ? 'item-meta active' : 'item-meta' }, activity(s, now)),
        h(
          'span',
          { class: 'item-meta' },
          [
            t('devices.signedIn', {
              when: formatDate(s.createdAt),
              method: methodName(s.method).toLowerCase(),
            }),
            s.ipAddress,
          ]
            .filter(Boolean)
            .join(' · '),
        ),
      ),
      end,
    );
    list.append(item);
  }
  const everywhere = actionButton(
    t('devices.everywhere'),
    alert,
    async () => {
      await api.signOutEverywhere();
      go('/sign-in');
    },
    'danger',
  );
  // Every other device at once, confirmed first; this one stays signed in (POST /sign-outs/others).
  const othersAlert = alertBox();
  const othersDone = h('p', { class: 'success', role: 'status', hidden: true });
  const othersActions = h('div', { class: 'actions' });
  const othersCard = h(
    'section',
    { class: 'card', 'aria-labelledby': 'others-title', id: 'sign-out-others' },
    h('h2', { id: 'others-title', tabindex: '-1' }, t('devices.others')),
    h('p', null, t('devices.othersHint')),
    othersAlert,
    othersDone,
    othersActions,
  );
  if (sessions.some((s) => !s.current)) {
    othersActions.append(
      confirmButton({
        label: t('devices.others'),
        question: t('devices.othersQuestion'),
        detail: t('devices.othersDetail'),
        confirm: t('devices.othersConfirm'),
        alert: othersAlert,
        async run() {
          await api.signOutOthers();
          for (const item of [...list.children]) {
            if (!item.querySelector('.badge')) item.remove();
          }
          othersActions.replaceChildren();
          othersDone.textContent = t('devices.othersDone');
          othersDone.hidden = false;
          announce(othersDone.textContent);
          (othersCard.querySelector('h2') as HTMLElement).focus();
        },
      }),
    );
  } else {
    othersActions.append(h('p', { class: 'hint' }, t('devices.othersNone')));
  }
  return {
    title: t('devices.title'),
    body: [
      h('section', { class: 'card', 'aria-label': t('devices.listLabel') }, intro, done, alert, list),
      othersCard,
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'everywhere-title' },
        h('h2', { id: 'everywhere-title' }, t('devices.everywhere')),
        h('p', null, t('devices.everywhereHint')),
        h('div', { class: 'actions' }, everywhere),
      ),
    ],
  };
}
