import { asProblem, type OrganizationMembership, organizations } from '../api.js';
import { announce, field, h, uid } from '../dom.js';
import { makeForm } from '../forms.js';
import { roleName, t } from '../messages/organizations.js';
import { messageFor } from '../problems.js';
import { go, type PageContent } from '../router.js';

/*
 * Organizations in the hosted pages (docs/organizations.md): the switcher in the frame, the list
 * with "Create an organization", and the words shared by the members and invitation pages.
 */

/** A line for the next page drawn (after a switch refused, a member who left): shown once. */
let flash: { text: string; ok: boolean } | null = null;
export const setFlash = (text: string, ok: boolean) => {
  flash = { text, ok };
};
export function takeFlash(): HTMLElement | null {
  if (!flash) return null;
  const { text, ok } = flash;
  flash = null;
  return ok
    ? h('p', { class: 'notice', role: 'status' }, text)
    : h('p', { class: 'alert', role: 'alert' }, text);
}

/**
 * An organization refusal in the person's words: a known code becomes the catalogue's sentence
 * (an Error whose message the forms show as it is); anything else goes on unchanged.
 */
export function inOwnWords(error: unknown, words: Record<string, string>): unknown {
  const code = asProblem(error).code;
  return code && code in words ? new Error(words[code]) : error;
}

/**
 * Acts in `org` (null: in none). Refused for want of a second factor, the person is taken to
 * Security → 2-step verification with the reason on top of the page.
 */
export async function switchOrganization(org: { id: string; name: string } | null): Promise<void> {
  try {
    await organizations.switchTo(org?.id ?? null);
  } catch (error) {
    if (org && asProblem(error).code === 'organization.second_factor_required') {
      setFlash(t('switcher.secondFactor', { name: org.name }), false);
      go('/security/two-step');
      return;
    }
    throw error;
  }
  announce(org ? t('switcher.switched', { name: org.name }) : t('switcher.switchedPersonal'));
  // The page is drawn again with the new token (its role, its menu).
  go(location.hash.replace(/^#/, '') || '/');
}

/**
 * The switcher, a disclosure in the frame's list (so the phone's Menu holds it too): the button
 * names where the person acts; it opens the choices (Personal, then each organization with the
 * role), the one in use marked, and a link to all organizations. Filled once the list is had.
 */
export function organizationSwitcher(): HTMLElement {
  const item = h('li', { class: 'org-switcher' });
  shown = item;
  refreshSwitcher();
  return item;
}

/** The switcher in the frame now. */
let shown: HTMLElement | null = null;

/** Asks the list again (after joining an organization on a page that stays). */
export function refreshSwitcher(): void {
  const item = shown;
  if (!item) return;
  void organizations
    .list()
    .then((list) => {
      if (item === shown && item.isConnected) fillSwitcher(item, list);
    })
    .catch(() => undefined); // Without the list, no switcher: the pages still work.
}

function fillSwitcher(item: HTMLElement, list: OrganizationMembership[]): void {
  const active = list.find((o) => o.active) ?? null;
  const panelId = uid('org-switcher');
  const toggle = h(
    'button',
    { type: 'button', class: 'link org-switcher-toggle', 'aria-expanded': 'false', 'aria-controls': panelId },
    t('switcher.label', { name: active ? active.name : t('switcher.personal') }),
  );
  const status = h('p', { class: 'alert', role: 'alert', hidden: true });
  const choice = (label: string, current: boolean, org: OrganizationMembership | null) => {
    const b = h(
      'button',
      { type: 'button', class: 'link', 'aria-current': current ? 'true' : undefined },
      label,
    );
    b.addEventListener('click', async () => {
      if (current) {
        close();
        return;
      }
      b.disabled = true;
      status.hidden = true;
      try {
        await switchOrganization(org);
      } catch (error) {
        status.textContent = messageFor(asProblem(error));
        status.hidden = false;
        b.disabled = false;
      }
    });
    return h('li', null, b);
  };
  const panel = h(
    'div',
    { id: panelId, class: 'org-switcher-panel', hidden: true },
    h('p', { class: 'hint' }, t('switcher.choose')),
    status,
    h(
      'ul',
      { class: 'org-choices' },
      choice(t('switcher.personal'), !active, null),
      list.map((o) => choice(t('switcher.option', { name: o.name, role: roleName(o.role) }), o.active, o)),
      h('li', null, h('a', { href: '#/organizations' }, t('switcher.all'))),
    ),
  );
  const close = () => {
    panel.hidden = true;
    toggle.setAttribute('aria-expanded', 'false');
  };
  toggle.addEventListener('click', () => {
    const open = panel.hidden;
    panel.hidden = !open;
    toggle.setAttribute('aria-expanded', String(open));
  });
  panel.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || panel.hidden) return;
    event.stopPropagation();
    close();
    toggle.focus();
  });
  item.replaceChildren(toggle, panel);
}

