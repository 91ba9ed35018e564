import { announce, formatDate, h } from '../dom.js';
import { t } from '../messages/console.js';
import { tp } from '../messages/console-operators.js';
import { tx } from '../messages/console-orgs.js';
import { ConsoleProblem, type Operator } from './api.js';
import {
  type Connection,
  type ConnectionTestResult,
  type Domain,
  type Invitation,
  orgAdmin,
  type ScimToken,
} from './api-orgs.js';
import type { ConsoleKit } from './kit.js';
import { showOnce } from './secret.js';

/*
 * An organization's page (docs/admin.md, "The console's pages"): its policy, members, pending
 * invitations, domains, enterprise connections and SCIM status, from the admin API only. Every
 * role that reads sees it all; only an owner (organizations:manage) is drawn the acts, each behind
 * a confirmation naming the organization and whom or what it touches. The API checks the role again.
 */

/** The roles every organization has; a configured one a member holds is offered too. */
const BUILT_IN_ROLES = ['owner', 'admin', 'member'];

/** The shell's helpers, lent at each drawing (kit.ts). */
let kit: ConsoleKit;
const draw: ConsoleKit['draw'] = (...a) => kit.draw(...a);
const table: ConsoleKit['table'] = (...a) => kit.table(...a);
const problemText: ConsoleKit['problemText'] = (e) => kit.problemText(e);
const confirmThen: ConsoleKit['confirmThen'] = (...a) => kit.confirmThen(...a);
const route: ConsoleKit['route'] = () => kit.route();

function refusal(err: unknown): string {
  if (err instanceof ConsoleProblem) {
    if (err.code === 'organization.last_owner') return tx('lastOwner');
    if (err.code === 'organization.domain_taken') return tx('domainTaken');
    if (err.code === 'admin.organization_disabled') return tx('orgDisabled');
    if (err.code === 'rate_limit.exceeded') return tx('tooManyMessages');
    if (err.code.startsWith('identity.identifier_') || err.code === 'validation.failed')
      return tx('unusableAddress');
  }
  return problemText(err);
}

/** A button that confirms, acts, announces, and draws the page again. */
function act(label: string, name: string, question: string, run: () => Promise<unknown>, done: string) {
  return h(
    'button',
    {
      type: 'button',
      class: 'button secondary',
      'aria-label': name,
      onclick: () =>
        confirmThen(
          question,
          async () => {
            await run();
            announce(done);
            void route();
          },
          refusal,
        ),
    },
    label,
  );
}

export async function organizationPage(id: string, op: Operator, shell: ConsoleKit): Promise<void> {
  kit = shell;
  const [{ data: org }, members, invitations, domains, connections, tokens] = await Promise.all([
    orgAdmin.organization(id),
    orgAdmin.members(id),
    orgAdmin.invitations(id),
    orgAdmin.domains(id),
    orgAdmin.connections(id),
    orgAdmin.scimTokens(id),
  ]);
  const owner = op.role === 'owner';
  const name = org.name;
  const status = org.disabledAt ? 'disabled' : 'active';
  draw(
    t('organization', { name }),
    h('p', null, h('a', { href: '#/organizations' }, tx('back'))),
    h(
      'p',
      { class: 'person-meta' },
      h('span', { class: `badge status-${status}` }, t(status)),
      ' ',
      h('code', null, org.slug),
      ' · ',
      tx('memberCount', { count: org.memberCount }),
      ' · ',
      t('colCreated'),
      ' ',
      formatDate(org.createdAt),
    ),
    owner ? null : h('p', { class: 'hint' }, tx('readOnly')),
    h('h2', null, tx('policy')),
    h(
      'p',
      { id: 'policy-second-factor' },
      tx('requireSecondFactor', { value: org.requireSecondFactor ? t('yes') : t('no') }),
    ),
    owner
      ? h(
          'div',
          { class: 'actions' },
          act(
            org.requireSecondFactor ? tx('requireOff') : tx('requireOn'),
            org.requireSecondFactor ? tx('requireOff') : tx('requireOn'),
            org.requireSecondFactor
              ? tx('confirmRequireOff', { org: name })
              : tx('confirmRequireOn', { org: name }),
            () => orgAdmin.update(id, { requireSecondFactor: !org.requireSecondFactor }),
            tx('policyChanged', { org: name }),
          ),
        )
      : null,
    h('h2', null, t('members')),
    table(
      t('members'),
      owner
        ? [tx('colMember'), t('colRole'), tx('colJoined'), tx('colActs')]
        : [tx('colMember'), t('colRole'), tx('colJoined')],
      members.data.map((m) => {
        const who = m.identifier?.value ?? m.identityId;
        const row: (Node | string)[] = [
          h('a', { href: `#/people/${m.identityId}` }, who),
          m.role,
          formatDate(m.joinedAt),
        ];
        if (owner) row.push(memberActs(id, name, m.identityId, who, m.role));
        return row;
      }),
    ),
    members.meta.pageInfo.hasNextPage ? h('p', { class: 'hint' }, tx('moreMembers')) : null,
    h('h2', null, tx('invitations')),
    invitations.data.length
      ? table(
          tx('invitations'),
          [
            t('colIdentifiers'),
            t('colRole'),
            tx('colInvited'),
            tx('colExpires'),
            ...(owner ? [tx('colActs')] : []),
          ],
          invitations.data.map((i) => invitationRow(id, name, i, owner)),
        )
      : h('p', null, tx('noInvitations')),
    owner
      ? inviteForm(
          id,
          name,
          members.data.map((m) => m.role),
        )
      : null,
    h('h2', null, tx('domains')),
    domains.data.length
      ? table(
          tx('domains'),
          [tx('colDomain'), t('colVerified'), tx('colVerifiedBy'), ...(owner ? [tx('colActs')] : [])],
          domains.data.map((d) => domainRow(id, name, d, owner)),
        )
      : h('p', null, tx('noDomains')),
    h('h2', null, tx('connections')),
    connections.data.length
      ? table(
          tx('connections'),
          [
            t('colName'),
            tx('colType'),
            tx('colDefaultRole'),
            tx('colEnabled'),
            ...(owner ? [tx('colActs')] : []),
          ],
          connections.data.map((c) => connectionRow(id, name, c, owner)),
        )
      : h('p', null, tx('noConnections')),
    // An operator's connection test: started by a row's Test, its result shown here when asked.
    owner ? h('div', { id: 'connection-test' }) : null,
    h('h2', null, tx('scim')),
    scimSection(id, name, tokens.data, owner),
    owner ? scimCreateForm(id) : null,
  );
}

