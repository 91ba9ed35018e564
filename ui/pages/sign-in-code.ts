import { api, asProblem, codeLifetimeSeconds, InteractionError, signInByCode, signInLinks } from '../api.js';
import { h } from '../dom.js';
import { actionButton, makeForm } from '../forms.js';
import { type IdentifierField, type IdentifierForm, kindOf, pendingStep } from '../identifier.js';
import { t } from '../messages/sign-in.js';
import { codeExpiresText, codeField, codeHint, codeSent, refill } from '../otp.js';
import { isHeld } from '../wait.js';
import { afterFirstStep, finish } from './second-step.js';
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

/**
 * How often the code step asks where its code stands (SIGN_IN_LINKS): often enough that a link
 * opened in another tab shows here within seconds, and under RATE_LIMIT_ANSWERS_A_CHALLENGE's
 * default (10 a minute per client address).
 */
const POLL_MS = 7000;

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
  // The link signed in another browser: this one needs a new code (the link spent it).
  const elsewhere = h('p', { class: 'notice code-elsewhere', role: 'status', tabindex: '-1', hidden: true });
  let timer: number | undefined;
  const another = h('button', { type: 'button', class: 'link' }, t('code.anotherWay'));
  another.addEventListener('click', () => {
    window.clearTimeout(timer);
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
    extra: signInLinks() ? [h('p', { class: 'hint code-link' }, t('code.link'))] : [],
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
      afterFirstStep(result, o.uid, null, 'code');
    },
  });
  form.el.querySelector('button[type="submit"]')?.classList.add('primary', 'wide');
  /**
   * While the step is on the page, where its code stands (the message's link may be opened in
   * another tab or browser): `completed` (this browser, another tab: the cookie is shared) goes where
   * a sign-in goes once this page has renewed with the cookie; `completed_elsewhere` says the link
   * signed in another browser. Stops once the step has left the page.
   */
  const watch = (ms = POLL_MS) => {
    window.clearTimeout(timer);
    if (!signInLinks()) return;
    timer = window.setTimeout(async () => {
      if (!form.el.isConnected) return;
      // Past the code's lifetime there is nothing left to learn (the page keeps its own clock).
      const sentAt = sending.sentAt();
      if (sentAt !== null && Date.now() > sentAt + codeLifetimeSeconds() * 1000) return;
      const asked = signInCodeId;
      let status: Awaited<ReturnType<typeof api.signInCodeStatus>>;
      try {
        status = await api.signInCodeStatus(asked);
      } catch (error) {
        const p = asProblem(error);
        if (p.code === 'rate_limit.exceeded') watch(Math.max(POLL_MS, (p.retryAfter ?? 0) * 1000));
        // A 401: this browser holds no binding to the code (its cookie refused): nothing to learn.
        else if (p.status !== 401) watch();
        return;
      }
      // Left meanwhile, or a new code sent (which watches its own).
      if (!form.el.isConnected || asked !== signInCodeId) return;
      if (status === 'completed') {
        pendingStep.clear(PENDING);
        if (await api.renewFromCookie()) finish(o.uid);
      } else if (status === 'completed_elsewhere') {
        pendingStep.clear(PENDING);
        elsewhere.textContent = t('code.elsewhere');
        elsewhere.hidden = false;
        elsewhere.focus();
      } else watch();
    }, ms);
  };
  resend.addEventListener('click', async () => {
    resend.disabled = true;
    try {
      // A new code ends the one before it: the step answers at the new id.
      signInCodeId = (await api.sendSignInCode(who)).signInCodeId;
      form.alert.hidden = true;
      sending.sent();
      remember();
      elsewhere.hidden = true;
      watch();
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
    elsewhere,
    form.el,
  );
  watch();
}