/** A slug suggested from a name: lowercase letters and digits, the rest one hyphen. */
function slugFrom(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/, '');
}

/** #/organizations: the person's organizations (name, slug, role, the active one) and "Create". */
export async function organizationsPage(): Promise<PageContent> {
  const list = await organizations.list();
  const name = field({ label: t('create.name'), name: 'name', maxlength: 100, autocomplete: 'organization' });
  const slug = field({
    label: t('create.slug'),
    name: 'slug',
    minlength: 2,
    maxlength: 48,
    hint: t('create.slugHint'),
  });
  slug.input.spellcheck = false;
  slug.input.setAttribute('autocapitalize', 'none');
  // The slug follows the name until the person types one of their own.
  let own = false;
  slug.input.addEventListener('input', () => {
    own = slug.input.value !== '';
  });
  name.input.addEventListener('input', () => {
    if (!own) slug.input.value = slugFrom(name.input.value);
  });
  const form = makeForm({
    fields: [name, slug],
    submit: t('create.submit'),
    async onSubmit() {
      try {
        const created = await organizations.create(name.input.value.trim(), slug.input.value.trim());
        // The new organization becomes the one the person acts in (a new one requires no second
        // factor); were the switch refused, the organization is still created and shown.
        const acting = await organizations
          .switchTo(created.id)
          .then(() => true)
          .catch(() => false);
        setFlash(
          acting
            ? t('create.createdActive', { name: created.name })
            : t('create.created', { name: created.name }),
          true,
        );
        go(`/organizations/${created.id}`);
      } catch (error) {
        if (asProblem(error).code === 'organization.slug_taken') slug.setError(t('create.taken'));
        throw inOwnWords(error, {
          'organization.slug_taken': t('create.taken'),
          'organization.creation_disabled': t('create.disabled'),
        });
      }
    },
  });
  return {
    title: t('list.title'),
    body: [
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'orgs-title' },
        h('h2', { id: 'orgs-title', class: 'visually-hidden' }, t('list.title')),
        h('p', { class: 'hint' }, t('list.intro')),
        list.length
          ? h(
              'ul',
              { class: 'items', id: 'organizations' },
              list.map((o) => organizationItem(o, t('list.meta', { slug: o.slug, role: roleName(o.role) }))),
            )
          : h('p', { id: 'organizations' }, t('list.none')),
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'create-title' },
        h('h2', { id: 'create-title' }, t('create.title')),
        form.el,
      ),
    ],
  };
}

/** One organization in a list: its name linking to its page, a line about it, and "Active". */
function organizationItem(o: { id: string; name: string; active: boolean }, meta: string): HTMLElement {
  return h(
    'li',
    null,
    h(
      'span',
      { class: 'item-main' },
      h('a', { class: 'item-title', href: `#/organizations/${o.id}` }, o.name),
      h('span', { class: 'item-meta' }, meta),
    ),
    o.active ? h('span', { class: 'badge' }, t('list.active')) : null,
  );
}

/** The home page's card: the person's organizations with their role there. */
export function homeOrganizations(
  list: readonly { id: string; name: string; role: string; active: boolean }[],
) {
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'home-orgs-title' },
    h('h2', { id: 'home-orgs-title' }, t('home.title')),
    list.length
      ? h(
          'ul',
          { class: 'items', id: 'home-organizations' },
          list.map((o) => organizationItem(o, t('home.role', { role: roleName(o.role) }))),
        )
      : h('p', { id: 'home-organizations' }, t('home.none')),
    h('p', null, h('a', { href: '#/organizations' }, t('home.manage'))),
  );
}
