import { type AccountOverview, api, asProblem } from '../api.js';
import { field, formatDate, h } from '../dom.js';
import { actionButton, alertBox, makeForm } from '../forms.js';
import { t } from '../messages/account.js';
import { messageFor } from '../problems.js';
import type { PageContent } from '../router.js';
import { homeOrganizations } from './organizations.js';
import { type Nudge, nudgesOf } from './security/nudges.js';

const METHODS = [
  'password',
  'email',
  'phone',
  'provider',
  'passkey',
  'recovery_code',
  'second_factor',
  'code',
] as const;
type MethodKey = `method.${(typeof METHODS)[number]}`;

/** A sign-in method's name in the person's language ("totp" is the authenticator app). */
export function methodName(kind: string): string {
  const key = kind === 'totp' ? 'second_factor' : kind;
  return (METHODS as readonly string[]).includes(key) ? t(`method.${key}` as MethodKey) : kind;
}

/** Where each suggestion of Security is done, and what the home page calls it. */
const TODO: Record<
  Nudge,
  { href: string; key: 'security.twoStepTodo' | 'security.recoveryTodo' | 'security.recoveryFewTodo' }
> = {
  'two-step': { href: '#/security/two-step', key: 'security.twoStepTodo' },
  'recovery-codes': { href: '#/security/recovery-codes', key: 'security.recoveryTodo' },
  'recovery-codes-few': { href: '#/security/recovery-codes', key: 'security.recoveryFewTodo' },
};

/**
 * Security in short (issue 46, item 7: the home page no longer repeats the overview): what would
 * make the account safer, each a link to the page that does it, or that nothing needs attention;
 * then the way to the overview itself.
 */
function securitySummary(account: AccountOverview): HTMLElement {
  const nudges = nudgesOf(account);
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'home-security-title', id: 'home-security' },
    h('h2', { id: 'home-security-title' }, t('security.title')),
    nudges.length
      ? [
          h('p', { id: 'home-security-todo' }, t('security.todo', { count: nudges.length })),
          h(
            'ul',
            { class: 'todo', 'aria-labelledby': 'home-security-todo' },
            nudges.map((n) => h('li', null, h('a', { href: TODO[n].href, id: `todo-${n}` }, t(TODO[n].key)))),
          ),
        ]
      : h('p', { class: 'all-set', id: 'home-security-ok' }, t('security.allSet')),
    h('p', null, h('a', { href: '#/security', id: 'home-security-link' }, t('security.review'))),
  );
}

export async function homePage(): Promise<PageContent> {
  // The session context for the methods, the person's own account (unmasked) for the rest.
  const [context, account] = await Promise.all([api.context(), api.account()]);
  return {
    title: t('title'),
    body: [
      nameSection(account),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'ids-title' },
        h('h2', { id: 'ids-title' }, t('ids.title')),
        h('p', { class: 'hint' }, t('ids.hint')),
        h(
          'ul',
          { class: 'items' },
          account.identifiers.map((i) =>
            h(
              'li',
              null,
              h(
                'span',
                { class: 'item-main' },
                h('span', { class: 'identifier' }, i.value),
                h(
                  'span',
                  { class: 'item-meta' },
                  i.verifiedAt
                    ? t('ids.verified', { type: methodName(i.type), when: formatDate(i.verifiedAt) })
                    : t('ids.pending', { type: methodName(i.type) }),
                ),
              ),
            ),
          ),
        ),
      ),
      securitySummary(account),
      // The organizations the person belongs to, with their role in each (the session context).
      homeOrganizations(context.organizations),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'methods-title' },
        h('h2', { id: 'methods-title' }, t('methods.title')),
        h(
          'ul',
          { class: 'items', id: 'methods' },
          context.methods.map((m) => h('li', null, methodName(m))),
        ),
      ),
      exportSection(),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'more-title' },
        h('h2', { id: 'more-title' }, t('activity.title')),
        h(
          'ul',
          null,
          h('li', null, h('a', { href: '#/devices' }, t('activity.devices'))),
          h('li', null, h('a', { href: '#/history' }, t('activity.history'))),
        ),
      ),
    ],
  };
}

/**
 * The person's name (issue 46, item 3): given, family and display name, each optional (an empty
 * field clears it); the apps they sign in to receive it (the OpenID `profile` scope).
 */
