import { api, asProblem, passkeyAutofillAvailable, passkeyStatus, ssoAvailable } from '../api.js';
import { append, field, h, passwordToggle } from '../dom.js';
import { actionButton, alertBox, FieldRefusal, type Form, makeForm } from '../forms.js';
import { type IdentifierForm, identifierField, pendingStep } from '../identifier.js';
import { t } from '../messages/sign-in.js';
import { t as ssoText } from '../messages/sso.js';
import { codeField } from '../otp.js';
import { continueWith } from '../providers.js';
import type { PageContent } from '../router.js';
import { afterFirstStep, finish, PENDING, type Pending } from './second-step.js';
import { codeButton } from './sign-in-code.js';
import { startConfirmation } from './sign-up.js';

/**
 * Focus on `el` once the page is drawn (the router focuses the heading when it appends the page;
 * this comes after). A page replaced in the meantime is left alone.
 */
function focusWhenShown(el: HTMLElement, tries = 20): void {
  setTimeout(() => {
    if (el.isConnected) {
      // A notice that took the focus first (a provider flow's answer) keeps it.
      if (document.activeElement?.closest('.alert')) return;
      el.focus();
    } else if (tries > 0) focusWhenShown(el, tries - 1);
  }, 0);
}

export function signInPage(): PageContent {
  return { title: t('title'), body: signInBody(null) };
}

/** The "or" between the password and the other ways in. */
const divider = () => h('p', { class: 'or-divider' }, h('span', null, t('or')));

/**
 * The sign-in card (password, then a second step when needed; passkey and "Continue with …" under
 * an "or"), for the account's own sign-in page and for an application's (#/authorize/<uid>, `uid`
 * set). Its first field takes the focus once drawn; the application's `loginHint` fills the
 * identifier, and the focus then goes to the field after it.
 */
export function signInBody(uid: string | null, loginHint: string | null = null): (Node | string)[] {
  const identifier = identifierField('sign-in');
  if (loginHint) {
    identifier.input.value = loginHint;
    // The country picker follows what the field holds, as when typed.
    identifier.input.dispatchEvent(new Event('input'));
  }
  const password = field({
    label: t('password'),
    name: 'password',
    type: 'password',
    autocomplete: 'current-password',
  });
  // The eye inside the input; "Forgot password?" under the field, right aligned, so that the Tab
  // order is identifier, password (and its eye), "Forgot password?", Sign in.
  passwordToggle(password.input);
  password.wrap.append(
    h('p', { class: 'forgot-row' }, h('a', { href: '#/recover', class: 'forgot' }, t('forgot'))),
  );

  const way = h('div', { class: 'way-on' });
  way.hidden = true;
  const route = uid ? `/authorize/${encodeURIComponent(uid)}` : '/sign-in';
  // Identifier first when an organization signs in through an IdP (docs/sso.md): the password
  // shows once the address is known not to, the same for every such address.
  let identifierFirst = ssoAvailable();
  password.wrap.hidden = identifierFirst;
  const form = makeForm({
    fields: [identifier, password],
    submit: identifierFirst ? ssoText('next') : t('submit'),
    async onSubmit() {
      way.hidden = true;
      const who = identifier.value();
      if (identifierFirst) {
        const url = who.identifierType === 'email' ? await api.ssoRedirectFor(who.identifier, route) : null;
        if (url) {
          form.alert.hidden = true;
          location.assign(url);
          return;
        }
        identifierFirst = false;
        password.wrap.hidden = false;
        const submit = form.el.querySelector('button[type="submit"]');
        if (submit) submit.textContent = t('submit');
        password.input.focus();
        return;
      }
      try {
        afterFirstStep(await api.signIn(who, password.input.value), uid);
      } catch (error) {
        if (asProblem(error).code === 'identity.sign_in_refused')
          offerConfirmation(way, who, password.input.value);
        throw error;
      }
    },
  });
  form.el.querySelector('button[type="submit"]')?.classList.add('primary', 'wide');
  const card = h('section', { class: 'card sign-in-card', 'aria-label': t('cardLabel') });
  // "Email me a code" / "Text me a code" under the password's button, when the service has them.
  const byCode = codeButton({ card, identifier, alert: form.alert, uid, back: password.input });
  if (byCode) form.el.querySelector('.actions')?.append(byCode.button);
  // A provider flow started here comes back here (#/authorize/<uid> for an application's sign-in).
  const providers = continueWith({
    route,
    signedIn: (result, name) => afterFirstStep(result, uid, name),
  });
  const autofill = passkeyAutofill(identifier.input, uid, form);
  const passkey = passkeySignIn(uid, async () => autofill?.abort());
  // "Continue with …" above the form, under an "or" once the providers' list is in (issue 46);
  // the passkey under the form's buttons, under an "or" of its own.
  const orProviders = divider();
  const showOr = () => {
    orProviders.hidden = providers.card.hidden;
  };
  showOr();
  new MutationObserver(showOr).observe(providers.card, { attributes: true, attributeFilter: ['hidden'] });
  focusWhenShown(loginHint && !identifierFirst ? password.input : identifier.input);
  // The offer to confirm comes under the form's buttons: the alert and the fields stay together.
  append(card, [
    providers.card,
    orProviders,
    form.el,
    way,
    passkey?.usable ? divider() : null,
    passkey?.el ?? null,
  ]);
  byCode?.resume();
  return [
    providers.notice,
    card,
    h('p', { class: 'sign-in-below' }, `${t('newHere')} `, h('a', { href: '#/sign-up' }, t('createAccount'))),
  ];
}

