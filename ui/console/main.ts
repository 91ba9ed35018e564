import { announce, append, formatDate, h } from '../dom.js';
import { chooseLocale, setLocale } from '../i18n.js';
import { t } from '../messages/console.js';
import { tp } from '../messages/console-operators.js';
import { t as ops } from '../messages/console-ops.js';
import {
  type AuditRecord,
  admin,
  ConsoleProblem,
  currentOperator,
  type IdentityDetail,
  type IdentityItem,
  InvalidField,
  type OidcClient,
  type Operator,
  openSession,
  type Role,
  searchQuery,
  signOut,
} from './api.js';
import { clientActs } from './clients-edit.js';
import { healthPage } from './health.js';
import { operatorsPage } from './operators.js';
import { organizationPage } from './organization.js';
import { resendNote } from './person-extra.js';
import { rememberReturn, takeReturn } from './return.js';
import { webhookPage, webhooksPage } from './webhooks.js';

/*
 * The operators' console (docs/admin.md, "The console"): hash routes (#/people/<id>) hold a place,
 * never a token. Every page asks the console's session first (renewing its idle clock): a page
 * drawn after the session ended shows the sign-in instead. What an operator may do follows their
 * role; the admin API checks it again on every call (a control not drawn is not the only guard).
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const main = () => document.getElementById('main') as HTMLElement;

const roleName = (role: Role) => t(`role_${role}`);
const canRead = (role: Role) => role !== 'auditor';

function problemText(error: unknown): string {
  if (error instanceof ConsoleProblem) {
    if (error.code === 'admin.forbidden') return t('forbidden');
    if (error.code === 'admin.erasure_not_confirmed') return t('notConfirmed');
    if (error.status === 404) return t('notFound');
    if (error.status === 401) return t('sessionEnded');
  }
  return t('failed');
}

function draw(title: string, ...children: (Node | string | null | false)[]): void {
  const m = main();
  m.replaceChildren();
  document.title = `${title} · ${t('brand')}`;
  append(m, [h('h1', null, title), ...children]);
}

function alertBox(text: string): HTMLElement {
  return h('p', { class: 'alert', role: 'alert' }, text);
}

/** A table in a scrolling box (a phone scrolls it sideways, the page stays put). */
function table(caption: string, head: string[], rows: (Node | string)[][]): HTMLElement {
  return h(
    'div',
    // Focusable and named: a keyboard scrolls it too when it overflows (a phone).
    { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption },
    h(
      'table',
      { class: 'grid' },
      h('caption', { class: 'visually-hidden' }, caption),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          head.map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        null,
        rows.map((r) =>
          h(
            'tr',
            null,
            r.map((c) => h('td', null, c)),
          ),
        ),
      ),
    ),
  );
}

function status(i: IdentityItem & { lock?: IdentityDetail['lock'] }): HTMLElement {
  const key = i.erasedAt ? 'erased' : i.disabledAt ? 'disabled' : i.lock?.locked ? 'locked' : 'active';
  return h('span', { class: `badge status-${key}` }, t(key));
}

const who = (i: IdentityItem) => i.name || i.identifiers[0]?.value || i.id;

/* ------------------------------------------------------------------ the shell */

function drawHeader(op: Operator | null): void {
  const nav = document.getElementById('nav') as HTMLElement;
  const box = document.getElementById('operator') as HTMLElement;
  nav.replaceChildren();
  box.replaceChildren();
  nav.hidden = op === null;
  box.hidden = op === null;
  if (!op) return;
  const links: [string, string][] = [];
  if (canRead(op.role)) links.push(['#/', t('searchNav')]);
  if (canRead(op.role)) links.push(['#/organizations', t('orgsNav')], ['#/clients', t('clientsNav')]);
  if (canRead(op.role)) links.push(['#/webhooks', ops('webhooksNav')], ['#/health', ops('healthNav')]);
  // Owners manage operators; support reads them (operators:read); an auditor has no such page.
  if (canRead(op.role)) links.push(['#/operators', tp('operatorsNav')]);
  links.push(['#/audit', t('auditNav')]);
  append(nav, [
    h(
      'ul',
      null,
      links.map(([href, text]) => h('li', null, h('a', { href }, text))),
    ),
  ]);
  append(box, [
    h('span', { class: 'operator-id' }, t('operator', { who: op.identityId })),
    ' ',
    h('span', { class: 'badge role' }, t('roleLabel', { role: roleName(op.role) })),
    ' ',
    h(
      'button',
      {
        type: 'button',
        class: 'button secondary',
        onclick: async () => {
          await signOut();
          drawHeader(null);
          signedOut();
        },
      },
      t('signOut'),
    ),
  ]);
}

