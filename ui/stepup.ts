import {
  api,
  asProblem,
  codeLifetimeSeconds,
  InteractionError,
  passkeyStatus,
  type StepUpChannel,
} from './api.js';
import { field, h, uid } from './dom.js';
import { makeForm } from './forms.js';
import { t as otp } from './messages/otp.js';
import { t } from './messages/stepup.js';
import { Cancelled, messageFor } from './problems.js';
import { goToProvider } from './providers.js';

/**
 * Runs an elevated action: with the elevation this page already holds (if any), and when there is
 * none or the service answers identity.elevation_required, asks for the step-up right there in
 * `slot` (a code by message or from the authenticator, a recovery code, or a passkey), then runs
 * the action again with the new elevation token.
 */
export async function elevated<T>(slot: HTMLElement, action: (elevation: string) => Promise<T>): Promise<T> {
  const held = api.elevation();
  if (held) {
    try {
      return await action(held);
    } catch (error) {
      if (asProblem(error).code !== 'identity.elevation_required') throw error;
    }
  }
  return action(await stepUp(slot));
}

/** What to do, and for a code sent by message, where it went (masked by the service). */
const prompt = (channel: StepUpChannel, sentTo: string | null): string =>
  channel === 'identifier' && sentTo
    ? t('prompt.identifierTo', { destination: sentTo })
    : t(`prompt.${channel}`);

/**
 * The ways this account has, so the box offers only those: a passkey when it holds one, recovery
 * codes while some are left. Unknown (a failed read) offers them, as before: the service still
 * refuses a way the account lacks.
 */
async function accountWays(): Promise<{ passkey: boolean; recoveryCodes: boolean }> {
  const [methods, codes] = await Promise.all([
    api.signInMethods().catch(() => null),
    api.recoveryCodeStatus().catch(() => null),
  ]);
  return {
    passkey: methods ? methods.some((m) => m.kind === 'passkey') : true,
    recoveryCodes: codes ? codes.remaining > 0 : true,
  };
}

/** The configured providers linked to this identity (a step-up by redirect needs one). */
async function linkedProviders() {
  try {
    const [methods, providers] = await Promise.all([api.signInMethods(), api.providers()]);
    const linked = new Set(methods.filter((m) => m.kind === 'provider').map((m) => m.display));
    return providers.filter((p) => linked.has(p.name));
  } catch {
    return [];
  }
}

/** The step-up box open on the page, if any: one confirmation at a time. */
let openBox: { close(): void } | null = null;

/**
 * Shows the step-up in `slot` and resolves with the elevation token, or rejects with Cancelled.
 * A step-up already open elsewhere on the page is cancelled first (its box closes and its action
 * ends as if its Cancel had been pressed), so no button stays waiting on a box that is gone.
 */