function nameSection(account: AccountOverview): HTMLElement {
  const optional = { required: false, maxlength: 100 };
  const given = field({
    ...optional,
    label: t('name.given'),
    name: 'givenName',
    autocomplete: 'given-name',
    value: account.givenName ?? '',
  });
  const family = field({
    ...optional,
    label: t('name.family'),
    name: 'familyName',
    autocomplete: 'family-name',
    value: account.familyName ?? '',
  });
  const display = field({
    ...optional,
    label: t('name.display'),
    name: 'displayName',
    autocomplete: 'nickname',
    hint: t('name.displayHint'),
    value: account.displayName ?? '',
  });
  const status = h('p', { role: 'status', id: 'name-status' });
  const form = makeForm({
    fields: [given, family, display],
    submit: t('name.save'),
    async onSubmit() {
      status.textContent = '';
      const saved = await api.updateName({
        givenName: given.input.value,
        familyName: family.input.value,
        displayName: display.input.value,
      });
      // The service's own values: trimmed, an empty one cleared.
      given.input.value = saved.givenName ?? '';
      family.input.value = saved.familyName ?? '';
      display.input.value = saved.displayName ?? '';
      status.textContent = t('name.saved');
    },
  });
  form.el.id = 'name-form';
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'name-title' },
    h('h2', { id: 'name-title' }, t('name.title')),
    h('p', { class: 'hint' }, t('name.hint')),
    pictureRow(account),
    form.el,
    status,
  );
}

/** The largest file the service takes (PUT /account/picture); larger is refused before sending. */
const PICTURE_MAX_BYTES = 5 * 1024 * 1024;

/**
 * The initials shown without a picture: of the display name, else of the given and family names,
 * else the first letter of the person's first address; at most two letters.
 */
export function initialsOf(account: AccountOverview): string {
  const first = (s: string) => Array.from(s.trim())[0] ?? '';
  const words = (account.displayName ?? '').split(/\s+/u).filter(Boolean);
  const letters = account.displayName
    ? words.length > 1
      ? first(words[0]) + first(words[words.length - 1])
      : first(words[0] ?? '')
    : first(account.givenName ?? '') + first(account.familyName ?? '');
  return (letters || first(account.identifiers[0]?.value ?? '') || '?').toLocaleUpperCase();
}

/**
 * The person's picture (issue 46, item 3): the current one or their initials in a circle, a file
 * input that uploads at once (the service judges the bytes, crops and re-encodes them), and
 * "Remove" while there is one. The refusals in the person's words; the result announced.
 */
function pictureRow(initial: AccountOverview): HTMLElement {
  const alert = alertBox();
  const status = h('p', { role: 'status', id: 'picture-status', class: 'hint' });
  const avatar = h('div', { class: 'avatar', id: 'picture-avatar' });
  const inputId = 'picture-input';
  const input = h('input', {
    id: inputId,
    type: 'file',
    accept: 'image/png,image/jpeg,image/webp,image/gif',
    class: 'visually-hidden',
    'aria-describedby': 'picture-hint',
  });
  const upload = h('label', { for: inputId, class: 'button secondary file-button' }, t('picture.upload'));
  let account = initial;
  const remove = actionButton(
    t('picture.remove'),
    alert,
    async () => {
      status.textContent = '';
      await api.removePicture();
      show({ ...account, picture: null });
      status.textContent = t('picture.removed');
    },
    'secondary',
    { id: 'picture-remove', 'aria-label': t('picture.removeLabel') },
  );
  function show(next: AccountOverview) {
    account = next;
    avatar.replaceChildren(
      next.picture
        ? h('img', { src: next.picture, alt: t('picture.label'), width: '64', height: '64' })
        : h('span', { 'aria-hidden': 'true' }, initialsOf(next)),
    );
    if (!next.picture) avatar.setAttribute('title', t('picture.none'));
    else avatar.removeAttribute('title');
    remove.hidden = !next.picture;
  }
  input.addEventListener('change', async () => {
    const file = input.files?.[0];
    input.value = '';
    if (!file) return;
    alert.hidden = true;
    status.textContent = '';
    if (file.size > PICTURE_MAX_BYTES) {
      alert.textContent = t('picture.tooLarge');
      alert.hidden = false;
      alert.focus();
      return;
    }
    input.disabled = true;
    upload.setAttribute('aria-busy', 'true');
    try {
      show(await api.setPicture(file));
      status.textContent = t('picture.saved');
    } catch (error) {
      alert.textContent = messageFor(asProblem(error));
      alert.hidden = false;
      alert.focus();
    } finally {
      input.disabled = false;
      upload.removeAttribute('aria-busy');
    }
  });
  show(initial);
  return h(
    'div',
    { class: 'picture-row', role: 'group', 'aria-label': t('picture.label') },
    avatar,
    h(
      'div',
      { class: 'picture-actions' },
      h('div', { class: 'actions' }, input, upload, remove),
      h('p', { class: 'hint', id: 'picture-hint' }, t('picture.hint')),
      status,
      alert,
    ),
  );
}

/** Everything the service holds about the person, as a JSON file made in the page. */
function exportSection(): HTMLElement {
  const alert = alertBox();
  const status = h('p', { role: 'status' });
  const button = actionButton(t('export.button'), alert, async () => {
    const data = await api.exportAccount();
    const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: 'application/json' }));
    const a = h('a', { href: url, download: 'account-export.json', hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    status.textContent = t('export.done');
  });
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'export-title' },
    h('h2', { id: 'export-title' }, t('export.title')),
    h('p', null, t('export.hint')),
    alert,
    status,
    h('div', { class: 'actions' }, button),
  );
}