function signedOut(ended = false): void {
  draw(
    t('signedOutTitle'),
    ended ? alertBox(t('sessionEnded')) : null,
    h('p', null, t('signedOutIntro')),
    h('p', null, h('a', { class: 'button', href: '/console/sign-in' }, t('signIn'))),
  );
}

/* ------------------------------------------------------------------ search */

async function searchPage(query: string): Promise<void> {
  const input = h('input', {
    id: 'search',
    name: 'q',
    type: 'search',
    value: query,
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'search-hint',
  });
  const form = h(
    'form',
    {
      role: 'search',
      class: 'search',
      onsubmit: (e: Event) => {
        e.preventDefault();
        location.hash = `#/?q=${encodeURIComponent(input.value.trim())}`;
      },
    },
    h('label', { for: 'search' }, t('searchLabel')),
    h('p', { class: 'hint', id: 'search-hint' }, t('searchHint')),
    h(
      'div',
      { class: 'search-row' },
      input,
      h('button', { type: 'submit', class: 'button' }, t('searchButton')),
    ),
  );
  const results = h('div', { class: 'results' });
  draw(t('searchTitle'), form, results);
  input.focus();
  try {
    const q = query.trim();
    if (UUID.test(q)) {
      const found = await admin
        .identity(q)
        .catch((e) => (e instanceof ConsoleProblem && e.status === 404 ? null : Promise.reject(e)));
      if (found) {
        location.hash = `#/people/${found.data.id}`;
        return;
      }
      const org = await admin
        .organization(q)
        .catch((e) => (e instanceof ConsoleProblem && e.status === 404 ? null : Promise.reject(e)));
      if (org) {
        location.hash = `#/organizations/${org.data.id}`;
        return;
      }
      append(results, [h('h2', { id: 'results-title' }, t('results')), h('p', null, t('noResults'))]);
      return;
    }
    const page = await admin.searchIdentities(searchQuery(q));
    append(results, [h('h2', { id: 'results-title' }, q ? t('results') : t('recent'))]);
    if (page.data.length === 0) {
      append(results, [h('p', null, t('noResults'))]);
      return;
    }
    append(results, [
      table(
        q ? t('results') : t('recent'),
        [t('colName'), t('colIdentifiers'), t('colStatus'), t('colCreated')],
        page.data.map((i) => [
          h('a', { href: `#/people/${i.id}` }, i.name || i.identifiers[0]?.value || t('noName')),
          i.identifiers.map((x) => x.value).join(', '),
          status(i),
          formatDate(i.createdAt),
        ]),
      ),
    ]);
  } catch (error) {
    append(results, [alertBox(problemText(error))]);
  }
}

/* ------------------------------------------------------------------ an organization */

async function organizationsPage(): Promise<void> {
  const list = h('div');
  let cursor: string | null = null;
  const shown: (Node | string)[][] = [];
  const more = h('button', { type: 'button', class: 'button secondary', hidden: true }, t('more'));
  const load = async () => {
    const page = await admin.organizations(cursor ?? undefined);
    cursor = page.meta.pageInfo.nextCursor;
    more.hidden = !page.meta.pageInfo.hasNextPage;
    for (const o of page.data)
      shown.push([
        h('a', { href: `#/organizations/${o.id}` }, o.name),
        h('code', null, o.slug),
        h(
          'span',
          { class: `badge status-${o.disabledAt ? 'disabled' : 'active'}` },
          t(o.disabledAt ? 'disabled' : 'active'),
        ),
        o.requireSecondFactor ? t('yes') : t('no'),
        formatDate(o.createdAt),
      ]);
    list.replaceChildren(
      shown.length
        ? table(
            t('orgsTitle'),
            [t('colName'), t('colSlug'), t('colStatus'), t('colSecondFactor'), t('colCreated')],
            shown,
          )
        : h('p', null, t('noOrganizations')),
    );
  };
  more.addEventListener('click', () => void load().catch((e) => list.append(alertBox(problemText(e)))));
  draw(t('orgsTitle'), list, more);
  await load();
}

/* ------------------------------------------------------------------ a person */