export function stepUp(slot: HTMLElement): Promise<string> {
  openBox?.close();
  return new Promise<string>((resolve, reject) => {
    const titleId = uid('stepup-title');
    const box = h('section', { class: 'stepup', 'aria-labelledby': titleId });
    slot.replaceChildren(box);
    const mine = {
      close() {
        slot.replaceChildren();
        if (openBox === mine) openBox = null;
        reject(new Cancelled());
      },
    };
    openBox = mine;
    const ways = accountWays();
    /** Whether this account proves a step-up with a second factor (its default channel says so). */
    let hasFactor: boolean | null = null;
    const close = () => {
      if (box.isConnected) slot.replaceChildren();
      if (openBox === mine) openBox = null;
    };

    const draw = async (channel?: StepUpChannel) => {
      const heading = h('h3', { id: titleId, tabindex: '-1' }, t('title'));
      const status = h('p', null, t('preparing'));
      box.replaceChildren(heading, status);
      heading.focus();
      let challenge: { challengeId: string; channel: StepUpChannel; sentTo: string | null };
      try {
        challenge = await api.startStepUp(channel);
      } catch (error) {
        const p = asProblem(error);
        status.className = 'alert';
        status.setAttribute('role', 'alert');
        status.textContent =
          p.code === 'identity.step_up_unavailable' && channel
            ? t('unavailable')
            : (p.detail ?? t('cannotStart'));
        box.append(h('div', { class: 'actions' }, others(channel), cancelButton()));
        return;
      }
      if (!channel) hasFactor = challenge.channel !== 'identifier';
      const startedAt = Date.now();
      const code = field({
        label: challenge.channel === 'recovery_code' ? t('recoveryCode') : t('code'),
        name: 'code',
        autocomplete: 'one-time-code',
        inputmode: challenge.channel === 'recovery_code' ? undefined : 'numeric',
      });
      const form = makeForm({
        fields: [code],
        submit: t('confirm'),
        // A code by message: a new one on demand (a new step-up retires the earlier one).
        buttons: challenge.channel === 'identifier' ? [resendButton(), cancelButton()] : [cancelButton()],
        async onSubmit() {
          let token: string;
          try {
            token = await api.confirmStepUp(challenge.challengeId, code.input.value.trim());
          } catch (error) {
            // A code sent by message, refused after its lifetime: said so (the service answers
            // alike for every cause); "Send a new code" is the box's own retry (docs/decisions.md).
            const late = Date.now() >= startedAt + codeLifetimeSeconds() * 1000;
            if (challenge.channel === 'identifier' && late) {
              const p = asProblem(error);
              if (p.code === 'identity.step_up_confirmation_refused') {
                throw new InteractionError({
                  code: 'ui.code_expired',
                  status: 403,
                  errors: [{ field: 'code', code: 'code_expired' }],
                });
              }
            }
            throw error;
          }
          close();
          resolve(token);
        },
      });
      status.textContent = prompt(challenge.channel, challenge.sentTo);
      box.append(form.el, h('div', { class: 'actions' }, others(challenge.channel)));
      code.input.focus();
    };

    const resendButton = () => {
      const b = h('button', { type: 'button', class: 'secondary' }, otp('resend'));
      b.addEventListener('click', () => void draw('identifier'));
      return b;
    };

    const cancelButton = () => {
      const b = h('button', { type: 'button', class: 'secondary' }, t('cancel'));
      b.addEventListener('click', () => {
        close();
        reject(new Cancelled());
      });
      return b;
    };

    const others = (current: StepUpChannel | undefined): HTMLElement[] => {
      const list: HTMLElement[] = [];
      // The other ways this account has, once known: recovery codes (while some are left) and
      // the authenticator back, only with a second factor; a passkey only when it holds one.
      const known = h('span', { class: 'stepup-ways' });
      list.push(known);
      void ways.then((w) => {
        const buttons: HTMLElement[] = [];
        if (hasFactor !== false && current !== 'recovery_code' && w.recoveryCodes) {
          const b = h('button', { type: 'button', class: 'link' }, t('useRecoveryCode'));
          b.addEventListener('click', () => void draw('recovery_code'));
          buttons.push(b);
        }
        if (hasFactor && current === 'recovery_code') {
          const b = h('button', { type: 'button', class: 'link' }, t('useAuthenticator'));
          b.addEventListener('click', () => void draw('second_factor'));
          buttons.push(b);
        }
        if (w.passkey && passkeyStatus().usable) buttons.push(passkeyButton());
        known.replaceChildren(...buttons);
        known.dataset.ready = 'true';
      });
      const passkeyButton = () => {
        const b = h('button', { type: 'button', class: 'link' }, t('usePasskey'));
        b.addEventListener('click', async () => {
          try {
            const token = await api.stepUpWithPasskey();
            close();
            resolve(token);
          } catch (error) {
            const p = asProblem(error);
            // In the page's language: no passkey here, a closed prompt, or the service's refusal.
            const alert = h(
              'p',
              { class: 'alert', role: 'alert' },
              p.code?.startsWith('ui.passkey_') ? messageFor(p) : t('passkeyRefused'),
            );
            box.append(alert);
          }
        });
        return b;
      };
      // A provider linked to this identity, on Security's pages (a step-up flow comes back to the
      // overview, which takes the elevation and goes on to the page the flow started from).
      const route = location.hash.split('?')[0].slice(1);
      if (route === '/security' || route.startsWith('/security/')) {
        const more = h('span', { class: 'provider-step-ups' });
        list.push(more);
        void linkedProviders().then((providers) => {
          more.replaceChildren(
            ...providers.map((p) => {
              const b = h(
                'button',
                { type: 'button', class: 'link' },
                t('useProvider', { name: p.displayName }),
              );
              b.addEventListener('click', async () => {
                try {
                  await goToProvider(p, 'step_up', '/security');
                } catch (error) {
                  box.append(h('p', { class: 'alert', role: 'alert' }, (error as Error).message));
                }
              });
              return b;
            }),
          );
        });
      }
      return list;
    };

    void draw();
  });
}
