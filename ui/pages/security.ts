import { api, asProblem, passkeyStatus } from '../api.js';
import { announce, field, formatDate, h, newPasswordField } from '../dom.js';
import { actionButton, alertBox, makeForm } from '../forms.js';
import {
  displayNameOf,
  goToProvider,
  providerButton,
  providerMark,
  providerSentence,
  takeProviderReturn,
  takeStartedIntent,
} from '../providers.js';
import { qrSvg } from '../qr.js';
import type { PageContent } from '../router.js';
import { elevated } from '../stepup.js';
import { methodName } from './home.js';
import { swap } from './steps.js';

export async function securityPage(): Promise<PageContent> {
  const sections = await Promise.all([
    passwordSection(),
    authenticatorSection(),
    recoverySection(),
    passkeySection(),
    methodsSection(),
    connectedSection(),
  ]);
  return { title: 'Security', body: sections };
}

function card(id: string, title: string): { el: HTMLElement; heading: HTMLElement } {
  const heading = h('h2', { id: `${id}-title`, tabindex: '-1' }, title);
  return { el: h('section', { class: 'card', id, 'aria-labelledby': `${id}-title` }, heading), heading };
}

function passwordSection(): HTMLElement {
  const { el } = card('password', 'Password');
  const current = field({
    label: 'Current password',
    name: 'currentPassword',
    type: 'password',
    autocomplete: 'current-password',
  });
  const next = newPasswordField({
    label: 'New password',
    name: 'newPassword',
    hint: 'Your other sessions are signed out.',
  });
  const done = h('p', { class: 'notice', role: 'status' });
  const form = makeForm({
    fields: [current, next],
    submit: 'Change password',
    async onSubmit() {
      await api.changePassword(current.input.value, next.input.value);
      current.input.value = '';
      next.input.value = '';
      done.textContent = 'Password changed. Your other sessions were signed out.';
    },
  });
  el.append(done, form.el);
  return el;
}

async function authenticatorSection(): Promise<HTMLElement> {
  const { el } = card('authenticator', 'Authenticator app');
  const body = h('div');
  el.append(body);
  /** Draws the list and the start button; `focusStart` puts the focus on that button (after a cancel). */
  const draw = async (focusStart = false) => {
    const factors = await api.secondFactors();
    const alert = alertBox();
    const slot = h('div');
    const list = h(
      'ul',
      { class: 'items' },
      factors.map((f) =>
        h(
          'li',
          null,
          h(
            'span',
            { class: 'item-main' },
            f.label ?? 'Authenticator app',
            h('span', { class: 'item-meta' }, `Added ${formatDate(f.verifiedAt)}`),
          ),
          actionButton(
            'Remove',
            alert,
            async () => {
              await elevated(slot, (token) => api.removeSecondFactor(f.id, token));
              announce('Authenticator removed');
              await draw();
            },
            'danger',
            { 'aria-label': `Remove ${f.label ?? 'authenticator app'}` },
          ),
        ),
      ),
    );
    const start = actionButton(
      'Set up an authenticator app',
      alert,
      async () => {
        const enrolment = await elevated(slot, (token) => api.enrolSecondFactor('Authenticator app', token));
        enrolStep(body, enrolment, draw, () => draw(true));
      },
      factors.length ? 'secondary' : '',
    );
    body.replaceChildren(
      h(
        'p',
        null,
        factors.length
          ? 'Signing in asks for a code from your app after the password.'
          : 'Add a second step to sign-in: a code from an app such as a password manager or authenticator.',
      ),
      alert,
      slot,
      factors.length ? list : '',
      h('div', { class: 'actions' }, start),
    );
    if (focusStart) start.focus();
  };
  await draw();
  return el;
}

/**
 * The enrolment's scan-and-confirm step. "Cancel" forgets the secret on the page and goes back to
 * the start: the service has no route to discard a pending enrolment, and none is needed (it never
 * signs in nor shows in any list, and the next "Set up" revokes it: docs/decisions.md).
 */