function auditTable(records: AuditRecord[], caption: string): HTMLElement {
  if (records.length === 0) return h('p', null, t('noRecords'));
  return table(
    caption,
    [t('colWhen'), t('colEvent'), t('colActor'), t('colOutcome'), t('colSeal')],
    records.map((r) => [
      formatDate(r.occurredAt),
      h('code', null, r.name),
      h('code', null, r.actor),
      r.outcome,
      h(
        'span',
        { class: `badge ${r.verified ? 'seal-ok' : 'seal-broken'}` },
        r.verified ? t('verified') : t('broken'),
      ),
    ]),
  );
}

type Act = 'disable' | 'enable' | 'unlock' | 'endSessions' | 'erase';
const ACT_ROUTE = {
  disable: 'disablements',
  enable: 'enablements',
  unlock: 'lock-clearances',
  endSessions: 'session-revocations',
} as const;
const CONFIRM_KEY = {
  disable: 'confirmDisable',
  enable: 'confirmEnable',
  unlock: 'confirmUnlock',
  endSessions: 'confirmEndSessions',
  erase: 'confirmErase',
} as const;

/** The acts the operator's role allows on this person (the API refuses the others anyway). */
function actsFor(role: Role, p: IdentityDetail): Act[] {
  if (p.erasedAt || role === 'auditor') return [];
  const acts: Act[] = [];
  if (role === 'owner') acts.push(p.disabledAt ? 'enable' : 'disable');
  acts.push('unlock', 'endSessions');
  if (role === 'owner') acts.push('erase');
  return acts;
}

/** A modal confirmation naming the person; the erasure also asks for an identifier typed again. */
function confirmAct(act: Act, p: IdentityDetail, name: string, after: () => void): void {
  const dialog = h('dialog', { class: 'confirm-dialog', 'aria-labelledby': 'confirm-text' });
  const verified = p.identifiers.filter((i) => i.verifiedAt);
  const typed =
    act === 'erase'
      ? h('input', {
          id: 'confirm-identifier',
          name: 'identifier',
          type: 'text',
          autocomplete: 'off',
          required: true,
        })
      : null;
  const error = h('p', { class: 'field-error', id: 'confirm-error', role: 'alert' });
  const form = h(
    'form',
    {
      method: 'dialog',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = '';
        try {
          if (act === 'erase') await admin.erase(p.id, (typed as HTMLInputElement).value.trim());
          else await admin.act(p.id, ACT_ROUTE[act]);
          dialog.close();
          dialog.remove();
          announce(t(`done_${act}`, { who: name }));
          after();
        } catch (err) {
          if (err instanceof ConsoleProblem && err.code === 'admin.step_up_required') {
            error.textContent = t('stepUp');
            rememberReturn(p.id, 'erase');
            location.assign('/console/sign-in?fresh=1');
            return;
          }
          error.textContent = problemText(err);
          typed?.focus();
        }
      },
    },
    h('p', { id: 'confirm-text' }, t(CONFIRM_KEY[act], { who: name })),
    typed
      ? h(
          'div',
          { class: 'field' },
          h('label', { for: 'confirm-identifier' }, verified.length ? t('typeIdentifier') : t('typeDelete')),
          typed,
        )
      : null,
    error,
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        { type: 'submit', class: `button${act === 'erase' || act === 'disable' ? ' danger' : ''}` },
        t('confirm'),
      ),
      h(
        'button',
        {
          type: 'button',
          class: 'button secondary',
          onclick: () => {
            dialog.close();
            dialog.remove();
          },
        },
        t('cancel'),
      ),
    ),
  );
  dialog.addEventListener('close', () => dialog.remove());
  append(dialog, [form]);
  document.body.appendChild(dialog);
  dialog.showModal();
  (typed ?? (form.querySelector('button[type=submit]') as HTMLButtonElement)).focus();
}

