import { api } from '../../api.js';
import { field, formatDate, h } from '../../dom.js';
import { alertBox, makeForm } from '../../forms.js';
import { t } from '../../messages/security.js';
import type { PageContent } from '../../router.js';
import { elevated } from '../../stepup.js';
import { methodName } from '../home.js';
import { card, confirmButton, focusedPage, saidBox, saySuccess, takeReturn } from './common.js';

/**
 * #/security/addresses: the owner's email addresses and phone numbers, unmasked (GET /account; an
 * identifier's id is its sign-in method's id), removal confirmed first, and adding one by code.
 */
export async function addressesPage(): Promise<PageContent> {
  const { said } = await takeReturn('/security/addresses');
  const { el } = card('methods', t('addresses.title'));
  const body = h('div');
  el.append(body);
  const draw = async () => {
    const [account, methods] = await Promise.all([api.account(), api.signInMethods()]);
    const used = new Map(methods.map((m) => [m.id, m.lastUsedAt]));
    const alert = alertBox();
    const slot = h('div');
    const list = h(
      'ul',
      { class: 'items', id: 'method-list' },
      account.identifiers.map((i) => {
        const type = methodName(i.type);
        const name = `${type} ${i.value}`;
        return h(
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
                ? t('addresses.meta', { type, used: formatDate(used.get(i.id)) })
                : t('addresses.pending', { type }),
            ),
          ),
          // A pending address is not a way in yet: nothing to remove (its code simply expires).
          i.verifiedAt
            ? confirmButton({
                label: t('addresses.remove'),
                ariaLabel: t('addresses.removeLabel', { name }),
                question: t('addresses.removeQuestion', { address: i.value }),
                detail: t('addresses.removeDetail'),
                confirm: t('addresses.remove'),
                alert,
                async run() {
                  await elevated(slot, (token) => api.removeSignInMethod(i.id, token));
                  await draw();
                  saySuccess(body, t('addresses.removed', { name }));
                },
              })
            : null,
        );
      }),
    );
    const email = field({
      label: t('addresses.email'),
      name: 'identifier',
      type: 'email',
      autocomplete: 'email',
    });
    const form = makeForm({
      fields: [email],
      submit: t('addresses.sendCode'),
      async onSubmit() {
        const address = email.input.value;
        await elevated(slot, (token) => api.addSignInMethod(address, token));
        confirmStep(address, form.el);
      },
    });
    const phone = field({
      label: t('addresses.phone'),
      name: 'phone',
      type: 'tel',
      autocomplete: 'tel',
      hint: t('addresses.phoneHint'),
    });
    const country = field({
      label: t('addresses.country'),
      name: 'country',
      autocomplete: 'country',
      minlength: 2,
      maxlength: 2,
      hint: t('addresses.countryHint'),
    });
    const phoneForm = makeForm({
      fields: [phone, country],
      submit: t('addresses.textCode'),
      async onSubmit() {
        const number = phone.input.value.trim();
        await elevated(slot, (token) =>
          api.addPhoneNumber(number, country.input.value.trim().toUpperCase(), token),
        );
        confirmStep(number, phoneForm.el);
      },
    });
    const confirmStep = (address: string, replaced: HTMLElement) => {
      const code = field({
        label: t('addresses.code'),
        name: 'code',
        autocomplete: 'one-time-code',
        hint: t('addresses.codeHint', { address }),
      });
      const confirm = makeForm({
        fields: [code],
        submit: t('addresses.confirm'),
        async onSubmit() {
          await elevated(slot, (token) => api.confirmSignInMethod(code.input.value.trim(), token));
          await draw();
          saySuccess(body, t('addresses.added'));
        },
      });
      const box = h(
        'div',
        null,
        h('h3', { tabindex: '-1' }, t('addresses.confirmTitle', { address })),
        confirm.el,
      );
      replaced.replaceWith(box);
      (box.querySelector('h3') as HTMLElement).focus();
    };
    body.replaceChildren(
      h('p', { class: 'hint' }, t('addresses.intro')),
      alert,
      slot,
      list,
      form.el,
      phoneForm.el,
    );
  };
  await draw();
  return focusedPage(
    t('addresses.title'),
    [saidBox(said), el].filter((x): x is HTMLElement => !!x),
  );
}
