import { api } from '../api.js';
import { field, h, newPasswordField } from '../dom.js';
import { makeForm } from '../forms.js';
import { type IdentifierForm, identifierField, pendingStep } from '../identifier.js';
import type { PageContent } from '../router.js';
import { swap } from './steps.js';

/** The code step survives a reload: this tab's sessionStorage keeps the identifier only. */
const PENDING = 'recover';

export function recoverPage(): PageContent {
  const card = h('section', { class: 'card', 'aria-labelledby': 'recover-step' });
  const pending = pendingStep.read<{ identifier: IdentifierForm }>(PENDING);
  if (pending?.identifier) codeStep(card, pending.identifier);
  else firstStep(card);
  return {
    title: 'Forgot your password',
    body: [card, h('p', null, h('a', { href: '#/sign-in' }, 'Back to sign in'))],
  };
}

function firstStep(card: HTMLElement): void {
  const identifier = identifierField('recover');
  const form = makeForm({
    fields: [identifier],
    submit: 'Send a code',
    async onSubmit() {
      const who = identifier.value();
      await api.startRecovery(who);
      pendingStep.write(PENDING, { identifier: who });
      codeStep(card, who);
    },
  });
  swap(
    card,
    h('h2', { id: 'recover-step', tabindex: '-1' }, 'Find your account'),
    h('p', null, 'We will send a code to set a new password.'),
    form.el,
  );
}

function codeStep(card: HTMLElement, who: IdentifierForm): void {
  const code = field({ label: 'Code', name: 'code', autocomplete: 'one-time-code' });
  const password = newPasswordField({ label: 'New password', name: 'newPassword' });
  const restart = h('button', { type: 'button', class: 'link' }, 'Start again');
  restart.addEventListener('click', () => {
    pendingStep.clear(PENDING);
    firstStep(card);
  });
  const form = makeForm({
    fields: [code, password],
    submit: 'Set the new password',
    buttons: [restart],
    async onSubmit() {
      await api.confirmRecovery(who, code.input.value.trim(), password.input.value);
      pendingStep.clear(PENDING);
      swap(
        card,
        h('h2', { id: 'recover-step', tabindex: '-1' }, 'Password changed'),
        h('p', { class: 'notice' }, 'Your new password is set and every session was signed out.'),
        h('p', null, h('a', { href: '#/sign-in' }, 'Sign in with the new password')),
      );
    },
  });
  swap(
    card,
    h('h2', { id: 'recover-step', tabindex: '-1' }, 'Enter the code'),
    h('p', null, 'If ', h('strong', null, who.identifier), ' belongs to an account, a code is on its way.'),
    form.el,
  );
}
