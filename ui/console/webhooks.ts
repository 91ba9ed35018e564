import { announce, formatDate, h } from '../dom.js';
import { t } from '../messages/console-ops.js';
import { admin, ConsoleProblem, call, type Organization, type PageOf, q, type Role } from './api.js';
import type { ConsoleKit } from './kit.js';
import { showOnce } from './secret.js';

/*
 * The webhook endpoints and their delivery logs (docs/admin.md, "Webhooks"), through the admin
 * API's /webhook-endpoints routes only. The owner manages them (webhooks:manage); support reads
 * them and their logs; an auditor has neither. A signing secret is shown once, in a dialog with
 * Copy (secret.ts), after the creation (with the Ed25519 public key when chosen) and after each
 * rotation, and kept nowhere by the page. An owner also recovers an endpoint's missed deliveries
 * (POST …/recoveries) from an instant, behind a confirmation naming the URL and the instant.
 */

export interface Endpoint {
  id: string;
  url: string;
  description: string;
  eventTypes: string[];
  organizationId: string | null;
  ed25519PublicKey: string | null;
  previousSecretUntil: string | null;
  disabledAt: string | null;
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Delivery {
  id: string;
  eventId: string;
  status: 'pending' | 'delivered' | 'dead';
  attempts: number;
  dueAt: string;
  lastAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastLatencyMs: number | null;
  createdAt: string;
}

const enc = encodeURIComponent;
const api = {
  list: (after?: string) => call<PageOf<Endpoint>>('GET', `/webhook-endpoints${q({ after, limit: '50' })}`),
  read: (id: string) => call<{ data: Endpoint }>('GET', `/webhook-endpoints/${enc(id)}`),
  create: (body: {
    url: string;
    description?: string;
    eventTypes?: string[];
    organizationId?: string;
    ed25519?: boolean;
  }) => call<{ data: Endpoint & { secret: string } }>('POST', '/webhook-endpoints', body),
  update: (
    id: string,
    body: { url?: string; description?: string; eventTypes?: string[]; organizationId?: string | null },
  ) => call<{ data: Endpoint }>('PATCH', `/webhook-endpoints/${enc(id)}`, body),
  remove: (id: string) => call<void>('DELETE', `/webhook-endpoints/${enc(id)}`),
  disable: (id: string) => call<void>('POST', `/webhook-endpoints/${enc(id)}/disablements`),
  enable: (id: string) => call<void>('DELETE', `/webhook-endpoints/${enc(id)}/disablements`),
  rotate: (id: string) =>
    call<{ data: Endpoint & { secret: string } }>(
      'POST',
      `/webhook-endpoints/${enc(id)}/secret-rotations`,
      {},
    ),
  deliveries: (id: string, after?: string) =>
    call<PageOf<Delivery>>('GET', `/webhook-endpoints/${enc(id)}/deliveries${q({ after, limit: '20' })}`),
  recover: (id: string, since: string) =>
    call<{ data: { queued: number } }>('POST', `/webhook-endpoints/${enc(id)}/recoveries`, { since }),
  resend: (id: string, deliveryId: string) =>
    call<void>('POST', `/webhook-endpoints/${enc(id)}/deliveries/${enc(deliveryId)}/resends`),
};

function problemText(error: unknown): string {
  if (error instanceof ConsoleProblem) {
    if (error.code === 'admin.forbidden') return t('forbidden');
    if (error.code === 'admin.webhook_url_refused') return t('urlRefused');
    if (error.code === 'admin.webhook_delivery_in_flight') return t('inFlight');
    if (error.status === 400) return t('refused');
    if (error.status === 404) return t('notFound');
  }
  return t('failed');
}

function statusOf(e: Endpoint): HTMLElement {
  if (e.disabledAt)
    return h(
      'span',
      { class: 'badge status-disabled' },
      ['operator', 'gone', 'failing'].includes(e.disabledReason ?? '')
        ? t(`reason_${e.disabledReason}` as 'reason_operator')
        : t('disabled'),
    );
  if (e.failingSince)
    return h('span', { class: 'badge health-degraded' }, t('failing', { when: formatDate(e.failingSince) }));
  return h('span', { class: 'badge status-active' }, t('enabled'));
}

const typesText = (types: string[]) => (types.length ? types.join(', ') : t('everyType'));
const parseTypes = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);

