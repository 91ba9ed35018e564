import { api, asProblem } from '../api.js';
import { h } from '../dom.js';
import { makeForm } from '../forms.js';
import { type IdentifierForm, identifierField, pendingStep } from '../identifier.js';
import { t } from '../messages/recover.js';
import { newPasswordField } from '../new-password.js';
import { codeExpiresText, codeField, codeHint, codeSent, differentAddress, refill } from '../otp.js';
import type { PageContent } from '../router.js';
import { isHeld } from '../wait.js';
import { swap } from './steps.js';

/**
 * The code step survives a reload: this tab's sessionStorage keeps the identifier and when the last
 * code was sent (this browser's clock), never the code or the password.
 */
const PENDING = 'recover';
interface Pending {
  identifier: IdentifierForm;
  sentAt?: number | null;
}

export function recoverPage(): PageContent {
  const card = h('section', { class: 'card sign-in-card', 'aria-labelledby': 'recover-step' });
  const pending = pendingStep.read<Pending>(PENDING);
  if (pending?.identifier) codeStep(card, pending.identifier, false, pending.sentAt ?? null);
  else firstStep(card);
  return {
    title: t('title'),
    body: [card, h('p', null, h('a', { href: '#/sign-in' }, t('back')))],
  };
}

/** The first step; `back` refills it when the person comes back to use a different address. */
function firstStep(card: HTMLElement, back?: IdentifierForm): void {
  const identifier = identifierField('recover');
  const form = makeForm({
    fields: [identifier],
    submit: t('send'),
    async onSubmit() {
      const who = identifier.value();
      await api.startRecovery(who);
      pendingStep.write(PENDING, { identifier: who });
      codeStep(card, who, true);
    },
  });
  swap(
    card,
    h('h2', { id: 'recover-step', tabindex: '-1' }, t('find.heading')),
    h('p', null, t('find.text')),
    form.el,
  );
  if (back) {
    refill(identifier, back);
    identifier.input.focus();
    identifier.input.select();
  }
}

/** The code and the new password. `justSent`: a code went out a moment ago (not after a reload). */
function codeStep(
  card: HTMLElement,
  who: IdentifierForm,
  justSent: boolean,
  sentAt: number | null = null,
): void {
  const code = codeField({
    label: t('code'),
    name: 'code',
    kind: 'message',
    hint: `${codeHint('message')} ${codeExpiresText()}`,
  });
  const password = newPasswordField({
    label: t('newPassword'),
    name: 'newPassword',
    userInputs: () => [who.identifier],
  });
  // Recovery never says whether the address has an account: the status says "if".
  const sending = codeSent(who, t('sent', { identifier: who.identifier }));
  const { resend } = sending;
  const remember = () =>
    pendingStep.write(PENDING, { identifier: who, sentAt: sending.sentAt() } satisfies Pending);
  if (sentAt !== null) sending.sentEarlier(sentAt);
  const different = differentAddress(who, () => {
    pendingStep.clear(PENDING);
    firstStep(card, who);
  });
  const form = makeForm({
    fields: [code, password],
    submit: t('set'),
    buttons: [resend, different],
    async onSubmit() {
      code.requireWhole();
      try {
        await api.confirmRecovery(who, code.value(), password.input.value);
      } catch (error) {
        // Past the code's lifetime: the page says it expired (the service answers every cause alike).
        if (asProblem(error).code === 'identity.password_recovery_refused')
          throw sending.explain(error, 'code');
        throw error;
      }
      pendingStep.clear(PENDING);
      swap(
        card,
        h('h2', { id: 'recover-step', tabindex: '-1' }, t('done.heading')),
        h('p', { class: 'notice' }, t('done.text')),
        h('p', null, h('a', { href: '#/sign-in' }, t('done.signIn'))),
      );
    },
  });
  resend.addEventListener('click', async () => {
    resend.disabled = true;
    try {
      await api.startRecovery(who);
      form.alert.hidden = true;
      sending.sent();
      remember();
      code.setError(null);
      code.input.focus();
    } catch (error) {
      // A 429 holds the resend button (not the form's) until the wait is over.
      form.fail(error, resend);
    } finally {
      if (!isHeld(resend)) resend.disabled = false;
    }
  });
  if (justSent) {
    sending.sent();
    remember();
  } else sending.status.textContent = t('sent', { identifier: who.identifier });
  swap(card, h('h2', { id: 'recover-step', tabindex: '-1' }, t('code.heading')), sending.status, form.el);
}
