import {
  api,
  asProblem,
  type Organization,
  type OrganizationMember,
  organizations,
  type PendingInvitation,
} from '../api.js';
import { field, formatDate, h, uid } from '../dom.js';
import { actionButton, alertBox, makeForm } from '../forms.js';
import { identifierField } from '../identifier.js';
import { rememberRoles, roleName, t } from '../messages/organizations.js';
import { go, type PageContent } from '../router.js';
import { inOwnWords, setFlash, switchOrganization } from './organizations.js';
import { directoryCard } from './organizations-directory.js';
import { ssoCard } from './organizations-sso.js';
import { card, confirmButton, saySuccess } from './security/common.js';

/**
 * The roles the caller may hand out, as the service answered them (the built-in ones and those of
 * ORGANIZATION_ROLES; only an owner hands out owner, and nobody a role with a permission they lack),
 * and the member's current one.
 */
function grantable(org: Organization, current?: string): string[] {
  const roles = org.roles.filter((r) => r.assignable).map((r) => r.name);
  if (current && !roles.includes(current)) roles.push(current);
  return roles;
}

function roleSelect(
  label: string,
  roles: string[],
  selected: string,
): { wrap: HTMLElement; select: HTMLSelectElement } {
  const id = uid('role');
  const select = h(
    'select',
    { id, name: 'role' },
    roles.map((r) => h('option', { value: r, selected: r === selected }, roleName(r))),
  );
  select.value = selected;
  return { wrap: h('div', { class: 'field org-role' }, h('label', { for: id }, label), select), select };
}

const lastOwner = () => ({ 'organization.last_owner': t('members.lastOwner') });

/**
 * #/organizations/<id>: the caller's role and whether they act here; the members (role, change
 * role, remove with a confirmation, leave), the pending invitations (revoke) and "Invite" for
 * those allowed (members:invite); the settings (rename, require a second factor) for
 * organization:update. Each action redraws the page's cards and says what it did.
 */
export async function organizationPage(id: string): Promise<PageContent> {
  const back = h('p', { class: 'back-link' }, h('a', { href: '#/organizations' }, t('back')));
  let org: Organization;
  try {
    org = await organizations.get(id);
  } catch (error) {
    if (asProblem(error).code !== 'organization.not_found' && asProblem(error).status !== 400) throw error;
    return {
      title: t('list.title'),
      body: [back, h('p', { class: 'alert', role: 'alert' }, t('org.notFound'))],
    };
  }
  const body = h('div');
  const draw = async (fresh: boolean) => {
    if (fresh) org = await organizations.get(id);
    rememberRoles(org.roles);
    const context = await api.context();
    const can = (p: string) => org.permissions.includes(p);
    const [members, invitations] = await Promise.all([
      can('members:read') ? organizations.members(id) : Promise.resolve(null),
      can('members:invite') ? organizations.invitations(id).catch(() => null) : Promise.resolve(null),
    ]);
    const active = context.organizations.some((o) => o.id === id && o.active);
    body.replaceChildren(
      summaryCard(org, active),
      members ? membersCard(org, members, context.identityId, draw) : '',
      can('members:invite') ? invitationsCard(org, invitations, draw) : '',
      can('organization:update') ? settingsCard(org, draw) : '',
      // Single sign-on: the connections and the domains they speak for (owners and admins).
      can('connections:manage') ? await ssoCard(org) : '',
      // Directory: the SCIM base URL and tokens (owners).
      can('directory:manage') ? await directoryCard(org) : '',
    );
  };
  await draw(false);
  return { title: t('org.title', { name: org.name }), body: [back, body] };
}

type Redraw = (fresh: boolean) => Promise<void>;