/** The signing secret (and a new Ed25519 public key) in the once-only dialog with Copy. */
function showSecret(secret: string, after: () => void, publicKey?: string | null): void {
  showOnce({
    title: t('secretTitle'),
    once: t('secretOnce'),
    value: secret,
    id: 'webhook-secret',
    copyOf: t('copySecret'),
    copyRefused: t('copyRefusedValue'),
    ...(publicKey
      ? {
          also: {
            label: t('publicKey'),
            value: publicKey,
            id: 'webhook-public-key',
            copyOf: t('copyPublicKey'),
            copyRefused: t('copyRefusedValue'),
          },
        }
      : {}),
    after,
  });
}

/** Every organization (for the filter's choice), a page of 50 at a time, at most 500. */
async function everyOrganization(): Promise<Organization[]> {
  const all: Organization[] = [];
  let after: string | undefined;
  for (let i = 0; i < 10; i++) {
    const page = await admin.organizations(after);
    all.push(...page.data);
    if (!page.meta.pageInfo.hasNextPage || !page.meta.pageInfo.nextCursor) break;
    after = page.meta.pageInfo.nextCursor;
  }
  return all;
}

function input(
  id: string,
  label: string,
  opts: { type?: string; value?: string; hint?: string; required?: boolean },
) {
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    opts.hint ? h('p', { class: 'hint', id: `${id}-hint` }, opts.hint) : null,
    h('input', {
      id,
      name: id,
      type: opts.type ?? 'text',
      value: opts.value ?? '',
      required: opts.required ?? false,
      autocomplete: 'off',
      spellcheck: 'false',
      'aria-describedby': opts.hint ? `${id}-hint` : undefined,
    }),
  );
}

/* ------------------------------------------------------------------ the list */

export async function webhooksPage(kit: ConsoleKit, role: Role): Promise<void> {
  const owner = role === 'owner';
  const list = h('div');
  const shown: (Node | string)[][] = [];
  let cursor: string | null = null;
  const more = h('button', { type: 'button', class: 'button secondary', hidden: true }, t('more'));
  const load = async () => {
    const page = await api.list(cursor ?? undefined);
    cursor = page.meta.pageInfo.nextCursor;
    more.hidden = !page.meta.pageInfo.hasNextPage;
    for (const e of page.data)
      shown.push([
        h('a', { href: `#/webhooks/${e.id}` }, e.url),
        e.description || t('none'),
        typesText(e.eventTypes),
        statusOf(e),
        formatDate(e.createdAt),
      ]);
    list.replaceChildren(
      shown.length
        ? kit.table(
            t('webhooksTitle'),
            [t('colUrl'), t('colDescription'), t('colEventTypes'), t('colStatus'), t('colCreated')],
            shown,
          )
        : h('p', null, t('noEndpoints')),
    );
  };
  more.addEventListener('click', () => void load().catch((e) => list.append(kit.alertBox(problemText(e)))));
  kit.draw(t('webhooksTitle'), list, more, owner ? createForm(await everyOrganization()) : null);
  await load();
}

/**
 * The filter's organization, to choose among `organizations` (empty: every organization); the
 * filter in force is chosen first, and named by its id should it not be among them.
 */
function organizationField(id: string, organizations: Organization[], current: string | null): HTMLElement {
  const known = current === null || organizations.some((o) => o.id === current);
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, t('organizationLabel')),
    h('p', { class: 'hint', id: `${id}-hint` }, t('organizationHint')),
    h(
      'select',
      { id, name: id, 'aria-describedby': `${id}-hint` },
      h('option', { value: '', selected: current === null }, t('everyOrganization')),
      organizations.map((o) =>
        h('option', { value: o.id, selected: o.id === current }, `${o.name} (${o.slug})`),
      ),
      known ? null : h('option', { value: current, selected: true }, current),
    ),
  );
}