function memberActs(id: string, org: string, identityId: string, who: string, current: string): HTMLElement {
  const selectId = `role-${identityId}`;
  const roles = BUILT_IN_ROLES.includes(current) ? BUILT_IN_ROLES : [...BUILT_IN_ROLES, current];
  const select = h(
    'select',
    { id: selectId, name: 'role', 'aria-label': tx('roleOf', { who }) },
    roles.map((r) => h('option', { value: r, selected: r === current }, r)),
  ) as HTMLSelectElement;
  return h(
    'div',
    { class: 'actions' },
    select,
    h(
      'button',
      {
        type: 'button',
        class: 'button secondary',
        'aria-label': tx('changeRoleOf', { who }),
        onclick: () => {
          const role = select.value;
          confirmThen(
            tx('confirmRole', { who, role, org }),
            async () => {
              await orgAdmin.setRole(id, identityId, role);
              announce(tx('roleChanged', { who, role }));
              void route();
            },
            refusal,
          );
        },
      },
      tx('changeRole'),
    ),
    act(
      tx('remove'),
      tx('removeOf', { who }),
      tx('confirmRemove', { who, org }),
      () => orgAdmin.removeMember(id, identityId),
      tx('removed', { who, org }),
    ),
  );
}

function invitationRow(id: string, org: string, i: Invitation, owner: boolean): (Node | string)[] {
  const row: (Node | string)[] = [i.identifier, i.role, formatDate(i.createdAt), formatDate(i.expiresAt)];
  if (owner)
    row.push(
      act(
        tx('revoke'),
        tx('revokeOf', { who: i.identifier }),
        tx('confirmRevoke', { who: i.identifier, org }),
        () => orgAdmin.revokeInvitation(id, i.id),
        tx('revoked', { who: i.identifier }),
      ),
    );
  return row;
}

/**
 * An owner's invitation (POST /admin/v1/organizations/{id}/invitations): an address or a number
 * (`@`: an email) and a role, confirmed naming the address, the organization and the role; the
 * page is drawn again with the invitation pending, and a message that could not be sent is said.
 */
