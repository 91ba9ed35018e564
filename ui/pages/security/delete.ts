import { api } from '../../api.js';
import { field, h } from '../../dom.js';
import { makeForm } from '../../forms.js';
import { t } from '../../messages/security.js';
import type { PageContent } from '../../router.js';
import { elevated } from '../../stepup.js';
import { card, focusedPage } from './common.js';

/** What an account without any identifier types (the service's word: docs/api.md, "Delete my account"). */
const NO_IDENTIFIER = 'DELETE';

/**
 * #/security/delete: delete the account for good. The person reads what goes, types their
 * identifier as shown (or DELETE when the account has none), and confirms it is them (the step-up);
 * the service then erases the account and ends every session, and the page goes to the sign-in
 * page, which says so (ui/main.ts, `account_deleted`). A refusal (a typo, the last owner of an
 * organization with members) is said in the form's alert and nothing is deleted.
 */
export async function deleteAccountPage(): Promise<PageContent> {
  const account = await api.account();
  const expected = account.identifiers.find((i) => i.verifiedAt)?.value ?? NO_IDENTIFIER;
  const { el } = card('delete-account', t('delete.title'));
  const slot = h('div');
  const typed = field({
    label: t('delete.typeLabel', { identifier: expected }),
    name: 'identifier',
    hint: t('delete.typeHint'),
    maxlength: 320,
  });
  const form = makeForm({
    fields: [typed],
    submit: t('delete.submit'),
    extra: [slot],
    async onSubmit() {
      const value = typed.input.value;
      await elevated(slot, (token) => api.deleteAccount(value, token));
    },
  });
  form.el.querySelector('button[type="submit"]')?.classList.add('danger');
  el.append(
    h('p', null, t('delete.intro')),
    h(
      'ul',
      { class: 'consequences' },
      h('li', null, t('delete.what.methods')),
      h('li', null, t('delete.what.sessions')),
      h('li', null, t('delete.what.organizations')),
    ),
    h('p', { class: 'hint' }, t('delete.owner')),
    h('p', { class: 'hint' }, t('delete.notice')),
    form.el,
  );
  return focusedPage(t('delete.title'), [el]);
}