/**
 * The way on from a refused sign-in, shown after every refusal alike (so it tells nothing): an
 * account registered but never confirmed cannot sign in, and signing up again with the same
 * identifier and password sends it a fresh code. A confirmed identifier answers 409, which
 * sign-up reveals to anyone already (docs/decisions.md, "A refused sign-in offers the confirmation").
 * The service answers the same 401 for an unconfirmed account as for a wrong password, so the page
 * cannot know when it helps: it is a quiet line under the form's buttons, not a box between the
 * alert and the fields (issue 46).
 */
function offerConfirmation(way: HTMLElement, who: IdentifierForm, password: string): void {
  const phone = who.identifierType === 'phone';
  const alert = alertBox();
  const outcome = h('div');
  const button = actionButton(
    phone ? t('confirmPhone') : t('confirmAddress'),
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
            ? t(phone ? 'phoneConfirmed' : 'addressConfirmed')
            : t('impossiblePassword');
        const note = h(
          'p',
          { class: 'notice', role: 'status', tabindex: '-1' },
          `${text} `,
          h('a', { href: '#/recover' }, t('resetPassword')),
        );
        outcome.replaceChildren(note);
        note.focus();
      }
    },
    'link',
  );
  way.replaceChildren(h('p', null, `${t('neverConfirmed')} `, button), alert, outcome);
  way.hidden = false;
}

/** Why passkeys cannot be used here, in the page's language (api.ts words it in English). */
function passkeyReason(reason: string): string {
  const host = /opened on (\S+) \(it is on (\S+?)\)/.exec(reason);
  return host ? t('passkeyHost', { rp: host[1], host: host[2] }) : t('passkeyBrowser');
}

/**
 * "Sign in with a passkey": a full-width button, or why passkeys do not work on this page (nothing
 * at all when the service has them off: there is nothing a person could do about it).
 */