function summaryCard(org: Organization, active: boolean): HTMLElement {
  const alert = alertBox();
  return h(
    'section',
    { class: 'card', 'aria-label': org.name, id: 'org-summary' },
    h('p', { id: 'org-role' }, t('org.yourRole', { role: roleName(org.role) })),
    org.role === 'owner'
      ? h(
          'p',
          null,
          h('a', { href: `#/organizations/${org.id}/transfer`, id: 'transfer-link' }, t('transfer.link')),
        )
      : null,
    alert,
    active
      ? h('p', { class: 'hint' }, t('org.isActive'))
      : h(
          'div',
          { class: 'actions' },
          actionButton(t('org.activate'), alert, () => switchOrganization({ id: org.id, name: org.name })),
        ),
  );
}

function membersCard(
  org: Organization,
  members: OrganizationMember[],
  me: string,
  draw: Redraw,
): HTMLElement {
  const { el } = card('members', t('members.title'));
  const alert = alertBox();
  const manage = org.permissions.includes('members:manage');
  // The only owner may not leave (409 organization.last_owner): not offered, the way out said.
  const owners = members.filter((m) => m.role === 'owner').length;
  const list = h(
    'ul',
    { class: 'items', id: 'member-list' },
    members.map((m) => {
      // Owners and admins are answered each member's name and address as they are; others the
      // address masked and no name (docs/organizations.md, "Roles and permissions").
      const name = m.name ?? m.display ?? t('members.unnamed');
      const address = m.name && m.display ? m.display : null;
      const self = m.identityId === me;
      const actions: HTMLElement[] = [];
      if (self && m.role === 'owner' && owners <= 1) {
        actions.push(h('p', { class: 'hint sole-owner' }, t('members.soleOwner')));
      } else if (self) {
        actions.push(
          confirmButton({
            label: t('members.leave'),
            question: t('members.leaveQuestion', { org: org.name }),
            detail: t('members.leaveDetail'),
            confirm: t('members.leave'),
            alert,
            async run() {
              try {
                await organizations.leave(org.id);
              } catch (error) {
                throw inOwnWords(error, lastOwner());
              }
              setFlash(t('members.left', { org: org.name }), true);
              go('/organizations');
            },
          }),
        );
      } else if (manage) {
        const picker = roleSelect(t('members.role', { name }), grantable(org, m.role), m.role);
        picker.wrap.querySelector('label')?.classList.add('visually-hidden');
        actions.push(
          picker.wrap,
          actionButton(
            t('members.change'),
            alert,
            async () => {
              const role = picker.select.value;
              if (role === m.role) return;
              try {
                await organizations.changeRole(org.id, m.identityId, role);
              } catch (error) {
                throw inOwnWords(error, lastOwner());
              }
              await draw(true);
              const box = document.getElementById('members');
              if (box) saySuccess(box, t('members.changed', { name, role: roleName(role) }));
            },
            'secondary',
            { 'aria-label': t('members.changeLabel', { name }) },
          ),
          confirmButton({
            label: t('members.remove'),
            ariaLabel: t('members.removeLabel', { name }),
            question: t('members.removeQuestion', { name, org: org.name }),
            detail: t('members.removeDetail'),
            confirm: t('members.remove'),
            alert,
            async run() {
              try {
                await organizations.removeMember(org.id, m.identityId);
              } catch (error) {
                throw inOwnWords(error, lastOwner());
              }
              await draw(true);
              const members = document.getElementById('members');
              if (members) saySuccess(members, t('members.removed', { name }));
            },
          }),
        );
      }
      return h(
        'li',
        { 'data-identity': m.identityId },
        h(
          'span',
          { class: 'item-main' },
          h('span', { class: 'identifier' }, self ? t('members.you', { display: name }) : name),
          address ? h('span', { class: 'item-meta member-address' }, address) : null,
          h(
            'span',
            { class: 'item-meta member-role' },
            t('members.meta', { role: roleName(m.role), when: formatDate(m.joinedAt) }),
          ),
        ),
        actions.length ? h('div', { class: 'actions member-actions' }, actions) : null,
      );
    }),
  );
  el.append(alert, list);
  return el;
}