async function personPage(id: string, op: Operator): Promise<void> {
  const [{ data: p }, audit, sessions, orgs, apps] = await Promise.all([
    admin.identity(id),
    admin.auditRecords({ identityId: id }),
    admin.sessions(id),
    admin.personOrganizations(id),
    admin.connectedApps(id),
  ]);
  const name = who(p);
  const methodKind = (kind: string) =>
    ['password', 'email', 'phone', 'provider', 'passkey'].includes(kind)
      ? t(`kind_${kind}` as 'kind_password')
      : kind;
  const acts = actsFor(op.role, p);
  draw(
    name,
    h('p', null, h('a', { href: '#/' }, t('back'))),
    h(
      'p',
      { class: 'person-meta' },
      status(p),
      ' ',
      h('code', null, p.id),
      ' · ',
      t('colCreated'),
      ' ',
      formatDate(p.createdAt),
    ),
    acts.length
      ? h(
          'section',
          { 'aria-labelledby': 'acts-title', class: 'acts' },
          h('h2', { id: 'acts-title' }, t('acts')),
          h(
            'div',
            { class: 'actions' },
            acts.map((act) =>
              h(
                'button',
                {
                  type: 'button',
                  class: `button${act === 'erase' || act === 'disable' ? ' danger' : ' secondary'}`,
                  'data-act': act,
                  onclick: () => confirmAct(act, p, name, () => void route()),
                },
                t(act),
              ),
            ),
          ),
        )
      : null,
    h('h2', null, t('identifiers')),
    table(
      t('identifiers'),
      [t('colType'), t('colValue'), t('colVerified')],
      p.identifiers.map((i) => [
        t(`type_${i.type}`),
        i.value,
        i.verifiedAt ? formatDate(i.verifiedAt) : t('notVerified'),
      ]),
    ),
    h('h2', null, t('methods')),
    table(
      t('methods'),
      [t('colKind'), t('colDetail'), t('colVerified'), t('colLastUsed')],
      p.methods.map((m) => [
        methodKind(m.kind),
        m.display ?? '—',
        formatDate(m.verifiedAt),
        formatDate(m.lastUsedAt),
      ]),
    ),
    h('h2', null, t('secondFactors')),
    p.secondFactors.length
      ? table(
          t('secondFactors'),
          [t('colLabel'), t('colVerified'), t('colLastUsed')],
          p.secondFactors.map((f) => [f.label ?? '—', formatDate(f.verifiedAt), formatDate(f.lastUsedAt)]),
        )
      : h('p', null, t('noSecondFactor')),
    h('p', null, t('recoveryCodes', { count: p.recoveryCodesRemaining })),
    h('h2', null, t('lock')),
    h(
      'p',
      null,
      p.lock.locked && p.lock.lockedUntil
        ? t('lockedUntil', { when: formatDate(p.lock.lockedUntil), count: p.lock.failedAttempts })
        : t('notLocked', { count: p.lock.failedAttempts }),
    ),
    h('h2', null, t('sessions')),
    h(
      'p',
      null,
      t('liveSessions', { count: p.liveSessionCount }),
      p.lastSignInAt ? ` · ${t('lastSignIn', { when: formatDate(p.lastSignInAt) })}` : '',
    ),
    sessions.data.length
      ? table(
          t('sessions'),
          [t('colDevice'), t('colAddress'), t('colMethod'), t('colCreated'), t('colLastActive')],
          sessions.data.map((s) => [
            s.device.description,
            s.ipAddress ?? '—',
            methodKind(s.method),
            formatDate(s.createdAt),
            formatDate(s.lastActiveAt),
          ]),
        )
      : null,
    sessions.meta.pageInfo.hasNextPage ? h('p', { class: 'hint' }, t('moreSessions')) : null,
    h('h2', null, t('personOrgs')),
    orgs.data.length
      ? table(
          t('personOrgs'),
          [t('colName'), t('colSlug'), t('colRole'), t('colJoined')],
          orgs.data.map((o) => [
            h('a', { href: `#/organizations/${o.id}` }, o.name),
            o.slug,
            o.role,
            formatDate(o.joinedAt),
          ]),
        )
      : h('p', null, t('noPersonOrgs')),
    orgs.meta.pageInfo.hasNextPage ? h('p', { class: 'hint' }, t('morePersonOrgs')) : null,
    h('h2', null, t('connectedApps')),
    apps.data.length
      ? table(
          t('connectedApps'),
          [t('colApp'), t('colScopes'), t('colSince'), t('colLastAuthorized')],
          apps.data.map((a) => [
            a.name,
            a.scopes.join(' '),
            formatDate(a.since),
            a.lastAuthorizedAt ? formatDate(a.lastAuthorizedAt) : '—',
          ]),
        )
      : h('p', null, t('noConnectedApps')),
    apps.meta.pageInfo.hasNextPage ? h('p', { class: 'hint' }, t('moreConnectedApps')) : null,
    resendNote(),
    h('h2', null, t('personAudit')),
    auditTable(audit.data, t('personAudit')),
  );
}

/* ------------------------------------------------------------------ the audit trail */