function inviteForm(id: string, org: string, held: string[]): HTMLElement {
  const error = h('p', { class: 'alert', role: 'alert' });
  const roles = [...new Set([...BUILT_IN_ROLES, ...held])];
  const who = h('input', {
    id: 'invite-who',
    name: 'invite-who',
    type: 'text',
    required: true,
    maxlength: 320,
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'invite-who-hint',
  }) as HTMLInputElement;
  const country = h('input', {
    id: 'invite-country',
    name: 'invite-country',
    type: 'text',
    maxlength: 2,
    autocomplete: 'off',
    spellcheck: 'false',
    'aria-describedby': 'invite-country-hint',
  }) as HTMLInputElement;
  const role = h(
    'select',
    { id: 'invite-role', name: 'invite-role' },
    roles.map((r) => h('option', { value: r, selected: r === 'member' }, r)),
  ) as HTMLSelectElement;
  return h(
    'form',
    {
      class: 'webhook-form',
      'aria-labelledby': 'invite-title',
      onsubmit: (e: Event) => {
        e.preventDefault();
        error.textContent = '';
        const identifier = who.value.trim();
        if (!identifier) return;
        const chosen = role.value;
        const email = identifier.includes('@');
        const region = country.value.trim().toUpperCase();
        if (!email && !/^[A-Z]{2}$/.test(region)) {
          error.textContent = tx('inviteCountryNeeded');
          country.focus();
          return;
        }
        confirmThen(
          tx('confirmInvite', { who: identifier, org, role: chosen }),
          async () => {
            const { data } = await orgAdmin.invite(
              id,
              email
                ? { identifierType: 'email', identifier, role: chosen }
                : { identifierType: 'phone', identifier, country: region, role: chosen },
            );
            await route();
            if (data.delivery.status === 'DELIVERED') announce(tx('invited', { who: identifier }));
            else
              document
                .getElementById('main')
                ?.prepend(kit.alertBox(tx('inviteNotDelivered', { who: identifier })));
          },
          refusal,
        );
      },
    },
    h('h3', { id: 'invite-title' }, tx('inviteTitle')),
    error,
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'invite-who' }, tx('inviteWho')),
      h('p', { class: 'hint', id: 'invite-who-hint' }, tx('inviteWhoHint')),
      who,
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'invite-country' }, tx('inviteCountry')),
      h('p', { class: 'hint', id: 'invite-country-hint' }, tx('inviteCountryHint')),
      country,
    ),
    h('div', { class: 'field' }, h('label', { for: 'invite-role' }, tx('inviteRole')), role),
    h('button', { type: 'submit', class: 'button' }, tx('invite')),
  );
}

function domainRow(id: string, org: string, d: Domain, owner: boolean): (Node | string)[] {
  const row: (Node | string)[] = [
    d.domain,
    d.verifiedAt ? formatDate(d.verifiedAt) : tx('notYetVerified'),
    d.verifiedBy ? tx(`verifiedBy_${d.verifiedBy}`) : '—',
  ];
  if (owner)
    row.push(
      d.verifiedAt
        ? ''
        : act(
            tx('verifyDomain'),
            tx('verifyOf', { domain: d.domain }),
            tx('confirmVerify', { domain: d.domain, org }),
            () => orgAdmin.verifyDomain(id, d.id),
            tx('domainVerified', { domain: d.domain }),
          ),
    );
  return row;
}

function connectionRow(id: string, org: string, c: Connection, owner: boolean): (Node | string)[] {
  const row: (Node | string)[] = [
    c.name,
    c.type.toUpperCase(),
    c.defaultRole,
    c.enabled ? t('yes') : t('no'),
  ];
  if (owner)
    row.push(
      act(
        c.enabled ? tx('disable') : tx('enable'),
        c.enabled ? tx('disableOf', { name: c.name }) : tx('enableOf', { name: c.name }),
        c.enabled ? tx('confirmDisable', { name: c.name, org }) : tx('confirmEnable', { name: c.name, org }),
        () => orgAdmin.setConnectionEnabled(id, c.id, !c.enabled),
        tx('connectionChanged', { name: c.name }),
      ),
      ' ',
      testButton(id, c),
    );
  return row;
}

/**
 * Test a connection (docs/sso.md, "By an operator"): the admin API gives a single-use start URL on
 * the public origin, opened here in a new tab (opened at the click, so no popup blocker stops it,
 * and cut from this page: no opener); the operator signs in at the IdP there, comes back and asks
 * for the result, which the API shows to the operator who started the test only.
 */
function testButton(id: string, c: Connection): HTMLElement {
  return h(
    'button',
    {
      type: 'button',
      class: 'button secondary',
      'aria-label': tx('testConnectionOf', { name: c.name }),
      onclick: async () => {
        const panel = document.getElementById('connection-test');
        if (!panel) return;
        const tab = window.open('', '_blank');
        if (tab) tab.opener = null;
        try {
          const { data } = await orgAdmin.startConnectionTest(id, c.id);
          if (tab) tab.location.href = data.startUrl;
          testStarted(panel, c.name, data.id, tab ? null : data.startUrl);
        } catch (err) {
          tab?.close();
          panel.replaceChildren(h('p', { class: 'alert', role: 'alert' }, problemText(err)));
        }
      },
    },
    tx('testConnection'),
  );
}

