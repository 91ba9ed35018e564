import { api } from '../../api.js';
import { field, h } from '../../dom.js';
import { alertBox, makeForm } from '../../forms.js';
import { t } from '../../messages/security.js';
import { newPasswordField } from '../../new-password.js';
import type { PageContent } from '../../router.js';
import { elevated } from '../../stepup.js';
import { card, confirmButton, focusedPage, saidBox, saySuccess, takeReturn } from './common.js';

/** #/security/password: change it; remove it (confirmed first) while another way in remains. */
export async function passwordPage(): Promise<PageContent> {
  const { said } = await takeReturn('/security/password');
  const { el } = card('password', t('password.title'));
  const body = h('div');
  el.append(body);
  const draw = async () => {
    const methods = await api.signInMethods();
    const method = methods.find((m) => m.kind === 'password');
    if (!method) {
      body.replaceChildren(h('p', null, t('password.none')));
      return;
    }
    const current = field({
      label: t('password.current'),
      name: 'currentPassword',
      type: 'password',
      autocomplete: 'current-password',
    });
    const next = newPasswordField({
      label: t('password.new'),
      name: 'newPassword',
      hint: t('password.newHint'),
    });
    const done = h('p', { class: 'notice', role: 'status' });
    const form = makeForm({
      fields: [current, next],
      submit: t('password.submit'),
      async onSubmit() {
        await api.changePassword(current.input.value, next.input.value);
        current.input.value = '';
        next.input.value = '';
        done.textContent = t('password.changed');
      },
    });
    // Removing it: only while a passkey or a linked account remains (the service refuses otherwise).
    const others = methods.some((m) => m.kind === 'passkey' || m.kind === 'provider');
    const alert = alertBox();
    const slot = h('div');
    const removal = others
      ? h(
          'div',
          { class: 'remove-password' },
          h('h3', null, t('password.removeTitle')),
          h('p', { class: 'hint' }, t('password.removeHint')),
          alert,
          slot,
          h(
            'div',
            { class: 'actions' },
            confirmButton({
              label: t('password.remove'),
              question: t('password.removeQuestion'),
              detail: t('password.removeDetail'),
              confirm: t('password.removeConfirm'),
              alert,
              async run() {
                await elevated(slot, (token) => api.removeSignInMethod(method.id, token));
                await draw();
                saySuccess(body, t('password.removed'));
              },
            }),
          ),
        )
      : null;
    body.replaceChildren(done, form.el, ...(removal ? [removal] : []));
  };
  await draw();
  return focusedPage(
    t('password.title'),
    [saidBox(said), el].filter((x): x is HTMLElement => !!x),
  );
}