async function auditPage(): Promise<void> {
  const list = h('div');
  const records: AuditRecord[] = [];
  let cursor: string | null = null;
  const summary = h('p', { class: 'chain', role: 'status' });
  const more = h('button', { type: 'button', class: 'button secondary', hidden: true }, t('more'));
  const load = async () => {
    const page = await admin.auditRecords(cursor ? { after: cursor } : {});
    records.push(...page.data);
    cursor = page.meta.pageInfo.nextCursor;
    more.hidden = !page.meta.pageInfo.hasNextPage;
    const broken = records.filter((r) => !r.verified).length;
    summary.className = `chain ${broken ? 'seal-broken' : 'seal-ok'}`;
    summary.textContent = broken ? t('chainBroken', { count: broken }) : t('chainOk');
    list.replaceChildren(auditTable(records, t('audit')));
  };
  more.addEventListener('click', () => void load().catch((e) => list.append(alertBox(problemText(e)))));
  draw(t('audit'), summary, list, more);
  await load();
}

/* ------------------------------------------------------------------ OpenID clients */

/** A secret shown once, in a dialog the operator closes when it is stored. */
function showSecret(client: OidcClient): void {
  if (!client.client_secret) return;
  const dialog = h('dialog', { class: 'confirm-dialog', 'aria-labelledby': 'secret-title' });
  append(dialog, [
    h('h2', { id: 'secret-title' }, t('secretTitle', { client: client.client_id })),
    h('p', null, t('secretOnce')),
    h('p', null, h('code', { class: 'secret', id: 'client-secret' }, client.client_secret)),
    h(
      'form',
      { method: 'dialog', class: 'actions' },
      h('button', { type: 'submit', class: 'button' }, t('confirm')),
    ),
  ]);
  dialog.addEventListener('close', () => dialog.remove());
  document.body.appendChild(dialog);
  dialog.showModal();
}

async function clientsPage(op: Operator): Promise<void> {
  const page = await admin.clients();
  const owner = op.role === 'owner';
  const rows = page.data.map((c) => [
    h('code', null, c.client_id),
    c.client_name ?? '—',
    t(`source_${c.source}`),
    c.grant_types.join(', '),
    c.redirect_uris.join(' '),
    owner && c.source === 'admin'
      ? h(
          'div',
          { class: 'actions' },
          c.token_endpoint_auth_method !== 'none' && c.token_endpoint_auth_method !== 'private_key_jwt'
            ? h(
                'button',
                {
                  type: 'button',
                  class: 'button secondary',
                  'aria-label': `${t('rotate')} (${c.client_id})`,
                  onclick: () =>
                    confirmThen(t('confirmRotate', { client: c.client_id }), async () => {
                      showSecret((await admin.rotateSecret(c.client_id)).data);
                    }),
                },
                t('rotate'),
              )
            : null,
          // Edit and delete (clients-edit.ts).
          clientActs(c, kit),
        )
      : '',
  ]);
  const head = [t('colClientId'), t('colName'), t('colSource'), t('colGrants'), t('colRedirects')];
  draw(
    t('clientsTitle'),
    table(t('clientsTitle'), owner ? [...head, t('acts')] : head, rows),
    owner ? registerForm() : null,
  );
}

/** A confirmation without a typed word: Confirm runs `act`, its refusal shown in the dialog. */
function confirmThen(
  text: string,
  act: () => Promise<void>,
  refusal: (err: unknown) => string = problemText,
  danger = false,
): void {
  const dialog = h('dialog', { class: 'confirm-dialog', 'aria-labelledby': 'confirm-text' });
  const error = h('p', { class: 'field-error', role: 'alert' });
  const form = h(
    'form',
    {
      method: 'dialog',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = '';
        try {
          await act();
          dialog.close();
        } catch (err) {
          error.textContent = refusal(err);
        }
      },
    },
    h('p', { id: 'confirm-text' }, text),
    error,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: `button${danger ? ' danger' : ''}` }, t('confirm')),
      h('button', { type: 'button', class: 'button secondary', onclick: () => dialog.close() }, t('cancel')),
    ),
  );
  dialog.addEventListener('close', () => dialog.remove());
  append(dialog, [form]);
  document.body.appendChild(dialog);
  dialog.showModal();
}