function createForm(organizations: Organization[]): HTMLElement {
  const error = h('p', { class: 'alert', role: 'alert' });
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'webhook-form',
      'aria-labelledby': 'create-title',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = '';
        const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value.trim();
        const description = value('endpoint-description');
        const types = parseTypes(value('endpoint-types'));
        const organizationId = (form.elements.namedItem('endpoint-organization') as HTMLSelectElement).value;
        const ed25519 = (form.elements.namedItem('endpoint-signing') as RadioNodeList).value === 'ed25519';
        try {
          const { data } = await api.create({
            url: value('endpoint-url'),
            ...(description ? { description } : {}),
            ...(types.length ? { eventTypes: types } : {}),
            ...(organizationId ? { organizationId } : {}),
            ...(ed25519 ? { ed25519: true } : {}),
          });
          showSecret(
            data.secret,
            () => {
              location.hash = `#/webhooks/${data.id}`;
            },
            data.ed25519PublicKey,
          );
        } catch (err) {
          error.textContent = problemText(err);
        }
      },
    },
    h('h2', { id: 'create-title' }, t('createTitle')),
    error,
    input('endpoint-url', t('urlLabel'), { type: 'url', hint: t('urlHint'), required: true }),
    input('endpoint-description', t('descriptionLabel'), {}),
    input('endpoint-types', t('eventTypesLabel'), { hint: t('eventTypesHint') }),
    organizationField('endpoint-organization', organizations, null),
    h(
      'fieldset',
      { class: 'field', 'aria-describedby': 'endpoint-signing-hint' },
      h('legend', null, t('signingLegend')),
      h('p', { class: 'hint', id: 'endpoint-signing-hint' }, t('signingHint')),
      h(
        'div',
        { class: 'checkbox-row' },
        h('input', {
          type: 'radio',
          id: 'endpoint-hmac',
          name: 'endpoint-signing',
          value: 'hmac',
          checked: true,
        }),
        h('label', { for: 'endpoint-hmac' }, t('signingHmac')),
      ),
      h(
        'div',
        { class: 'checkbox-row' },
        h('input', { type: 'radio', id: 'endpoint-ed25519', name: 'endpoint-signing', value: 'ed25519' }),
        h('label', { for: 'endpoint-ed25519' }, t('signingEd25519')),
      ),
    ),
    h('button', { type: 'submit', class: 'button' }, t('create')),
  );
  return form;
}

/* ------------------------------------------------------------------ one endpoint */

