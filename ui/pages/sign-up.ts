import { api, asProblem, InteractionError } from '../api.js';
import { field, h } from '../dom.js';
import { makeForm } from '../forms.js';
import { type IdentifierForm, identifierField, pendingStep } from '../identifier.js';
import { t } from '../messages/sign-up.js';
import { newPasswordField } from '../new-password.js';
import { codeExpiresText, codeField, codeHint, codeSent, differentAddress, refill } from '../otp.js';
import { continueWith } from '../providers.js';
import { go, type PageContent } from '../router.js';
import { isHeld } from '../wait.js';
import { afterFirstStep } from './second-step.js';
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
  /** When the last code was sent (this browser's clock): a refusal after its lifetime says expired. */
  sentAt?: number | null;
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
  const card = h('section', { class: 'card sign-in-card', 'aria-labelledby': 'signup-step' });
  // A provider's account signs up (or, when already known, signs in) without a password here:
  // "Continue with …" above the first step's form, under its heading, then an "or".
  const providers = continueWith({
    route: '/sign-up',
    signedIn: (result, name) => afterFirstStep(result, null, name),
  });
  const or = h('p', { class: 'or-divider' }, h('span', null, t('or')));
  const showOr = () => {
    or.hidden = providers.card.hidden;
  };
  showOr();
  new MutationObserver(showOr).observe(providers.card, { attributes: true, attributeFilter: ['hidden'] });
  aboveForm.set(card, [providers.card, or]);
  const pending = pendingStep.read<Pending>(PENDING);
  if (pending?.step === 'confirm' && pending.identifier) {
    const password =
      handedOver && same(handedOver.identifier, pending.identifier) ? handedOver.password : null;
    // A password handed over in memory comes with a code just sent; after a reload, none was.
    confirmStep(card, pending.identifier, password, password !== null, pending.sentAt ?? null);
  } else {
    firstStep(card);
  }
  handedOver = null;
  return {
    title: t('title'),
    body: [
      providers.notice,
      card,
      h('p', { class: 'sign-in-below' }, t('haveAccount'), ' ', h('a', { href: '#/sign-in' }, t('signIn'))),
    ],
  };
}

/** What the first step shows above its form: "Continue with …" and its "or" (by card). */
const aboveForm = new WeakMap<HTMLElement, Node[]>();

/** The first step; `back` refills it when the person comes back to use a different address. */
function firstStep(card: HTMLElement, back?: { who: IdentifierForm; password: string | null }): void {
  const identifier = identifierField('sign-up');
  const password = newPasswordField({
    label: t('password'),
    name: 'password',
    hint: t('password.hint'),
  });
  const form = makeForm({
    fields: [identifier, password],
    submit: t('create'),
    async onSubmit() {
      const who = identifier.value();
      await api.signUp(who, password.input.value);
      pendingStep.write(PENDING, { step: 'confirm', identifier: who } satisfies Pending);
      confirmStep(card, who, password.input.value, true);
    },
  });
  swap(
    card,
    h('h2', { id: 'signup-step', tabindex: '-1' }, t('first.heading')),
    ...(aboveForm.get(card) ?? []),
    form.el,
  );
  // Come from an invitation ("Create an account"): the account is for the invited address, filled
  // in and read-only (ui/pages/organizations-invitation.ts keeps it in its pending step).
  const invited = pendingStep.read<{ back?: boolean; invited?: IdentifierForm }>('invitation');
  if (!back && invited?.back && invited.invited) {
    identifier.input.value = invited.invited.identifier;
    identifier.input.dispatchEvent(new Event('input', { bubbles: true }));
    identifier.input.readOnly = true;
    const hint = identifier.input.getAttribute('aria-describedby');
    const note = h('p', { class: 'hint', id: `${identifier.input.id}-invited` }, t('first.invited'));
    identifier.input.after(note);
    identifier.input.setAttribute('aria-describedby', [note.id, hint].filter(Boolean).join(' '));
    password.input.focus();
  }
  if (back) {
    refill(identifier, back.who);
    if (back.password) {
      password.input.value = back.password;
      password.input.dispatchEvent(new Event('input', { bubbles: true }));
    }
    // Straight to the address to correct it.
    identifier.input.focus();
    identifier.input.select();
  }
}

/**
 * The code step. `password` is null after a reload: the step then asks for the password chosen at
 * the first step (never stored), which the confirmation and the resend need. `justSent`: a code
 * went out a moment ago (says so, and the resend waits its cooldown).
 */
function confirmStep(
  card: HTMLElement,
  who: IdentifierForm,
  password: string | null,
  justSent: boolean,
  sentAt: number | null = null,
): void {
  const phone = who.identifierType === 'phone';
  const code = codeField({
    label: t('code'),
    name: 'code',
    kind: 'message',
    hint: `${codeHint('message')} ${codeExpiresText()}`,
  });
  const again =
    password === null
      ? field({
          label: t('chosen'),
          name: 'password',
          type: 'password',
          autocomplete: 'current-password',
          hint: t('chosen.hint'),
        })
      : null;
  const chosen = () => password ?? again?.input.value ?? '';
  const sending = codeSent(who);
  const { resend } = sending;
  // The time of the last send survives a reload with the step, so that "expired" still holds.
  const remember = () =>
    pendingStep.write(PENDING, {
      step: 'confirm',
      identifier: who,
      sentAt: sending.sentAt(),
    } satisfies Pending);
  if (sentAt !== null) sending.sentEarlier(sentAt);
  const different = differentAddress(who, () => {
    pendingStep.clear(PENDING);
    firstStep(card, { who, password: password ?? (again?.input.value || null) });
  });
  const form = makeForm({
    fields: again ? [code, again] : [code],
    submit: t('confirm'),
    buttons: [resend, different],
    async onSubmit() {
      code.requireWhole();
      try {
        await api.confirmSignUp(who, chosen(), code.value());
      } catch (error) {
        if (asProblem(error).code === 'identity.verification_refused') {
          // Past the code's lifetime: the page says it expired (the service answers alike).
          const explained = sending.explain(error, 'code');
          if (explained !== error) throw explained;
          // After a reload the password was typed again: the refusal may be about either.
          if (again) throw new InteractionError({ code: 'ui.sign_up_confirmation_refused', status: 422 });
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
      again.setError(t('chosen.first'));
      again.input.focus();
      return;
    }
    resend.disabled = true;
    try {
      await api.signUp(who, chosen());
      form.alert.hidden = true;
      sending.sent();
      remember();
      code.setError(null);
      code.input.focus();
    } catch (error) {
      // A 429 holds the resend button (not Confirm) until the wait is over.
      form.fail(error, resend);
    } finally {
      if (!isHeld(resend)) resend.disabled = false;
    }
  });
  if (justSent) {
    sending.sent();
    remember();
  } else sending.status.textContent = t('sentEarlier', { identifier: who.identifier });
  swap(
    card,
    h('h2', { id: 'signup-step', tabindex: '-1' }, t(phone ? 'confirm.phone' : 'confirm.email')),
    sending.status,
    form.el,
  );
}
