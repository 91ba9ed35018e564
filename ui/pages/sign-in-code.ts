import { api, asProblem, codeLifetimeSeconds, InteractionError, signInByCode } from '../api.js';
import { h } from '../dom.js';
import { actionButton, makeForm } from '../forms.js';
import { type IdentifierField, type IdentifierForm, kindOf, pendingStep } from '../identifier.js';
import { t } from '../messages/sign-in.js';
import { codeExpiresText, codeField, codeHint, codeSent, refill } from '../otp.js';
import { isHeld } from '../wait.js';
import { afterFirstStep } from './second-step.js';
import { swap } from './steps.js';

/*
 * Sign-in by code (issue 45, SIGN_IN_CODES): "Email me a code" / "Text me a code" beside the
 * password, then the code step in the same card. The service answers a send alike whether or not
 * the address may sign in by code, so the step shows for every address; the code's answer is the
 * password's (a session handed to the cookie, or the same second step), and goes where it goes.
 */

/**
 * The code step survives a reload (this tab's sessionStorage, as every pending step): the address
 * typed, the id the code is answered at, when it was sent (this browser's clock) and the
 * interaction it is for; never the code. Dropped on success, on "Use another way", and once the
 * code's lifetime is over.
 */
const PENDING = 'sign-in-code';
interface Pending {
  identifier: IdentifierForm;
  signInCodeId: string;
  sentAt: number;
  uid: string | null;
}

export interface CodeWay {
  /** The card whose content the code step replaces (and "Use another way" puts back). */
  card: HTMLElement;
  identifier: IdentifierField;
  /** The first step's alert: a refused send (429, an address of no known form) is said there. */
  alert: HTMLElement;
  /** The OpenID Provider interaction the sign-in is for (#/authorize/<uid>), or null. */
  uid: string | null;
  /** Where the focus goes back to when the person comes back to the first step. */
  back: HTMLElement;
}

/**
 * The button, shown while the identifier typed is of a type that may sign in by code (an email
 * address, a phone number); null when the service has sign-in codes off. `resume()`, once the card
 * holds the first step: back on a code step this tab had open before a reload, if there is one.
 */
export function codeButton(o: CodeWay): { button: HTMLButtonElement; resume(): void } | null {
  if (!signInByCode('email') && !signInByCode('phone')) return null;
  const button = actionButton(
    t('emailCode'),
    o.alert,
    async () => {
      const who = o.identifier.value();
      const sent = await api.sendSignInCode(who);
      codeStep(o, who, sent.signInCodeId, button);
    },
    'secondary wide code-way',
  );
  const update = () => {
    const kind = kindOf(o.identifier.input.value);
    button.hidden = kind === null || !signInByCode(kind);
    if (kind) button.textContent = t(kind === 'phone' ? 'textCode' : 'emailCode');
  };
  o.identifier.input.addEventListener('input', update);
  update();
  const resume = () => {
    const kept = pendingStep.read<Pending>(PENDING);
    if (!kept) return;
    if (kept.uid !== o.uid || !(Date.now() < kept.sentAt + codeLifetimeSeconds() * 1000)) {
      pendingStep.clear(PENDING);
      return;
    }
    refill(o.identifier, kept.identifier);
    codeStep(o, kept.identifier, kept.signInCodeId, button, kept.sentAt);
  };
  return { button, resume };
}

/**
 * The code step: where the code went (the address as typed), the one-time-code input, the resend
 * with its cooldown (ui/otp.ts codeSent), the link the message carries too, and the way back.
 */
function codeStep(
  o: CodeWay,
  who: IdentifierForm,
  sentId: string,
  asked: HTMLButtonElement,
  sentEarlier: number | null = null,
): void {
  const { card } = o;
  let signInCodeId = sentId;
  const first = [...card.childNodes];
  const code = codeField({
    label: t('code.label'),
    name: 'code',
    kind: 'message',
    hint: `${codeHint('message')} ${codeExpiresText()}`,
  });
  const sending = codeSent(who, t('code.sent', { identifier: who.identifier }));
  const { resend } = sending;
  const remember = () =>
    pendingStep.write(PENDING, {
      identifier: who,
      signInCodeId,
      sentAt: sending.sentAt() ?? Date.now(),
      uid: o.uid,
    } satisfies Pending);
  const another = h('button', { type: 'button', class: 'link' }, t('code.anotherWay'));
  another.addEventListener('click', () => {
    pendingStep.clear(PENDING);
    card.replaceChildren(...first);
    o.alert.hidden = true;
    // Its action ended off the page (the step had replaced it): usable again.
    if (!isHeld(asked)) asked.disabled = false;
    o.back.focus();
  });
  const form = makeForm({
    fields: [code],
    submit: t('code.submit'),
    extra: [h('p', { class: 'hint code-link' }, t('code.link'))],
    buttons: [resend, another],
    async onSubmit() {
      code.requireWhole();
      let result: Awaited<ReturnType<typeof api.signInWithCode>>;
      try {
        result = await api.signInWithCode(signInCodeId, who, code.value());
      } catch (error) {
        if (asProblem(error).code === 'identity.sign_in_refused') {
          // Past the code's lifetime the page says it expired; else wrong, spent or ended alike.
          const explained = sending.explain(error, 'code');
          if (explained !== error) throw explained;
          throw new InteractionError({ code: 'ui.sign_in_code_refused', status: 401 });
        }
        throw error;
      }
      pendingStep.clear(PENDING);
      afterFirstStep(result, o.uid, null, true);
    },
  });
  form.el.querySelector('button[type="submit"]')?.classList.add('primary', 'wide');
  resend.addEventListener('click', async () => {
    resend.disabled = true;
    try {
      // A new code ends the one before it: the step answers at the new id.
      signInCodeId = (await api.sendSignInCode(who)).signInCodeId;
      form.alert.hidden = true;
      sending.sent();
      remember();
      code.setError(null);
      code.input.value = '';
      code.input.focus();
    } catch (error) {
      // A 429 holds the resend button (not Sign in) until the wait is over.
      form.fail(error, resend);
    } finally {
      if (!isHeld(resend)) resend.disabled = false;
    }
  });
  if (sentEarlier === null) {
    sending.sent();
    remember();
  } else {
    // After a reload: the code went a while ago (its time kept, so "expired" still holds).
    sending.sentEarlier(sentEarlier);
    sending.status.textContent = t('code.sent', { identifier: who.identifier });
  }
  swap(
    card,
    h(
      'h2',
      { id: 'sign-in-code-step', tabindex: '-1' },
      t(who.identifierType === 'phone' ? 'code.heading.phone' : 'code.heading.email'),
    ),
    sending.status,
    form.el,
  );
}
