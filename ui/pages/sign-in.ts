import { api, asProblem, interactions, passkeyStatus, type SignInOutcome } from '../api.js';
import { field, h } from '../dom.js';
import { actionButton, alertBox, makeForm } from '../forms.js';
import { type IdentifierForm, identifierField, pendingStep } from '../identifier.js';
import { continueWith } from '../providers.js';
import { go, type PageContent } from '../router.js';
import { startConfirmation } from './sign-up.js';

/**
 * The ticket of a password (or a provider's sign-in) accepted but waiting for its second step:
 * this tab's sessionStorage, so a reload keeps the step (never the URL, never localStorage), and
 * dropped on success, on "Start again" and once expired. `uid` is the OpenID Provider interaction
 * the sign-in was for (#/authorize/<uid>), kept across the step so the person goes back to the
 * application afterwards; `via` names the provider when the first step was "Continue with …".
 */
interface Pending {
  ticket: string;
  expiresAt: string;
  uid: string | null;
  via: string | null;
}
const PENDING = 'sign-in';

/** Where a completed sign-in goes: the account, or back to the provider's interaction. */
function finish(uid: string | null): void {
  if (uid) interactions.continue(uid);
  else go('/');
}

/**
 * A first step accepted (password or provider): done, or on to the second step. `via` is the
 * provider's name when the first step was "Continue with …".
 */
export function afterFirstStep(result: SignInOutcome, uid: string | null, via: string | null = null): void {
  if (result.kind === 'second_factor_required') {
    pendingStep.write(PENDING, {
      ticket: result.ticket,
      expiresAt: result.expiresAt,
      uid,
      via,
    } satisfies Pending);
    go('/sign-in/second-factor');
  } else {
    finish(uid);
  }
}

export function signInPage(): PageContent {
  return { title: 'Sign in', body: signInBody(null) };
}

/**
 * The sign-in forms (password, then a second step when needed; passkey), for the account's own
 * sign-in page and for an application's (#/authorize/<uid>, `uid` set).
 */
export function signInBody(uid: string | null): (Node | string)[] {
  const identifier = identifierField('sign-in');
  const password = field({
    label: 'Password',
    name: 'password',
    type: 'password',
    autocomplete: 'current-password',
  });
  const way = h('div', { class: 'way-on' });
  way.hidden = true;
  const form = makeForm({
    fields: [identifier, password],
    submit: 'Sign in',
    async onSubmit() {
      way.hidden = true;
      const who = identifier.value();
      try {
        afterFirstStep(await api.signIn(who, password.input.value), uid);
      } catch (error) {
        if (asProblem(error).code === 'identity.sign_in_refused')
          offerConfirmation(way, who, password.input.value);
        throw error;
      }
    },
  });
  form.alert.after(way);
  // A provider flow started here comes back here (#/authorize/<uid> for an application's sign-in).
  const providers = continueWith({
    route: uid ? `/authorize/${encodeURIComponent(uid)}` : '/sign-in',
    signedIn: (result, name) => afterFirstStep(result, uid, name),
  });
  return [
    providers.notice,
    h('section', { class: 'card', 'aria-label': 'Sign in with a password' }, form.el),
    providers.card,
    passkeySignIn(uid),
    h(
      'p',
      null,
      'New here? ',
      h('a', { href: '#/sign-up' }, 'Create an account'),
      '. ',
      h('a', { href: '#/recover' }, 'Forgot your password?'),
    ),
  ];
}

/**
 * The way on from a refused sign-in, shown after every refusal alike (so it tells nothing): an
 * account registered but never confirmed cannot sign in, and signing up again with the same
 * identifier and password sends it a fresh code. A confirmed identifier answers 409, which
 * sign-up reveals to anyone already (docs/decisions.md, "A refused sign-in offers the confirmation").
 */