function passkeySignIn(
  uid: string | null,
  beforeAsking: () => Promise<void>,
): { el: HTMLElement; usable: boolean } | null {
  const status = passkeyStatus();
  if (!status.usable) {
    if (/not enabled/.test(status.reason)) return null;
    return { el: h('p', { class: 'hint passkey-hint' }, passkeyReason(status.reason)), usable: false };
  }
  const alert = alertBox();
  const button = actionButton(
    t('passkey'),
    alert,
    async () => {
      // The browser has one passkey request at a time: the autofill's goes first.
      await beforeAsking();
      await api.signInWithPasskey();
      finish(uid);
    },
    'secondary wide',
  );
  return { el: h('div', { class: 'passkey-way' }, alert, button), usable: true };
}

/** The autofill's passkey request of the sign-in page shown, if any (one at a time). */
let autofillRequest: AbortController | null = null;

/**
 * Passkeys offered in the identifier field's autofill (`autocomplete="username webauthn"`, WebAuthn
 * conditional mediation), when passkeys work here and the browser has it: the request starts as
 * the page shows and waits for the person to pick a passkey there (which signs in); it is aborted
 * when the person leaves the page, or presses "Sign in with a passkey" (`abort`).
 */
function passkeyAutofill(
  input: HTMLInputElement,
  uid: string | null,
  form: Form,
): { abort(): Promise<void> } | null {
  if (!passkeyStatus().usable) return null;
  input.setAttribute('autocomplete', 'username webauthn');
  autofillRequest?.abort();
  const controller = new AbortController();
  autofillRequest = controller;
  const abort = () => {
    controller.abort();
    window.removeEventListener('hashchange', abort);
    if (autofillRequest === controller) autofillRequest = null;
  };
  window.addEventListener('hashchange', abort);
  const settled = (async () => {
    if (!(await passkeyAutofillAvailable()) || controller.signal.aborted) return;
    try {
      if (await api.signInWithPasskeyAutofill(controller.signal)) {
        abort();
        finish(uid);
      }
    } catch (error) {
      // A passkey picked but refused (removed from the account since): said as the button would.
      if (!controller.signal.aborted && input.isConnected) form.fail(error);
    }
  })();
  return {
    // Answers once the browser has let the request go (the next one would otherwise wait for it).
    abort: () => {
      abort();
      return settled;
    },
  };
}

