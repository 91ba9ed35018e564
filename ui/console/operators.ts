import { announce, formatDate, h } from '../dom.js';
import { t } from '../messages/console.js';
import { tp } from '../messages/console-operators.js';
import {
  admin,
  ConsoleProblem,
  call,
  type IdentityItem,
  type Operator,
  type Role,
  searchQuery,
} from './api.js';
import type { ConsoleKit } from './kit.js';

/*
 * The operators page (docs/admin.md, "The console's pages"), through GET, PUT and DELETE
 * /admin/v1/operators only. An owner grants a role to a person found by the console's search,
 * changes one and takes one away, each behind the shell's confirmation naming the person; support
 * (operators:read) reads the list and is drawn no control; an auditor has no such page. Two rows
 * have no control even for an owner, because the API refuses them: CONSOLE_OPERATORS's entries
 * (409 admin.operator_configured) and the owner's own (403 admin.operator_own_role: no operator
 * changes their own role, so an owner can never leave the console without an owner by acting on
 * themselves): their cells say why instead, in the words of the API's refusal. A refusal that
 * comes anyway (a list drawn before another owner acted) is shown in the dialog, in words.
 */

const ROLES: Role[] = ['owner', 'support', 'auditor'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An entry of GET /admin/v1/operators. */
interface OperatorEntry {
  identityId: string | null;
  email: string | null;
  identifier: { type: 'email' | 'phone'; value: string } | null;
  role: Role;
  source: 'setting' | 'api';
  grantedBy: string | null;
  grantedAt: string | null;
}

const enc = encodeURIComponent;
const api = {
  list: () => call<{ data: OperatorEntry[] }>('GET', '/operators'),
  grant: (identityId: string, role: Role) =>
    call<{ data: OperatorEntry }>('PUT', `/operators/${enc(identityId)}`, { role }),
  revoke: (identityId: string) => call<void>('DELETE', `/operators/${enc(identityId)}`),
};

const roleName = (role: Role) => t(`role_${role}`);

let kit: ConsoleKit;

/** The API's refusals of a role change, in the operator's words. */
function refusal(err: unknown): string {
  if (err instanceof ConsoleProblem) {
    if (err.code === 'admin.operator_own_role') return tp('ownRole');
    if (err.code === 'admin.operator_configured') return tp('configured');
    if (err.code === 'admin.identity_erased') return tp('erased');
    if (err.code === 'admin.operator_not_found') return tp('noRole');
  }
  return kit.problemText(err);
}

/** A role picker named for the person, the current role chosen. */
function rolePicker(id: string, label: string, current?: Role): HTMLSelectElement {
  return h(
    'select',
    { id, name: 'role', 'aria-label': label },
    ROLES.map((r) => h('option', { value: r, selected: r === current }, roleName(r))),
  ) as HTMLSelectElement;
}

const nameOf = (o: OperatorEntry) => o.identifier?.value ?? o.email ?? o.identityId ?? '—';

export async function operatorsPage(shell: ConsoleKit, me: Operator): Promise<void> {
  kit = shell;
  const owner = me.role === 'owner';
  const { data } = await api.list();
  const head = [tp('colOperator'), tp('colRole'), tp('colSince'), tp('colGrantedBy')];
  kit.draw(
    tp('operatorsTitle'),
    h('p', null, tp('operatorsIntro')),
    owner ? null : h('p', { class: 'hint', id: 'operators-read-only' }, tp('readOnly')),
    data.length
      ? kit.table(
          tp('operatorsTitle'),
          owner ? [...head, tp('colActs')] : head,
          data.map((o) => row(o, me, owner)),
        )
      : h('p', null, tp('noOperators')),
    owner ? grantSection(data, me) : null,
  );
}

function row(o: OperatorEntry, me: Operator, owner: boolean): (Node | string)[] {
  const who = nameOf(o);
  const self = o.identityId !== null && o.identityId === me.identityId;
  const cells: (Node | string)[] = [
    h(
      'span',
      null,
      o.identityId ? h('a', { href: `#/people/${o.identityId}` }, who) : who,
      self ? ` (${tp('you')})` : '',
    ),
    h('span', { class: 'badge role' }, roleName(o.role)),
    o.grantedAt ? formatDate(o.grantedAt) : tp('fromSetting'),
    o.grantedBy ? h('code', null, o.grantedBy) : '—',
  ];
  if (!owner) return cells;
  if (o.source === 'setting' || o.identityId === null) cells.push(h('span', { class: 'hint' }, tp('fixed')));
  else if (self) cells.push(h('span', { class: 'hint' }, tp('ownRow')));
  else cells.push(acts(o.identityId, who, o.role));
  return cells;
}

/**
 * A role picker and the button that grants the picked role to `identityId` after a confirmation
 * naming the person: changing a role and granting one differ only in their words.
 */
function rolePickerAndGrant(
  identityId: string,
  current: Role,
  words: {
    id: string;
    label: string;
    buttonLabel: string;
    button: string;
    confirm: (role: string) => string;
    done: (role: string) => string;
  },
): [HTMLSelectElement, HTMLElement] {
  const select = rolePicker(words.id, words.label, current);
  const button = h(
    'button',
    {
      type: 'button',
      class: 'button secondary',
      'aria-label': words.buttonLabel,
      onclick: () => {
        const role = select.value as Role;
        kit.confirmThen(
          words.confirm(roleName(role)),
          async () => {
            await api.grant(identityId, role);
            announce(words.done(roleName(role)));
            void kit.route();
          },
          refusal,
        );
      },
    },
    words.button,
  );
  return [select, button];
}

function acts(identityId: string, who: string, current: Role): HTMLElement {
  return h(
    'div',
    { class: 'actions' },
    ...rolePickerAndGrant(identityId, current, {
      id: `operator-role-${identityId}`,
      label: tp('roleOf', { who }),
      buttonLabel: tp('changeRoleOf', { who }),
      button: tp('changeRole'),
      confirm: (role) => tp('confirmChange', { who, role }),
      done: (role) => tp('changed', { who, role }),
    }),
    h(
      'button',
      {
        type: 'button',
        class: 'button danger',
        'aria-label': tp('revokeOf', { who }),
        onclick: () =>
          kit.confirmThen(
            tp('confirmRevoke', { who }),
            async () => {
              await api.revoke(identityId);
              announce(tp('revoked', { who }));
              void kit.route();
            },
            refusal,
            true,
          ),
      },
      tp('revoke'),
    ),
  );
}

/* ------------------------------------------------------------------ granting */

/** The console's search (main.ts's rules), its results each with a role to grant. */
function grantSection(operators: OperatorEntry[], me: Operator): HTMLElement {
  const roles = new Map(operators.filter((o) => o.identityId).map((o) => [o.identityId, o.role]));
  const input = h('input', {
    id: 'operator-search',
    name: 'q',
    type: 'search',
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'operator-search-hint',
  });
  const results = h('div', { class: 'results' });
  const find = async (q: string) => {
    const people: IdentityItem[] = UUID.test(q)
      ? await admin.identity(q).then(
          (r) => [r.data],
          (e) => (e instanceof ConsoleProblem && e.status === 404 ? [] : Promise.reject(e)),
        )
      : (await admin.searchIdentities(searchQuery(q))).data;
    results.replaceChildren(
      h('h3', { id: 'found-title' }, tp('found')),
      people.length
        ? kit.table(
            tp('found'),
            [tp('colPerson'), tp('colIdentifiers'), tp('colConsoleRole'), tp('colActs')],
            people.map((p) => foundRow(p, roles.get(p.id), me)),
          )
        : h('p', null, tp('nobodyFound')),
    );
  };
  return h(
    'section',
    { 'aria-labelledby': 'grant-title' },
    h('h2', { id: 'grant-title' }, tp('grantTitle')),
    h(
      'form',
      {
        role: 'search',
        class: 'search',
        'aria-labelledby': 'grant-title',
        onsubmit: (e: Event) => {
          e.preventDefault();
          results.replaceChildren();
          void find(input.value.trim()).catch((err) =>
            results.replaceChildren(kit.alertBox(kit.problemText(err))),
          );
        },
      },
      h('label', { for: 'operator-search' }, tp('findLabel')),
      h('p', { class: 'hint', id: 'operator-search-hint' }, tp('findHint')),
      h('div', { class: 'search-row' }, input, h('button', { type: 'submit', class: 'button' }, tp('find'))),
    ),
    results,
  );
}

function foundRow(p: IdentityItem, current: Role | undefined, me: Operator): (Node | string)[] {
  const who = p.name || p.identifiers[0]?.value || p.id;
  const cells: (Node | string)[] = [
    h('a', { href: `#/people/${p.id}` }, who),
    p.identifiers.map((x) => x.value).join(', '),
    current ? roleName(current) : tp('none'),
  ];
  if (p.erasedAt) {
    cells.push(h('span', { class: 'hint' }, tp('erasedNoGrant')));
    return cells;
  }
  if (p.id === me.identityId) {
    cells.push(h('span', { class: 'hint' }, tp('ownRow')));
    return cells;
  }
  cells.push(
    h(
      'div',
      { class: 'actions' },
      ...rolePickerAndGrant(p.id, current ?? 'support', {
        id: `grant-role-${p.id}`,
        label: tp('roleFor', { who }),
        buttonLabel: tp('grantTo', { who }),
        button: tp('grant'),
        confirm: (role) => tp('confirmGrant', { who, role }),
        done: (role) => tp('granted', { who, role }),
      }),
    ),
  );
  return cells;
}