function invitationsCard(
  org: Organization,
  invitations: PendingInvitation[] | null,
  draw: Redraw,
): HTMLElement {
  const { el } = card('invitations', t('invitations.title'));
  const alert = alertBox();
  const pending =
    invitations === null
      ? null
      : invitations.length
        ? h(
            'ul',
            { class: 'items', id: 'invitation-list' },
            invitations.map((i) =>
              h(
                'li',
                null,
                h(
                  'span',
                  { class: 'item-main' },
                  h('span', { class: 'identifier' }, i.identifier),
                  h(
                    'span',
                    { class: 'item-meta' },
                    t('invitations.meta', { role: roleName(i.role), when: formatDate(i.expiresAt) }),
                  ),
                ),
                confirmButton({
                  label: t('invitations.revoke'),
                  ariaLabel: t('invitations.revokeLabel', { name: i.identifier }),
                  question: t('invitations.revokeQuestion', { name: i.identifier }),
                  detail: t('invitations.revokeDetail'),
                  confirm: t('invitations.revoke'),
                  alert,
                  async run() {
                    await organizations.revokeInvitation(org.id, i.id);
                    await draw(false);
                    const box = document.getElementById('invitations');
                    if (box) saySuccess(box, t('invitations.revoked', { name: i.identifier }));
                  },
                }),
              ),
            ),
          )
        : h('p', { id: 'invitation-list' }, t('invitations.none'));
  const who = identifierField('recover');
  // Someone else's address: nothing of the person's own to fill in.
  who.input.autocomplete = 'off';
  const role = roleSelect(t('invite.role'), grantable(org), 'member');
  const form = makeForm({
    fields: [who],
    extra: [role.wrap],
    submit: t('invite.submit'),
    async onSubmit() {
      const sent = await organizations.invite(org.id, who.value(), role.select.value);
      await draw(false);
      const box = document.getElementById('invitations');
      if (box) saySuccess(box, t('invite.sent', { name: sent.identifier }));
    },
  });
  el.append(
    alert,
    pending ?? '',
    h('h3', { id: 'invite-title' }, t('invite.title')),
    h('p', { class: 'hint' }, t('invite.intro')),
    form.el,
  );
  form.el.setAttribute('aria-labelledby', 'invite-title');
  return el;
}

function settingsCard(org: Organization, draw: Redraw): HTMLElement {
  const { el } = card('org-settings', t('settings.title'));
  const name = field({ label: t('settings.name'), name: 'name', maxlength: 100, value: org.name });
  const boxId = uid('require');
  const checkbox = h('input', {
    type: 'checkbox',
    id: boxId,
    name: 'requireSecondFactor',
    'aria-describedby': `${boxId}-hint`,
  });
  checkbox.checked = org.requireSecondFactor;
  // One form, one "Save": what changed is sent in one PATCH (If-Match: the version shown).
  const form = makeForm({
    fields: [name],
    extra: [
      h(
        'div',
        { class: 'field checkbox-field' },
        h('div', { class: 'checkbox-row' }, checkbox, h('label', { for: boxId }, t('settings.secondFactor'))),
        h('p', { class: 'hint', id: `${boxId}-hint` }, t('settings.secondFactorHint')),
      ),
    ],
    submit: t('settings.save'),
    async onSubmit() {
      const next = name.input.value.trim();
      const patch: { name?: string; requireSecondFactor?: boolean } = {};
      if (next !== org.name) patch.name = next;
      if (checkbox.checked !== org.requireSecondFactor) patch.requireSecondFactor = checkbox.checked;
      if (Object.keys(patch).length > 0) await organizations.update(org.id, patch);
      if (patch.name !== undefined) {
        // The page's title is the name: drawn again whole.
        setFlash(t('settings.renamed', { name: next }), true);
        go(`/organizations/${org.id}`);
        return;
      }
      await draw(true);
      const box = document.getElementById('org-settings');
      if (box) saySuccess(box, t('settings.saved'));
    },
  });
  el.append(form.el);
  return el;
}