function enrolStep(
  body: HTMLElement,
  enrolment: { secret: string; otpauthUri: string },
  done: () => Promise<void>,
  cancelled: () => Promise<void>,
): void {
  const code = field({
    label: 'Code from the app',
    name: 'code',
    autocomplete: 'one-time-code',
    inputmode: 'numeric',
    hint: 'After scanning, the app shows a 6-digit code.',
  });
  const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    try {
      await cancelled();
      announce('Authenticator setup cancelled');
    } catch (error) {
      form.fail(error);
      cancel.disabled = false;
    }
  });
  const form = makeForm({
    fields: [code],
    submit: 'Confirm',
    buttons: [cancel],
    async onSubmit() {
      await api.confirmSecondFactor(code.input.value.trim());
      announce('Authenticator app added');
      await done();
      const note = h(
        'p',
        { class: 'notice', role: 'status', tabindex: '-1' },
        'Authenticator app added. Now create recovery codes in case you lose it.',
      );
      body.prepend(note);
      note.focus();
    },
  });
  swap(
    body,
    h('h3', { tabindex: '-1' }, 'Scan this code with your app'),
    qrSvg(enrolment.otpauthUri, 'QR code to add this account to an authenticator app'),
    h('p', null, 'Cannot scan? Enter this key in the app:'),
    h('p', { class: 'secret', id: 'totp-secret' }, enrolment.secret),
    form.el,
  );
  (body.querySelector('h3') as HTMLElement).focus();
}

async function recoverySection(): Promise<HTMLElement> {
  const { el } = card('recovery', 'Recovery codes');
  const body = h('div');
  el.append(body);
  const draw = async () => {
    const status = await api.recoveryCodeStatus();
    const alert = alertBox();
    const slot = h('div');
    const issue = actionButton(
      status.remaining > 0 ? 'Create new recovery codes' : 'Create recovery codes',
      alert,
      async () => {
        const codes = await elevated(slot, (token) => api.issueRecoveryCodes(token));
        showCodes(body, codes, draw);
      },
      'secondary',
    );
    body.replaceChildren(
      h(
        'p',
        null,
        status.remaining > 0
          ? `${status.remaining} unused codes left, created ${formatDate(status.issuedAt)}. Creating new ones cancels these.`
          : 'Recovery codes finish a sign-in when your authenticator app is not at hand.',
      ),
      alert,
      slot,
      h('div', { class: 'actions' }, issue),
    );
  };
  await draw();
  return el;
}

