import { api, asProblem, InteractionError } from '../api.js';
import { announce, field, h, newPasswordField } from '../dom.js';
import { makeForm } from '../forms.js';
import { type IdentifierForm, identifierField, pendingStep } from '../identifier.js';
import { continueWith } from '../providers.js';
import { go, type PageContent } from '../router.js';
import { isHeld } from '../wait.js';
import { afterFirstStep } from './sign-in.js';
import { swap } from './steps.js';

/**
 * The confirm step is kept in this tab's sessionStorage, so a reload stays on it: the identifier
 * and the step, never the password (docs/decisions.md, "Pending steps survive a reload"). The
 * password stays in memory from the first step to the confirmation; after a reload the step asks
 * for it again, since the confirmation proves the code and the password together.
 */
interface Pending {
  step: 'confirm';
  identifier: IdentifierForm;
}
const PENDING = 'sign-up';

/** The password of a confirmation started from the sign-in page, handed over in memory. */
let handedOver: { identifier: IdentifierForm; password: string } | null = null;

const same = (a: IdentifierForm, b: IdentifierForm) =>
  a.identifierType === b.identifierType && a.identifier === b.identifier;

/** Opens the confirm step for a registration whose code was just sent (from the sign-in page). */
export function startConfirmation(identifier: IdentifierForm, password: string): void {
  pendingStep.write(PENDING, { step: 'confirm', identifier } satisfies Pending);
  handedOver = { identifier, password };
  go('/sign-up');
}

export function signUpPage(): PageContent {
  const card = h('section', { class: 'card', 'aria-labelledby': 'signup-step' });
  const pending = pendingStep.read<Pending>(PENDING);
  if (pending?.step === 'confirm' && pending.identifier) {
    const password =
      handedOver && same(handedOver.identifier, pending.identifier) ? handedOver.password : null;
    confirmStep(card, pending.identifier, password);
  } else {
    firstStep(card);
  }
  handedOver = null;
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

function firstStep(card: HTMLElement): void {
  const identifier = identifierField('sign-up');
  const password = newPasswordField({
    label: 'Password',
    name: 'password',
    hint: 'A few unrelated words make a strong one.',
  });
  const form = makeForm({
    fields: [identifier, password],
    submit: 'Create account',
    async onSubmit() {
      const who = identifier.value();
      await api.signUp(who, password.input.value);
      pendingStep.write(PENDING, { step: 'confirm', identifier: who } satisfies Pending);
      confirmStep(card, who, password.input.value);
    },
  });
  swap(card, h('h2', { id: 'signup-step', tabindex: '-1' }, 'Your address and a password'), form.el);
}

/**
 * The code step. `password` is null after a reload: the step then asks for the password chosen at
 * the first step (never stored), which the confirmation and the resend need.
 */
function confirmStep(card: HTMLElement, who: IdentifierForm, password: string | null): void {
  const phone = who.identifierType === 'phone';
  const code = field({
    label: 'Code',
    name: 'code',
    autocomplete: 'one-time-code',
    hint: 'The code in the message we sent. It expires in 15 minutes.',
  });
  const again =
    password === null
      ? field({
          label: 'The password you chose',
          name: 'password',
          type: 'password',
          autocomplete: 'current-password',
          hint: 'It is never kept when the page reloads, so enter it once more.',
        })
      : null;
  const chosen = () => password ?? again?.input.value ?? '';
  const resend = h('button', { type: 'button', class: 'secondary' }, 'Send a new code');
  const restart = h('button', { type: 'button', class: 'link' }, 'Start again');
  const form = makeForm({
    fields: again ? [code, again] : [code],
    submit: 'Confirm',
    buttons: [resend, restart],
    async onSubmit() {
      try {
        await api.confirmSignUp(who, chosen(), code.input.value.trim());
      } catch (error) {
        // After a reload the password was typed again: the refusal may be about either.
        if (again && asProblem(error).code === 'identity.verification_refused') {
          throw new InteractionError({ code: 'ui.sign_up_confirmation_refused', status: 422 });
        }
        throw error;
      }
      pendingStep.clear(PENDING);
      // The password was just proven with the code: sign in at once.
      afterFirstStep(await api.signIn(who, chosen()), null);
    },
  });
  resend.addEventListener('click', async () => {
    if (again && again.input.value === '') {
      again.setError('Enter the password you chose first.');
      again.input.focus();
      return;
    }
    resend.disabled = true;
    try {
      await api.signUp(who, chosen());
      form.alert.hidden = true;
      announce('Code sent');
      code.input.focus();
    } catch (error) {
      // A 429 holds the resend button (not Confirm) until the wait is over.
      form.fail(error, resend);
    } finally {
      if (!isHeld(resend)) resend.disabled = false;
    }
  });
  restart.addEventListener('click', () => {
    pendingStep.clear(PENDING);
    firstStep(card);
  });
  swap(
    card,
    h(
      'h2',
      { id: 'signup-step', tabindex: '-1' },
      phone ? 'Confirm your phone number' : 'Confirm your address',
    ),
    h('p', null, 'We sent a code to ', h('strong', null, who.identifier), '.'),
    form.el,
  );
}