export function secondFactorPage(): PageContent {
  const pending = pendingStep.read<Pending>(PENDING);
  if (!pending || !(Date.parse(pending.expiresAt) > Date.now())) {
    pendingStep.clear(PENDING);
    return {
      title: t('second.title'),
      body: [
        h('p', null, t('second.expired')),
        h('p', null, h('a', { href: '#/sign-in' }, t('second.signInAgain'))),
      ],
    };
  }
  const { ticket, uid, via, byCode } = pending;
  const restart = uid ? `#/authorize/${encodeURIComponent(uid)}` : '#/sign-in';
  let recovery = false;
  // The authenticator's code in the shared one-time-code input (ui/otp.ts: autocomplete
  // one-time-code, digits only, 6 to 8 of them, a pasted "123 456" kept as "123456"); a recovery
  // code in a plain text input of its own, since it holds letters and hyphens. One shows at a
  // time: the hidden one is disabled, so it is neither checked nor sent.
  const code = codeField({ label: t('second.code'), name: 'code', kind: 'authenticator' });
  const recoveryCode = field({
    label: t('second.recoveryCode'),
    name: 'recoveryCode',
    autocomplete: 'off',
    hint: t('second.recoveryHint'),
  });
  recoveryCode.input.spellcheck = false;
  recoveryCode.input.setAttribute('spellcheck', 'false');
  recoveryCode.input.setAttribute('autocapitalize', 'characters');
  const show = (useRecovery: boolean) => {
    recovery = useRecovery;
    code.wrap.hidden = recovery;
    code.input.disabled = recovery;
    recoveryCode.wrap.hidden = !recovery;
    recoveryCode.input.disabled = !recovery;
    code.input.value = '';
    recoveryCode.input.value = '';
    code.setError(null);
    recoveryCode.setError(null);
    // The intro speaks of the way in use: the authenticator, or recovery codes.
    intro.textContent = recovery
      ? t('second.introRecovery')
      : via
        ? t('second.introVia', { via })
        : byCode
          ? t(byCode === 'link' ? 'second.introLink' : 'second.introCode')
          : t('second.intro');
  };
  const intro = h('p');
  show(false);
  const toggle = h('button', { type: 'button', class: 'link' }, t('second.useRecovery'));
  toggle.addEventListener('click', () => {
    show(!recovery);
    form.alert.hidden = true;
    toggle.textContent = recovery ? t('second.useAuthenticator') : t('second.useRecovery');
    (recovery ? recoveryCode : code).input.focus();
  });
  const card = h('section', { class: 'card sign-in-card', 'aria-label': t('second.cardLabel') });
  const below = h(
    'p',
    { class: 'sign-in-below' },
    h('a', { href: restart, onclick: () => pendingStep.clear(PENDING) }, t('second.startAgain')),
  );
  const form = makeForm({
    fields: [code, recoveryCode],
    submit: t('second.submit'),
    buttons: [toggle],
    async onSubmit() {
      const usedRecovery = recovery;
      // A recovery code goes as typed, in either case, with or without its hyphens (the service
      // accepts both); spaces from a copy are dropped.
      if (!usedRecovery) code.requireWhole();
      const value = usedRecovery ? recoveryCode.input.value.replace(/\s+/g, '') : code.value();
      try {
        await api.completeSecondFactor(ticket, usedRecovery ? { recoveryCode: value } : { code: value });
      } catch (error) {
        const p = asProblem(error);
        // The service answers the same 401 for every cause: the words follow the mode only.
        if (usedRecovery && p.status === 401 && p.code === 'identity.second_factor_refused') {
          throw new FieldRefusal(t('second.recoveryRefused'), ['recoveryCode']);
        }
        throw error;
      }
      pendingStep.clear(PENDING);
      if (!usedRecovery) finish(uid);
      else {
        // Signed in: the step's intro and "Start again" no longer apply.
        intro.hidden = true;
        below.hidden = true;
        await codesLeft(card, uid);
      }
    },
  });
  form.el.querySelector('button[type="submit"]')?.classList.add('primary', 'wide');
  card.append(form.el);
  const passkey = secondStepPasskey(uid);
  if (passkey) card.append(divider(), passkey);
  focusWhenShown(code.input);
  return { title: t('second.title'), body: [intro, card, below] };
}

/**
 * The second step by passkey, when passkeys work here: the passkey sign-in itself (a passkey is
 * a sign-in of its own, both factors in one), which replaces the pending step.
 */
function secondStepPasskey(uid: string | null): HTMLElement | null {
  if (!passkeyStatus().usable) return null;
  const alert = alertBox();
  const button = actionButton(
    t('second.usePasskey'),
    alert,
    async () => {
      await api.signInWithPasskey();
      pendingStep.clear(PENDING);
      finish(uid);
    },
    'secondary wide',
  );
  return h('div', { class: 'passkey-way' }, alert, button);
}

/**
 * After a recovery code: signed in, with how many codes are left (each works once), before going
 * on. Should the count not come, the sign-in goes on at once.
 */
async function codesLeft(card: HTMLElement, uid: string | null): Promise<void> {
  let remaining: number;
  try {
    remaining = (await api.recoveryCodeStatus()).remaining;
  } catch {
    finish(uid);
    return;
  }
  const text = h(
    'p',
    { class: 'notice', role: 'status', tabindex: '-1', id: 'codes-left' },
    `${t('second.signedIn')} `,
    remaining > 0 ? t('second.codesLeft', { count: remaining }) : t('second.noCodesLeft'),
  );
  const next = h('button', { type: 'button', class: 'primary wide' }, t('second.continue'));
  next.addEventListener('click', () => finish(uid));
  card.replaceChildren(text, h('div', { class: 'actions' }, next));
  // The sentence first (read out as it takes the focus), the button next.
  text.focus();
}