function testStarted(panel: HTMLElement, name: string, testId: string, fallbackUrl: string | null): void {
  const result = h('div', { id: 'connection-test-result', 'aria-live': 'polite' });
  const show = h(
    'button',
    {
      type: 'button',
      class: 'button',
      onclick: async () => {
        try {
          const { data } = await orgAdmin.connectionTestResult(testId);
          result.replaceChildren(testResult(data));
        } catch (err) {
          if (err instanceof ConsoleProblem && err.code === 'organization.connection_test_not_found')
            result.replaceChildren(h('p', { role: 'status' }, tx('testPending')));
          else result.replaceChildren(h('p', { class: 'alert', role: 'alert' }, problemText(err)));
        }
      },
    },
    tx('showResult'),
  );
  panel.replaceChildren(
    h(
      'p',
      { role: 'status' },
      fallbackUrl ? tx('testBlocked', { url: fallbackUrl }) : tx('testStarted', { name }),
    ),
    h('p', null, show),
    result,
  );
}

function testResult(r: ConnectionTestResult): HTMLElement {
  const text = (v: unknown) =>
    Array.isArray(v) && v.every((x) => typeof x === 'string')
      ? v.join(', ')
      : typeof v === 'string'
        ? v
        : JSON.stringify(v);
  const attributes = Object.entries(r.attributes);
  return h(
    'div',
    null,
    h('h3', { id: 'connection-test-title' }, tx('testResult', { name: r.connection.name })),
    h(
      'p',
      { id: 'connection-test-summary', 'data-passed': String(r.passed) },
      r.passed ? tx('testPassed') : tx('testFailed'),
    ),
    h(
      'dl',
      null,
      h('dt', null, tx('testSubject')),
      h('dd', { id: 'connection-test-subject' }, r.subject ?? tx('testNone')),
      h('dt', null, tx('testEmail')),
      h('dd', { id: 'connection-test-email' }, r.email ?? tx('testNone')),
    ),
    table(
      tx('testChecks'),
      [tx('colCheck'), tx('colPassed')],
      r.checks.map((c) => [
        tx(`check_${c.check}` as Parameters<typeof tx>[0]),
        `${c.passed ? t('yes') : t('no')}${c.reason ? ` (${c.reason})` : ''}`,
      ]),
    ),
    h('h4', null, tx('testAttributes')),
    attributes.length
      ? table(
          tx('testAttributes'),
          [tx('colAttribute'), tx('colValue')],
          attributes.map(([k, v]) => [k, text(v)]),
        )
      : h('p', null, tx('testNone')),
  );
}

function scimSection(id: string, org: string, tokens: ScimToken[], owner: boolean): HTMLElement {
  const live = tokens.filter((k) => !k.revokedAt);
  return h(
    'div',
    null,
    h('p', { id: 'scim-status' }, tx('scimActive', { count: live.length })),
    tokens.length
      ? table(
          tx('scim'),
          [
            tx('colTokenName'),
            t('colCreated'),
            tx('colLastUsed'),
            tx('colRevoked'),
            ...(owner ? [tx('colActs')] : []),
          ],
          tokens.map((k) => {
            const row: (Node | string)[] = [
              k.name,
              formatDate(k.createdAt),
              k.lastUsedAt ? formatDate(k.lastUsedAt) : tx('never'),
              k.revokedAt ? formatDate(k.revokedAt) : '—',
            ];
            if (owner)
              row.push(
                k.revokedAt
                  ? ''
                  : act(
                      tx('revoke'),
                      tp('scimRevokeOf', { name: k.name }),
                      tp('scimConfirmRevoke', { name: k.name, org }),
                      () => orgAdmin.revokeScimToken(id, k.id),
                      tp('scimRevoked', { name: k.name }),
                    ),
              );
            return row;
          }),
        )
      : null,
  );
}

/** An owner's form for a new token: its secret shown once, in a dialog, over the page drawn again. */
function scimCreateForm(id: string): HTMLElement {
  const error = h('p', { class: 'alert', role: 'alert' });
  const input = h('input', {
    id: 'scim-token-name',
    name: 'scim-token-name',
    type: 'text',
    required: true,
    maxlength: 100,
    autocomplete: 'off',
    'aria-describedby': 'scim-token-name-hint',
  });
  return h(
    'form',
    {
      class: 'webhook-form',
      'aria-labelledby': 'scim-create-title',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = '';
        const label = input.value.trim();
        if (!label) return;
        try {
          const { data } = await orgAdmin.createScimToken(id, label);
          await route();
          showOnce({
            title: tp('scimTokenTitle', { name: data.name }),
            once: tp('scimTokenOnce'),
            value: data.token,
            id: 'scim-token',
          });
        } catch (err) {
          error.textContent = problemText(err);
        }
      },
    },
    h('h3', { id: 'scim-create-title' }, tp('scimCreateTitle')),
    error,
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'scim-token-name' }, tp('scimNameLabel')),
      h('p', { class: 'hint', id: 'scim-token-name-hint' }, tp('scimNameHint')),
      input,
    ),
    h('button', { type: 'submit', class: 'button' }, tp('scimCreate')),
  );
}
