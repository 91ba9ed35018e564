import { type Organization, organizations, type ScimToken } from '../api.js';
import { field, formatDate, h } from '../dom.js';
import { alertBox, makeForm } from '../forms.js';
import { t } from '../messages/directory.js';
import { copyRow } from './organizations-sso.js';
import { card, confirmButton, saySuccess } from './security/common.js';

/*
 * The "Directory" section of #/organizations/<id> (docs/scim.md, "Hosted pages"), for those who
 * hold directory:manage (owners): the SCIM base URL to copy, the organization's SCIM tokens (name,
 * created, last sync; revoke with a confirmation) and a form to create one, whose secret is shown
 * once in a dialog.
 */

export async function directoryCard(org: Organization): Promise<HTMLElement> {
  const { el } = card('org-directory', t('title'));
  const body = h('div');
  el.append(
    h('p', { class: 'hint' }, t('intro')),
    copyRow(t('baseUrl'), `${location.origin}/scim/v2`, 'scimBaseUrl'),
    body,
  );
  const draw = async (said?: string) => {
    const tokens = await organizations.scimTokens(org.id);
    body.replaceChildren(tokensPart(org, tokens, draw), createPart(org, draw));
    if (said) saySuccess(body, said);
  };
  await draw();
  return el;
}

type Draw = (said?: string) => Promise<void>;

function tokensPart(org: Organization, tokens: ScimToken[], draw: Draw): HTMLElement {
  const alert = alertBox();
  const list = tokens.length
    ? h(
        'ul',
        { class: 'items', id: 'scim-token-list' },
        tokens.map((token) =>
          h(
            'li',
            { 'data-token': token.id },
            h(
              'div',
              { class: 'item-main' },
              h('span', { class: 'identifier' }, token.name),
              h(
                'span',
                { class: 'item-meta token-meta' },
                t('meta', {
                  created: formatDate(token.createdAt),
                  used: token.lastUsedAt ? formatDate(token.lastUsedAt) : t('never'),
                }),
              ),
              token.revokedAt
                ? h(
                    'span',
                    { class: 'item-meta token-revoked' },
                    t('revokedMeta', { revoked: formatDate(token.revokedAt) }),
                  )
                : null,
            ),
            token.revokedAt
              ? null
              : h(
                  'div',
                  { class: 'actions' },
                  confirmButton({
                    label: t('revoke'),
                    ariaLabel: t('revokeLabel', { name: token.name }),
                    question: t('revokeQuestion', { name: token.name }),
                    detail: t('revokeDetail'),
                    confirm: t('revoke'),
                    alert,
                    async run() {
                      await organizations.revokeScimToken(org.id, token.id);
                      await draw(t('revoked', { name: token.name }));
                    },
                  }),
                ),
          ),
        ),
      )
    : h('p', { class: 'hint' }, t('noTokens'));
  return h('div', null, h('h3', { class: 'sso-subtitle' }, t('tokens')), alert, list);
}

function createPart(org: Organization, draw: Draw): HTMLElement {
  const name = field({ label: t('name'), name: 'name', maxlength: 100, hint: t('nameHint') });
  const form = makeForm({
    fields: [name],
    submit: t('submit'),
    async onSubmit() {
      const label = name.input.value.trim();
      const created = await organizations.createScimToken(org.id, label);
      await draw(t('created', { name: label }));
      showToken(label, created.token);
    },
  });
  return h('div', { id: 'scim-token-add' }, h('h3', { class: 'sso-subtitle' }, t('create')), form.el);
}

/** The new token, shown once in a modal dialog the owner closes when it is copied. */
function showToken(name: string, token: string): void {
  const dialog = h(
    'dialog',
    { class: 'secret-dialog', 'aria-labelledby': 'scim-token-title', 'aria-describedby': 'scim-token-once' },
    h('h2', { id: 'scim-token-title' }, t('dialogTitle', { name })),
    h('p', { id: 'scim-token-once' }, t('once')),
    copyRow(t('token'), token, 'scimToken'),
    h('form', { method: 'dialog', class: 'actions' }, h('button', { type: 'submit' }, t('done'))),
  );
  const back = document.activeElement as HTMLElement | null;
  dialog.addEventListener('close', () => {
    dialog.remove();
    back?.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
}