function showCodes(body: HTMLElement, codes: string[], done: () => Promise<void>): void {
  const text = `${codes.join('\n')}\n`;
  const status = h('p', { role: 'status' });
  const copy = h('button', { type: 'button', class: 'secondary' }, 'Copy');
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = 'Copied to the clipboard.';
    } catch {
      status.textContent = 'Copying is not allowed here: select the codes and copy them.';
    }
  });
  const download = h('button', { type: 'button', class: 'secondary' }, 'Download');
  download.addEventListener('click', () => {
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
    const a = h('a', { href: url, download: 'recovery-codes.txt', hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    status.textContent = 'Downloaded recovery-codes.txt.';
  });
  const saved = h('button', { type: 'button' }, 'I have saved them');
  saved.addEventListener('click', async () => {
    await done();
    (body.closest('section')?.querySelector('h2') as HTMLElement | null)?.focus();
  });
  swap(
    body,
    h('h3', { tabindex: '-1' }, 'Your new recovery codes'),
    h('p', { class: 'info' }, 'They are shown only now. Keep them somewhere safe: each works once.'),
    h(
      'ol',
      { class: 'codes', id: 'recovery-codes' },
      codes.map((c) => h('li', null, c)),
    ),
    status,
    h('div', { class: 'actions' }, copy, download, saved),
  );
  (body.querySelector('h3') as HTMLElement).focus();
}

async function passkeySection(): Promise<HTMLElement> {
  const { el } = card('passkeys', 'Passkeys');
  const body = h('div');
  el.append(body);
  const draw = async () => {
    const all = await api.signInMethods();
    const passkeys = all.filter((m) => m.kind === 'passkey');
    const alert = alertBox();
    const slot = h('div');
    const status = passkeyStatus();
    const list = h(
      'ul',
      { class: 'items' },
      passkeys.map((p) =>
        h(
          'li',
          null,
          h(
            'span',
            { class: 'item-main' },
            p.display ?? 'Passkey',
            h(
              'span',
              { class: 'item-meta' },
              `Added ${formatDate(p.verifiedAt)} · last used ${formatDate(p.lastUsedAt)}`,
            ),
          ),
          actionButton(
            'Remove',
            alert,
            async () => {
              await elevated(slot, (token) => api.removeSignInMethod(p.id, token));
              announce('Passkey removed');
              await draw();
            },
            'danger',
            { 'aria-label': `Remove passkey ${p.display ?? ''}`.trim() },
          ),
        ),
      ),
    );
    const parts: (Node | string)[] = [
      h(
        'p',
        null,
        'A passkey signs you in with your device’s screen lock: nothing to type, nothing to phish.',
      ),
      alert,
      slot,
    ];
    if (passkeys.length) parts.push(list);
    if (status.usable) {
      const label = field({
        label: 'Name for the new passkey',
        name: 'label',
        required: false,
        hint: 'For example “Work laptop”.',
        maxlength: 64,
      });
      const form = makeForm({
        fields: [label],
        submit: 'Add a passkey',
        async onSubmit() {
          const name = label.input.value.trim() || 'Passkey';
          await elevated(slot, (token) => api.addPasskey(name, token));
          announce('Passkey added');
          await draw();
        },
      });
      parts.push(form.el);
    } else {
      parts.push(h('p', { class: 'info' }, status.reason));
    }
    body.replaceChildren(...parts);
  };
  await draw();
  return el;
}

async function methodsSection(): Promise<HTMLElement> {
  const { el } = card('methods', 'Sign-in methods');
  const body = h('div');
  el.append(body);
  const draw = async () => {
    // Passkeys and connected accounts have their own sections.
    const methods = (await api.signInMethods()).filter((m) => m.kind !== 'passkey' && m.kind !== 'provider');
    const alert = alertBox();
    const slot = h('div');
    const list = h(
      'ul',
      { class: 'items', id: 'method-list' },
      methods.map((m) => {
        const name = m.display ? `${methodName(m.kind)} ${m.display}` : methodName(m.kind);
        return h(
          'li',
          null,
          h(
            'span',
            { class: 'item-main' },
            m.display ?? methodName(m.kind),
            h(
              'span',
              { class: 'item-meta' },
              `${methodName(m.kind)} · last used ${formatDate(m.lastUsedAt)}`,
            ),
          ),
          actionButton(
            'Remove',
            alert,
            async () => {
              await elevated(slot, (token) => api.removeSignInMethod(m.id, token));
              announce(`${name} removed`);
              await draw();
            },
            'danger',
            { 'aria-label': `Remove ${name}` },
          ),
        );
      }),
    );
    const email = field({
      label: 'Add an email address',
      name: 'identifier',
      type: 'email',
      autocomplete: 'email',
    });
    const form = makeForm({
      fields: [email],
      submit: 'Send a code',
      async onSubmit() {
        const address = email.input.value;
        await elevated(slot, (token) => api.addSignInMethod(address, token));
        confirmStep(address, form.el);
      },
    });
    const phone = field({
      label: 'Add a phone number',
      name: 'phone',
      type: 'tel',
      autocomplete: 'tel',
      hint: 'A code is sent to it by text message.',
    });
    const country = field({
      label: 'Country code of that number',
      name: 'country',
      autocomplete: 'country',
      minlength: 2,
      maxlength: 2,
      hint: 'Two letters, for example GB, FR or US.',
    });
    const phoneForm = makeForm({
      fields: [phone, country],
      submit: 'Text a code to this number',
      async onSubmit() {
        const number = phone.input.value.trim();
        await elevated(slot, (token) =>
          api.addPhoneNumber(number, country.input.value.trim().toUpperCase(), token),
        );
        confirmStep(number, phoneForm.el);
      },
    });
    const confirmStep = (address: string, replaced: HTMLElement) => {
      const code = field({
        label: 'Code',
        name: 'code',
        autocomplete: 'one-time-code',
        hint: `The code we sent to ${address}.`,
      });
      const confirm = makeForm({
        fields: [code],
        submit: 'Confirm address',
        async onSubmit() {
          await elevated(slot, (token) => api.confirmSignInMethod(code.input.value.trim(), token));
          announce('Address added');
          await draw();
        },
      });
      const box = h('div', null, h('h3', { tabindex: '-1' }, `Confirm ${address}`), confirm.el);
      replaced.replaceWith(box);
      (box.querySelector('h3') as HTMLElement).focus();
    };
    body.replaceChildren(alert, slot, list, form.el, phoneForm.el);
  };
  await draw();
  return el;
}

/**
 * Connected accounts: the providers linked as ways in (Disconnect: elevated, and refused for the
 * last way in), and "Connect <name>" for each configured provider not linked yet: a link flow,
 * elevated first, that comes back here with `result=linked` or an error. Not shown when no provider
 * is configured and none is linked.
 */
async function connectedSection(): Promise<HTMLElement> {
  const back = takeProviderReturn('/security');
  const { el } = card('connected', 'Connected accounts');
  const body = h('div');
  el.append(body);
  const draw = async (said?: { text: string; ok: boolean }) => {
    const [methods, providers] = await Promise.all([api.signInMethods(), api.providers()]);
    const links = methods.filter((m) => m.kind === 'provider');
    const linked = new Set(links.map((m) => m.display));
    const alert = alertBox();
    const done = h('p', { class: 'notice', role: 'status', tabindex: '-1' });
    const slot = h('div');
    if (said?.ok) done.textContent = said.text;
    else if (said) {
      alert.textContent = said.text;
      alert.hidden = false;
    }
    const list = h(
      'ul',
      { class: 'items', id: 'connected-list' },
      links.map((m) => {
        const name = displayNameOf(providers, m.display);
        return h(
          'li',
          null,
          h(
            'span',
            { class: 'item-main' },
            providerMark(name),
            name,
            h(
              'span',
              { class: 'item-meta' },
              `Connected ${formatDate(m.verifiedAt)} · last used ${formatDate(m.lastUsedAt)}`,
            ),
          ),
          actionButton(
            'Disconnect',
            alert,
            async () => {
              try {
                await elevated(slot, (token) => api.removeSignInMethod(m.id, token));
              } catch (error) {
                if (asProblem(error).code !== 'identity.last_sign_in_method') throw error;
                throw new Error(
                  `${name} is your last way in, so it cannot be disconnected. Add a password or a passkey first.`,
                );
              }
              announce(`${name} disconnected`);
              await draw({ text: `${name} is no longer connected.`, ok: true });
            },
            'danger',
            { 'aria-label': `Disconnect ${name}` },
          ),
        );
      }),
    );
    const connect = providers
      .filter((p) => !linked.has(p.name))
      .map((p) =>
        providerButton(`Connect ${p.displayName}`, p.displayName, alert, () =>
          elevated(slot, (token) => goToProvider(p, 'link', '/security', token)),
        ),
      );
    body.replaceChildren(
      h(
        'p',
        null,
        links.length
          ? 'You can also sign in with these accounts.'
          : 'Connect an account you already have, to sign in with it here.',
      ),
      done,
      alert,
      slot,
      links.length ? list : '',
      connect.length ? h('div', { class: 'actions providers' }, connect) : '',
    );
    el.hidden = links.length === 0 && providers.length === 0 && !said;
    if (said) setTimeout(() => (said.ok ? done : alert).isConnected && (said.ok ? done : alert).focus(), 0);
  };
  let said: { text: string; ok: boolean } | undefined;
  if (back) {
    const providers = await api.providers();
    const name = displayNameOf(providers, back.provider);
    const capitalised = `${name.charAt(0).toUpperCase()}${name.slice(1)}`;
    if (back.handoff) {
      takeStartedIntent();
      // A step-up flow (the step-up box's "Use <provider>"): the code becomes this page's elevation.
      try {
        await api.stepUpWithProviderHandoff(back.handoff);
        said = { text: `You confirmed it is you with ${capitalised}. You can go on.`, ok: true };
      } catch (error) {
        said = {
          text:
            asProblem(error).code === 'identity.step_up_unavailable'
              ? `Confirm it is you with your authenticator or passkey instead: ${capitalised} alone is not enough on this account.`
              : `It could not be confirmed with ${capitalised}. Please try again.`,
          ok: false,
        };
      }
    } else if (takeStartedIntent() === 'step_up') {
      said = { text: `It could not be confirmed with ${capitalised}. Please try again.`, ok: false };
    } else {
      said =
        back.result === 'linked' && !back.error
          ? { text: `${capitalised} is now connected.`, ok: true }
          : { text: providerSentence(back.error, name, 'link'), ok: false };
    }
  }
  await draw(said);
  return el;
}
