import { api, passkeyStatus } from '../../api.js';
import { field, formatDate, h } from '../../dom.js';
import { alertBox, makeForm } from '../../forms.js';
import { t } from '../../messages/security.js';
import type { PageContent } from '../../router.js';
import { elevated } from '../../stepup.js';
import { card, confirmButton, focusedPage, saidBox, saySuccess, takeReturn } from './common.js';

/** #/security/passkeys: the passkeys (removal confirmed first) and adding one. */
export async function passkeysPage(): Promise<PageContent> {
  const { said } = await takeReturn('/security/passkeys');
  const { el } = card('passkeys', t('passkeys.title'));
  const body = h('div');
  el.append(body);
  const draw = async () => {
    const passkeys = (await api.signInMethods()).filter((m) => m.kind === 'passkey');
    const alert = alertBox();
    const slot = h('div');
    const status = passkeyStatus();
    const list = h(
      'ul',
      { class: 'items', id: 'passkey-list' },
      passkeys.map((p) =>
        h(
          'li',
          null,
          h(
            'span',
            { class: 'item-main' },
            p.display ?? t('passkeys.default'),
            h(
              'span',
              { class: 'item-meta' },
              t('passkeys.meta', { added: formatDate(p.verifiedAt), used: formatDate(p.lastUsedAt) }),
            ),
          ),
          confirmButton({
            label: t('passkeys.remove'),
            ariaLabel: t('passkeys.removeLabel', { name: p.display ?? '' }).trim(),
            question: t('passkeys.removeQuestion'),
            detail: t('passkeys.removeDetail'),
            confirm: t('passkeys.remove'),
            alert,
            async run() {
              await elevated(slot, (token) => api.removeSignInMethod(p.id, token));
              await draw();
              saySuccess(body, t('passkeys.removed'));
            },
          }),
        ),
      ),
    );
    const parts: (Node | string)[] = [h('p', null, t('passkeys.intro')), alert, slot];
    if (passkeys.length) parts.push(list);
    if (status.usable) {
      const label = field({
        label: t('passkeys.name'),
        name: 'label',
        required: false,
        hint: t('passkeys.nameHint'),
        maxlength: 64,
      });
      const form = makeForm({
        fields: [label],
        submit: t('passkeys.add'),
        async onSubmit() {
          const name = label.input.value.trim() || t('passkeys.default');
          await elevated(slot, (token) => api.addPasskey(name, token));
          await draw();
          saySuccess(body, t('passkeys.added'));
        },
      });
      parts.push(form.el);
    } else {
      parts.push(h('p', { class: 'info' }, status.reason));
    }
    body.replaceChildren(...parts);
  };
  await draw();
  return focusedPage(
    t('passkeys.title'),
    [saidBox(said), el].filter((x): x is HTMLElement => !!x),
  );
}