export async function webhookPage(
  kit: ConsoleKit,
  role: Role,
  id: string,
  reload: () => void,
): Promise<void> {
  const owner = role === 'owner';
  const { data: e } = await api.read(id);
  // The filter's organization by name, linking to its page (its id alone if it cannot be read).
  const organization = e.organizationId
    ? await admin.organization(e.organizationId).then(
        ({ data }) => data,
        () => null,
      )
    : null;
  const log = h('div');
  const more = h('button', { type: 'button', class: 'button secondary', hidden: true }, t('more'));
  const rows: Delivery[] = [];
  let cursor: string | null = null;
  const drawLog = () => {
    log.replaceChildren(
      rows.length
        ? kit.table(
            t('deliveries'),
            [
              t('colWhen'),
              t('colEvent'),
              t('colStatus'),
              t('colAttempts'),
              t('colResponse'),
              t('colNext'),
              t('colLatencyShort'),
              ...(owner ? [t('acts')] : []),
            ],
            rows.map((d) => [
              formatDate(d.createdAt),
              h('code', null, d.eventId),
              h('span', { class: `badge delivery-${d.status}` }, t(`status_${d.status}`)),
              String(d.attempts),
              d.lastStatusCode !== null
                ? String(d.lastStatusCode)
                : d.lastError
                  ? h('code', null, d.lastError)
                  : d.lastAttemptAt
                    ? t('noAnswer')
                    : t('none'),
              d.status === 'pending' ? formatDate(d.dueAt) : t('none'),
              d.lastLatencyMs === null ? t('none') : t('ms', { value: d.lastLatencyMs }),
              ...(owner
                ? [
                    h(
                      'button',
                      {
                        type: 'button',
                        class: 'button secondary',
                        'aria-label': `${t('resend')} (${d.eventId})`,
                        onclick: async () => {
                          try {
                            await api.resend(e.id, d.id);
                            announce(t('resent'));
                            reload();
                          } catch (err) {
                            log.prepend(kit.alertBox(problemText(err)));
                          }
                        },
                      },
                      t('resend'),
                    ),
                  ]
                : []),
            ]),
          )
        : h('p', null, t('noDeliveries')),
    );
  };
  const load = async () => {
    const page = await api.deliveries(e.id, cursor ?? undefined);
    cursor = page.meta.pageInfo.nextCursor;
    more.hidden = !page.meta.pageInfo.hasNextPage;
    rows.push(...page.data);
    drawLog();
  };
  more.addEventListener(
    'click',
    () => void load().catch((err) => log.append(kit.alertBox(problemText(err)))),
  );
  /** The log from its newest delivery again (after a recovery queued some). */
  const reloadLog = async () => {
    rows.length = 0;
    cursor = null;
    await load();
  };

  const details = h(
    'dl',
    { class: 'details' },
    h('dt', null, t('colStatus')),
    h('dd', null, statusOf(e)),
    h('dt', null, t('colDescription')),
    h('dd', null, e.description || t('none')),
    h('dt', null, t('colEventTypes')),
    h('dd', null, typesText(e.eventTypes)),
    h('dt', null, t('colOrganization')),
    h(
      'dd',
      null,
      e.organizationId
        ? h(
            'a',
            { href: `#/organizations/${e.organizationId}` },
            organization ? `${organization.name} (${organization.slug})` : e.organizationId,
          )
        : t('everyOrganization'),
    ),
    h('dt', null, t('colSigning')),
    h('dd', null, e.ed25519PublicKey ? t('signing_both') : t('signing_hmac')),
    h('dt', null, t('colId')),
    h('dd', null, h('code', null, e.id)),
    e.ed25519PublicKey ? h('dt', null, t('publicKey')) : null,
    e.ed25519PublicKey ? h('dd', null, h('code', { class: 'secret' }, e.ed25519PublicKey)) : null,
    h('dt', null, t('colCreated')),
    h('dd', null, formatDate(e.createdAt)),
    h('dt', null, t('updated')),
    h('dd', null, formatDate(e.updatedAt)),
  );
  kit.draw(
    t('endpointTitle', { url: e.url }),
    h('p', null, h('a', { href: '#/webhooks' }, t('back'))),
    h('h2', null, t('details')),
    details,
    e.previousSecretUntil
      ? h('p', { class: 'hint' }, t('previousSecretUntil', { when: formatDate(e.previousSecretUntil) }))
      : null,
    owner ? actions(kit, e, reload) : null,
    owner ? recoveryForm(kit, e, reloadLog) : null,
    owner ? editForm(e, await everyOrganization(), reload) : null,
    h('h2', { id: 'deliveries-title' }, t('deliveries')),
    log,
    more,
  );
  await load();
}

