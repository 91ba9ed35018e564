import { api } from '../api.js';
import { field, h, newPasswordField } from '../dom.js';
import { makeForm } from '../forms.js';
import type { PageContent } from '../router.js';
import { swap } from './steps.js';

export function recoverPage(): PageContent {
  const card = h('section', { class: 'card', 'aria-labelledby': 'recover-step' });
  const email = field({
    label: 'Email address',
    name: 'identifier',
    type: 'email',
    autocomplete: 'username',
  });
  const form = makeForm({
    fields: [email],
    submit: 'Send a code',
    async onSubmit() {
      await api.startRecovery(email.input.value);
      codeStep(card, email.input.value);
    },
  });
  swap(
    card,
    h('h2', { id: 'recover-step', tabindex: '-1' }, 'Your address'),
    h('p', null, 'We will send a code to set a new password.'),
    form.el,
  );
  return {
    title: 'Forgot your password',
    body: [card, h('p', null, h('a', { href: '#/sign-in' }, 'Back to sign in'))],
  };
}

function codeStep(card: HTMLElement, email: string): void {
  const code = field({ label: 'Code', name: 'code', autocomplete: 'one-time-code' });
  const password = newPasswordField({ label: 'New password', name: 'newPassword' });
  const form = makeForm({
    fields: [code, password],
    submit: 'Set the new password',
    async onSubmit() {
      await api.confirmRecovery(email, code.input.value.trim(), password.input.value);
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
    h('p', null, 'If ', h('strong', null, email), ' belongs to an account, a code is on its way.'),
    form.el,
  );
}