function registerForm(): HTMLElement {
  const input = (id: string, label: string, type = 'text') =>
    h(
      'div',
      { class: 'field' },
      h('label', { for: id }, label),
      h('input', { id, name: id, type, required: true, autocomplete: 'off' }),
    );
  const error = h('p', { class: 'alert', role: 'alert' });
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'register-client',
      'aria-labelledby': 'register-title',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = '';
        const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value.trim();
        const isPublic = (form.elements.namedItem('client-public') as HTMLInputElement).checked;
        try {
          const created = await admin.registerClient({
            client_id: value('client-id'),
            client_name: value('client-name'),
            redirect_uris: [value('client-redirect')],
            grant_types: ['authorization_code', 'refresh_token'],
            ...(isPublic ? { token_endpoint_auth_method: 'none' } : {}),
          });
          await route();
          showSecret(created.data);
        } catch (err) {
          error.textContent =
            err instanceof InvalidField
              ? t('invalidClient', { field: err.field })
              : err instanceof ConsoleProblem && err.code === 'admin.oidc_client_exists'
                ? t('clientExists')
                : problemText(err);
        }
      },
    },
    h('h2', { id: 'register-title' }, t('registerTitle')),
    error,
    input('client-id', t('clientIdLabel')),
    input('client-name', t('clientNameLabel')),
    input('client-redirect', t('redirectLabel'), 'url'),
    h(
      'div',
      { class: 'checkbox-row' },
      h('input', { id: 'client-public', name: 'client-public', type: 'checkbox' }),
      h('label', { for: 'client-public' }, t('publicLabel')),
    ),
    h('button', { type: 'submit', class: 'button' }, t('register')),
  );
  return form;
}

/* ------------------------------------------------------------------ routing */

/** What the pages in files of their own (health.ts, webhooks.ts) draw with. */

async function route(): Promise<void> {
  const op = await openSession().catch(() => null);
  drawHeader(op);
  if (!op) {
    signedOut(currentOperator() === null && sessionStorage.getItem('console-was-in') === '1');
    sessionStorage.removeItem('console-was-in');
    return;
  }
  sessionStorage.setItem('console-was-in', '1');
  // Back from a fresh sign-in: the person's page it left, and the act again (return.ts).
  const back = takeReturn();
  if (back && canRead(op.role) && location.hash !== back.hash) {
    resume = back.act;
    location.hash = back.hash;
    return;
  }
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, search = ''] = hash.split('?');
  try {
    const person = /^\/people\/([0-9a-f-]{36})$/i.exec(path);
    const org = /^\/organizations\/([0-9a-f-]{36})$/i.exec(path);
    const hook = /^\/webhooks\/([0-9a-f-]{36})$/i.exec(path);
    if (path === '/audit') await auditPage();
    else if (path === '/health' && canRead(op.role)) await healthPage(kit);
    else if (path === '/operators' && canRead(op.role)) await operatorsPage(kit, op);
    else if (path === '/webhooks' && canRead(op.role)) await webhooksPage(kit, op.role);
    else if (hook && canRead(op.role)) await webhookPage(kit, op.role, hook[1], () => void route());
    else if (path === '/clients' && canRead(op.role)) await clientsPage(op);
    else if (path === '/organizations' && canRead(op.role)) await organizationsPage();
    else if (!canRead(op.role)) location.hash = '#/audit';
    else if (person) {
      await personPage(person[1], op);
      if (resume) (document.querySelector(`[data-act=${resume}]`) as HTMLButtonElement | null)?.click();
    } else if (org) await organizationPage(org[1], op, kit);
    else await searchPage(new URLSearchParams(search).get('q') ?? '');
  } catch (error) {
    resume = null;
    draw(t('notFound'), alertBox(problemText(error)), h('p', null, h('a', { href: '#/' }, t('back'))));
  }
  resume = null;
  if (document.activeElement === document.body) main().focus({ preventScroll: true });
}

/** The act to open again once the person's page is drawn (after a fresh sign-in). */
let resume: string | null = null;

/** What the pages in files of their own borrow from the shell (kit.ts). */
const kit = { draw, table, alertBox, problemText, confirmThen, route };

function start(): void {
  setLocale(chooseLocale(navigator.languages));
  (document.getElementById('skip') as HTMLElement).textContent = t('skip');
  (document.getElementById('brand') as HTMLElement).textContent = t('brand');
  (document.getElementById('nav') as HTMLElement).setAttribute('aria-label', t('nav'));
  (document.getElementById('loading') as HTMLElement | null)?.replaceChildren(t('loading'));
  window.addEventListener('hashchange', () => void route());
  void route();
}

start();