function actions(kit: ConsoleKit, e: Endpoint, reload: () => void): HTMLElement {
  const confirmThen = (text: string, danger: boolean, act: () => Promise<void>) =>
    kit.confirmThen(text, act, problemText, danger);
  const button = (key: 'disable' | 'enable' | 'rotate' | 'delete', danger: boolean, run: () => void) =>
    h(
      'button',
      { type: 'button', class: `button${danger ? ' danger' : ' secondary'}`, 'data-act': key, onclick: run },
      t(key),
    );
  return h(
    'section',
    { 'aria-labelledby': 'acts-title', class: 'acts' },
    h('h2', { id: 'acts-title' }, t('acts')),
    h(
      'div',
      { class: 'actions' },
      e.disabledAt
        ? button('enable', false, () =>
            confirmThen(t('confirmEnable', { url: e.url }), false, async () => {
              await api.enable(e.id);
              announce(t('done_enable'));
              reload();
            }),
          )
        : button('disable', true, () =>
            confirmThen(t('confirmDisable', { url: e.url }), true, async () => {
              await api.disable(e.id);
              announce(t('done_disable'));
              reload();
            }),
          ),
      button('rotate', false, () =>
        confirmThen(t('confirmRotate', { url: e.url }), false, async () => {
          const { data } = await api.rotate(e.id);
          // The confirmation closes first; the secret's dialog opens after it.
          setTimeout(() => showSecret(data.secret, reload), 0);
        }),
      ),
      button('delete', true, () =>
        confirmThen(t('confirmDelete', { url: e.url }), true, async () => {
          await api.remove(e.id);
          announce(t('done_delete'));
          location.hash = '#/webhooks';
        }),
      ),
    ),
  );
}

/** `datetime-local`'s value (the browser's time zone) of an instant. */
function localInput(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/**
 * An owner's recovery of missed deliveries: an instant (a day ago by default, in the browser's
 * time zone), confirmed naming the URL and the instant, then how many the answer says were queued,
 * said in the page and read out, and the log drawn again from its newest.
 */
function recoveryForm(kit: ConsoleKit, e: Endpoint, reloadLog: () => Promise<void>): HTMLElement {
  const error = h('p', { class: 'alert', role: 'alert' });
  const result = h('p', { id: 'recovery-result', role: 'status' });
  const since = h('input', {
    id: 'recover-since',
    name: 'recover-since',
    type: 'datetime-local',
    required: true,
    value: localInput(new Date(Date.now() - 86_400_000)),
    'aria-describedby': 'recover-since-hint',
  }) as HTMLInputElement;
  return h(
    'form',
    {
      class: 'webhook-form',
      'aria-labelledby': 'recover-title',
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        error.textContent = '';
        result.textContent = '';
        const when = new Date(since.value);
        if (!since.value || Number.isNaN(when.getTime()) || when.getTime() > Date.now()) {
          error.textContent = t('sinceInvalid');
          return;
        }
        kit.confirmThen(
          t('confirmRecover', { url: e.url, when: formatDate(when.toISOString()) }),
          async () => {
            const { data } = await api.recover(e.id, when.toISOString());
            result.textContent = t('recovered', { count: data.queued });
            await reloadLog().catch(() => undefined);
          },
          problemText,
        );
      },
    },
    h('h2', { id: 'recover-title' }, t('recoverTitle')),
    error,
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'recover-since' }, t('recoverSince')),
      h('p', { class: 'hint', id: 'recover-since-hint' }, t('recoverHint')),
      since,
    ),
    h('button', { type: 'submit', class: 'button secondary' }, t('recover')),
    result,
  );
}

function editForm(e: Endpoint, organizations: Organization[], reload: () => void): HTMLElement {
  const error = h('p', { class: 'alert', role: 'alert' });
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'webhook-form',
      'aria-labelledby': 'edit-title',
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        error.textContent = '';
        const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value.trim();
        const organizationId = (form.elements.namedItem('edit-organization') as HTMLSelectElement).value;
        try {
          await api.update(e.id, {
            url: value('edit-url'),
            description: value('edit-description'),
            eventTypes: parseTypes(value('edit-types')),
            organizationId: organizationId || null,
          });
          announce(t('saved'));
          reload();
        } catch (err) {
          error.textContent = problemText(err);
        }
      },
    },
    h('h2', { id: 'edit-title' }, t('editTitle')),
    error,
    input('edit-url', t('urlLabel'), { type: 'url', value: e.url, required: true }),
    input('edit-description', t('descriptionLabel'), { value: e.description }),
    input('edit-types', t('eventTypesLabel'), { value: e.eventTypes.join(' '), hint: t('eventTypesHint') }),
    organizationField('edit-organization', organizations, e.organizationId),
    h('button', { type: 'submit', class: 'button' }, t('save')),
  );
  return form;
}