function offerConfirmation(way: HTMLElement, who: IdentifierForm, password: string): void {
  const phone = who.identifierType === 'phone';
  const alert = alertBox();
  const outcome = h('div');
  const button = actionButton(
    phone ? 'Confirm your phone number' : 'Confirm your address',
    alert,
    async () => {
      outcome.replaceChildren();
      try {
        await api.signUp(who, password);
        startConfirmation(who, password);
      } catch (error) {
        const p = asProblem(error);
        // A confirmed identifier, or a password no account could have: the recovery is the way on.
        if (p.code !== 'identity.identifier_taken' && p.code !== 'validation.failed') throw error;
        const text =
          p.code === 'identity.identifier_taken'
            ? `This ${phone ? 'phone number' : 'address'} is already confirmed. Check your password, or reset it.`
            : 'That password is not one an account could have. Check it, or reset it.';
        const note = h(
          'p',
          { class: 'notice', role: 'status', tabindex: '-1' },
          `${text} `,
          h('a', { href: '#/recover' }, 'Reset your password'),
        );
        outcome.replaceChildren(note);
        note.focus();
      }
    },
    'secondary',
  );
  way.replaceChildren(h('p', null, 'Registered but never entered the code? ', button), alert, outcome);
  way.hidden = false;
}

function passkeySignIn(uid: string | null): HTMLElement {
  const status = passkeyStatus();
  const heading = h('h2', null, 'Passkey');
  if (!status.usable) {
    return h(
      'section',
      { class: 'card', 'aria-label': 'Passkey' },
      heading,
      h('p', { class: 'hint' }, status.reason),
    );
  }
  const alert = alertBox();
  const button = actionButton(
    'Sign in with a passkey',
    alert,
    async () => {
      await api.signInWithPasskey();
      finish(uid);
    },
    'secondary',
  );
  return h(
    'section',
    { class: 'card', 'aria-label': 'Passkey' },
    heading,
    h('p', null, 'Use the passkey saved on this device or your phone: no password needed.'),
    alert,
    h('div', { class: 'actions' }, button),
  );
}

export function secondFactorPage(): PageContent {
  const pending = pendingStep.read<Pending>(PENDING);
  if (!pending || !(Date.parse(pending.expiresAt) > Date.now())) {
    pendingStep.clear(PENDING);
    return {
      title: 'Second step',
      body: [
        h('p', null, 'Your sign-in has expired. '),
        h('p', null, h('a', { href: '#/sign-in' }, 'Sign in again')),
      ],
    };
  }
  const { ticket, uid, via } = pending;
  const restart = uid ? `#/authorize/${encodeURIComponent(uid)}` : '#/sign-in';
  let recovery = false;
  const code = field({
    label: 'Authenticator code',
    name: 'code',
    autocomplete: 'one-time-code',
    inputmode: 'numeric',
    hint: 'The 6-digit code your authenticator app shows now.',
  });
  const label = code.wrap.querySelector('label') as HTMLLabelElement;
  const hint = code.wrap.querySelector('.hint') as HTMLElement;
  const toggle = h('button', { type: 'button', class: 'link' }, 'Use a recovery code instead');
  toggle.addEventListener('click', () => {
    recovery = !recovery;
    label.textContent = recovery ? 'Recovery code' : 'Authenticator code';
    hint.textContent = recovery
      ? 'One of the recovery codes you saved, like ABCD-EFGH-JKLM-NPQR. It is used up.'
      : 'The 6-digit code your authenticator app shows now.';
    code.input.name = recovery ? 'recoveryCode' : 'code';
    code.input.inputMode = recovery ? 'text' : 'numeric';
    code.input.value = '';
    toggle.textContent = recovery ? 'Use an authenticator code instead' : 'Use a recovery code instead';
    code.input.focus();
  });
  const form = makeForm({
    fields: [code],
    submit: 'Continue',
    buttons: [toggle],
    async onSubmit() {
      const value = code.input.value.trim();
      await api.completeSecondFactor(ticket, recovery ? { recoveryCode: value } : { code: value });
      pendingStep.clear(PENDING);
      finish(uid);
    },
  });
  return {
    title: 'Second step',
    body: [
      h(
        'p',
        null,
        via
          ? `You signed in with ${via}. Now confirm it is you with your authenticator app.`
          : 'Your password is right. Now confirm it is you with your authenticator app.',
      ),
      h('section', { class: 'card', 'aria-label': 'Second step' }, form.el),
      h('p', null, h('a', { href: restart, onclick: () => pendingStep.clear(PENDING) }, 'Start again')),
    ],
  };
}
