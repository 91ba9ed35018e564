import { append, formatDate, h } from '../dom.js';
import { t } from '../messages/console-ops.js';
import { call } from './api.js';
import type { ConsoleKit } from './kit.js';

/*
 * The health page (docs/admin.md, "Health"): GET /admin/v1/health drawn as three sections, each
 * marked ok or degraded in words as well as colour. Owner and support read it; an auditor's role
 * does not (the API refuses them, and the navigation has no link).
 */

type Status = 'ok' | 'degraded';
type Check = { status: 'up' | 'down' | 'not_configured'; latencyMs: number | null };

export interface Health {
  status: Status;
  checkedAt: string;
  startedAt: string;
  uptimeSeconds: number;
  readiness: { status: Status; database: Check; redis: Check };
  keys: {
    status: Status;
    rotateAfterDays: number;
    signing: {
      purpose: 'id_token' | 'access_token';
      kid: string;
      alg: string;
      createdAt: string;
      ageDays: number;
      rotateBy: string;
      rotationDue: boolean;
    }[];
  } | null;
  queues: {
    status: Status;
    lagLimitSeconds: number;
    webhookDeliveries: {
      pending: number;
      due: number;
      inFlight: number;
      dead: number;
      oldestDueAt: string | null;
      failingEndpoints: number;
      disabledEndpoints: number;
    };
    securityNotices: { pending: number; oldestAt: string | null };
  } | null;
}

const badge = (status: Status) =>
  h('span', { class: `badge health-${status}` }, status === 'ok' ? t('ok') : t('degraded'));

function uptime(seconds: number): string {
  const days = Math.floor(seconds / 86_400);
  const hours = Math.floor((seconds % 86_400) / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  if (days > 0) return `${t('uptimeDays', { count: days })} ${t('uptimeHours', { count: hours })}`;
  if (hours > 0) return `${t('uptimeHours', { count: hours })} ${t('uptimeMinutes', { count: minutes })}`;
  return t('uptimeMinutes', { count: minutes });
}

function section(id: string, title: string, status: Status, ...children: (Node | string | null)[]) {
  return h(
    'section',
    { class: `health-section health-${status}`, 'aria-labelledby': id },
    h('h2', { id }, title, ' ', badge(status)),
    ...children,
  );
}

export async function healthPage(kit: ConsoleKit): Promise<void> {
  const { data } = await call<{ data: Health }>('GET', '/health');
  const check = (name: string, c: Check) => [
    name,
    h('span', { class: `badge check-${c.status}` }, t(c.status)),
    c.latencyMs === null ? t('none') : t('ms', { value: c.latencyMs }),
  ];
  const parts: (Node | string | null)[] = [
    h(
      'p',
      { class: `health-summary health-${data.status}`, role: 'status', id: 'health-summary' },
      badge(data.status),
      ' ',
      data.status === 'ok' ? t('healthOk') : t('healthDegraded'),
    ),
    h(
      'p',
      { class: 'hint' },
      t('checkedAt', { when: formatDate(data.checkedAt), uptime: uptime(data.uptimeSeconds) }),
      ' ',
    ),
    h(
      'p',
      null,
      h(
        'button',
        { type: 'button', class: 'button secondary', id: 'health-refresh', onclick: () => void redraw(kit) },
        t('refresh'),
      ),
    ),
    section(
      'readiness-title',
      t('readiness'),
      data.readiness.status,
      kit.table(
        t('readiness'),
        [t('colCheck'), t('colState'), t('colLatency')],
        [check(t('database'), data.readiness.database), check(t('redis'), data.readiness.redis)],
      ),
    ),
  ];
  if (!data.keys || !data.queues) {
    parts.push(kit.alertBox(t('noDatabase')));
  } else {
    const q = data.queues;
    const w = q.webhookDeliveries;
    parts.push(
      section(
        'keys-title',
        t('keys'),
        data.keys.status,
        h('p', { class: 'hint' }, t('keysHint', { days: data.keys.rotateAfterDays })),
        kit.table(
          t('keys'),
          [t('colPurpose'), t('colAlg'), t('colKid'), t('colAge'), t('colRotateBy'), t('colState')],
          data.keys.signing.map((k) => [
            t(`purpose_${k.purpose}`),
            k.alg,
            h('code', null, k.kid),
            t('ageDays', { count: k.ageDays }),
            formatDate(k.rotateBy),
            k.rotationDue ? h('span', { class: 'badge health-degraded' }, t('rotationDue')) : badge('ok'),
          ]),
        ),
      ),
      section(
        'queues-title',
        t('queues'),
        q.status,
        h('p', { class: 'hint' }, t('queuesHint', { minutes: Math.round(q.lagLimitSeconds / 60) })),
        kit.table(
          t('queues'),
          [t('colQueue'), t('colPending'), t('colDue'), t('colInFlight'), t('colDead'), t('colOldest')],
          [
            [
              h('a', { href: '#/webhooks' }, t('queueWebhooks')),
              String(w.pending),
              String(w.due),
              String(w.inFlight),
              String(w.dead),
              w.oldestDueAt ? formatDate(w.oldestDueAt) : t('none'),
            ],
            [
              t('queueNotices'),
              String(q.securityNotices.pending),
              t('none'),
              t('none'),
              t('none'),
              q.securityNotices.oldestAt ? formatDate(q.securityNotices.oldestAt) : t('none'),
            ],
          ],
        ),
        h('p', null, t('endpointsLine', { failing: w.failingEndpoints, disabled: w.disabledEndpoints })),
      ),
    );
  }
  kit.draw(t('healthTitle'), ...parts);
}

async function redraw(kit: ConsoleKit): Promise<void> {
  try {
    await healthPage(kit);
    document.getElementById('health-refresh')?.focus();
  } catch {
    const main = document.getElementById('main');
    if (main) append(main, [kit.alertBox(t('failed'))]);
  }
}
