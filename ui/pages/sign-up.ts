import { api } from '../api.js';
import { field, h, newPasswordField } from '../dom.js';
import { makeForm } from '../forms.js';
import { continueWith } from '../providers.js';
import { go, type PageContent } from '../router.js';
import { afterFirstStep } from './sign-in.js';
import { swap } from './steps.js';

export function signUpPage(): PageContent {
  const card = h('section', { class: 'card', 'aria-labelledby': 'signup-step' });
  const email = field({ label: 'Email address', name: 'identifier', type: 'email', autocomplete: 'email' });
  const password = newPasswordField({
    label: 'Password',
    name: 'password',
    hint: 'A few unrelated words make a strong one.',
  });
  const form = makeForm({
    fields: [email, password],
    submit: 'Create account',
    async onSubmit() {
      await api.signUp(email.input.value, password.input.value);
      confirmStep(card, email.input.value, password.input.value);
    },
  });
  swap(card, h('h2', { id: 'signup-step', tabindex: '-1' }, 'Your address and a password'), form.el);
  // A provider's account signs up (or, when already known, signs in) without a password here.
  const providers = continueWith({
    route: '/sign-up',
    signedIn: (result, name) => afterFirstStep(result, null, name),
  });
  return {
    title: 'Create an account',
    body: [
      providers.notice,
      card,
      providers.card,
      h('p', null, 'Already have an account? ', h('a', { href: '#/sign-in' }, 'Sign in'), '.'),
    ],
  };
}

function confirmStep(card: HTMLElement, email: string, password: string): void {
  const code = field({
    label: 'Code',
    name: 'code',
    autocomplete: 'one-time-code',
    hint: 'The code in the message we just sent. It expires in 15 minutes.',
  });
  const resend = h('button', { type: 'button', class: 'secondary' }, 'Send a new code');
  const form = makeForm({
    fields: [code],
    submit: 'Confirm',
    buttons: [resend],
    async onSubmit() {
      await api.confirmSignUp(email, password, code.input.value.trim());
      // The password was just proven with the code: sign in at once.
      await api.signIn(email, password);
      go('/');
    },
  });
  resend.addEventListener('click', async () => {
    resend.disabled = true;
    try {
      await api.signUp(email, password);
      form.alert.hidden = true;
      code.input.focus();
    } catch (error) {
      form.fail(error);
    } finally {
      resend.disabled = false;
    }
  });
  swap(
    card,
    h('h2', { id: 'signup-step', tabindex: '-1' }, 'Confirm your address'),
    h('p', null, 'We sent a code to ', h('strong', null, email), '.'),
    form.el,
  );
}
