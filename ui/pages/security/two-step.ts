import { api } from '../../api.js';
import { announce, field, formatDate, h } from '../../dom.js';
import { actionButton, alertBox, makeForm } from '../../forms.js';
import { t } from '../../messages/security.js';
import { qrSvg } from '../../qr.js';
import type { PageContent } from '../../router.js';
import { elevated } from '../../stepup.js';
import { swap } from '../steps.js';
import { card, confirmButton, focusedPage, saidBox, saySuccess, takeReturn } from './common.js';
import { showCodes } from './recovery.js';

/** #/security/two-step: the authenticator apps (removal confirmed first) and the guided setup. */
export async function twoStepPage(): Promise<PageContent> {
  const { said } = await takeReturn('/security/two-step');
  const { el, heading } = card('authenticator', t('twoStep.card'));
  const body = h('div');
  el.append(body);
  /** Draws the list and the start button; `focusStart` puts the focus on that button (after a cancel). */
  const draw = async (focusStart = false) => {
    const factors = await api.secondFactors();
    const alert = alertBox();
    const slot = h('div');
    const list = h(
      'ul',
      { class: 'items', id: 'authenticator-list' },
      factors.map((f) => {
        const name = f.label ?? t('twoStep.defaultLabel');
        return h(
          'li',
          null,
          h(
            'span',
            { class: 'item-main' },
            name,
            h('span', { class: 'item-meta' }, t('twoStep.added', { when: formatDate(f.verifiedAt) })),
          ),
          confirmButton({
            label: t('twoStep.remove'),
            ariaLabel: t('twoStep.removeLabel', { name }),
            question: t('twoStep.removeQuestion'),
            detail: t('twoStep.removeDetail'),
            confirm: t('twoStep.remove'),
            alert,
            async run() {
              await elevated(slot, (token) => api.removeSecondFactor(f.id, token));
              await draw();
              saySuccess(body, t('twoStep.removed'));
            },
          }),
        );
      }),
    );
    const start = actionButton(
      t('twoStep.start'),
      alert,
      async () => {
        const enrolment = await elevated(slot, (token) =>
          api.enrolSecondFactor(t('twoStep.defaultLabel'), token),
        );
        guide(
          body,
          enrolment,
          async () => {
            await draw();
            heading.focus();
          },
          () => draw(true),
        );
      },
      factors.length ? 'secondary' : '',
    );
    body.replaceChildren(
      h('p', null, factors.length ? t('twoStep.on') : t('twoStep.off')),
      alert,
      slot,
      factors.length ? list : '',
      h('div', { class: 'actions' }, start),
    );
    if (focusStart) start.focus();
  };
  await draw();
  return focusedPage(
    t('twoStep.title'),
    [saidBox(said), el].filter((x): x is HTMLElement => !!x),
  );
}

/** "Step N of 3" and the three steps, the current one marked. */
function progress(n: 1 | 2 | 3): HTMLElement[] {
  const names = [t('guide.step1'), t('guide.step2'), t('guide.step3')];
  return [
    h('p', { class: 'step-of' }, t('guide.stepOf', { n })),
    h(
      'ol',
      { class: 'guide-steps', 'aria-label': t('guide.steps') },
      names.map((name, i) =>
        h(
          'li',
          {
            class: i + 1 < n ? 'done' : i + 1 === n ? 'current' : undefined,
            'aria-current': i + 1 === n ? 'step' : undefined,
          },
          name,
        ),
      ),
    ),
  ];
}

/**
 * The authenticator setup as one guided flow: 1 scan the QR code (or enter the key, grouped by
 * four, with a Copy button; an otpauth:// link on touch screens), 2 enter the code, 3 save
 * recovery codes (issued here when none is live). "Cancel" on steps 1 and 2 forgets the secret on
 * the page and goes back to the start: the service has no route to discard a pending enrolment,
 * and none is needed (it never signs in nor shows in any list, and the next "Set up" revokes it:
 * docs/decisions.md). Step 3 comes after the app is added: it ends with "I have saved them"/"Done".
 */
function guide(
  body: HTMLElement,
  enrolment: { secret: string; otpauthUri: string },
  done: () => Promise<void>,
  cancelled: () => Promise<void>,
): void {
  const cancelButton = (onError: (error: unknown) => void) => {
    const cancel = h('button', { type: 'button', class: 'secondary' }, t('guide.cancel'));
    cancel.addEventListener('click', async () => {
      cancel.disabled = true;
      try {
        await cancelled();
        announce(t('guide.cancelled'));
      } catch (error) {
        onError(error);
        cancel.disabled = false;
      }
    });
    return cancel;
  };

  const stepScan = () => {
    const alert = alertBox();
    const copied = h('p', { role: 'status', class: 'copy-status' });
    const copy = h(
      'button',
      { type: 'button', class: 'secondary', 'aria-label': t('guide.copyKey') },
      t('guide.copy'),
    );
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(enrolment.secret);
        copied.textContent = t('guide.copied');
      } catch {
        copied.textContent = t('guide.copyRefused');
      }
    });
    const next = h('button', { type: 'button' }, t('guide.next'));
    next.addEventListener('click', stepCode);
    const blocks = enrolment.secret.match(/.{1,4}/g) ?? [enrolment.secret];
    swap(
      body,
      ...progress(1),
      h('h3', { tabindex: '-1' }, t('guide.scanTitle')),
      qrSvg(enrolment.otpauthUri, t('guide.qr')),
      h('p', { class: 'otpauth-link' }, h('a', { href: enrolment.otpauthUri }, t('guide.open'))),
      h('p', null, t('guide.cantScan')),
      h(
        'div',
        { class: 'key-group' },
        h(
          'code',
          { class: 'secret', id: 'totp-secret', 'aria-label': t('guide.keyLabel') },
          blocks.map((b) => h('span', { class: 'key-block' }, b)),
        ),
        copy,
      ),
      copied,
      alert,
      h(
        'div',
        { class: 'actions' },
        next,
        cancelButton((error) => {
          alert.textContent = error instanceof Error ? error.message : String(error);
          alert.hidden = false;
        }),
      ),
    );
    (body.querySelector('h3') as HTMLElement).focus();
  };

  function stepCode(): void {
    const code = field({
      label: t('guide.code'),
      name: 'code',
      autocomplete: 'one-time-code',
      inputmode: 'numeric',
      hint: t('guide.codeHint'),
    });
    const back = h('button', { type: 'button', class: 'secondary' }, t('guide.back'));
    back.addEventListener('click', stepScan);
    const form = makeForm({
      fields: [code],
      submit: t('guide.confirm'),
      buttons: [back, cancelButton((error) => form.fail(error))],
      async onSubmit() {
        await api.confirmSecondFactor(code.input.value.trim());
        announce(t('guide.added'));
        await stepCodes();
      },
    });
    swap(body, ...progress(2), h('h3', { tabindex: '-1' }, t('guide.codeTitle')), form.el);
    code.input.focus();
  }

  async function stepCodes(): Promise<void> {
    const status = await api.recoveryCodeStatus();
    if (status.remaining > 0) {
      const finish = h('button', { type: 'button' }, t('guide.done'));
      finish.addEventListener('click', () => void done());
      swap(
        body,
        ...progress(3),
        h('h3', { tabindex: '-1' }, t('guide.haveCodesTitle')),
        h('p', { class: 'notice', role: 'status' }, t('guide.haveCodes', { count: status.remaining })),
        h('div', { class: 'actions' }, finish),
      );
      (body.querySelector('h3') as HTMLElement).focus();
      return;
    }
    // None live: the codes are issued now (elevated: the setup's own step-up is still alive).
    const note = h('p', { class: 'notice', role: 'status' }, t('guide.addedNote'));
    const alert = alertBox();
    const slot = h('div');
    const issue = actionButton(t('recovery.create'), alert, async () => {
      const codes = await elevated(slot, (token) => api.issueRecoveryCodes(token));
      showCodes(body, codes, done, [...progress(3), note]);
    });
    swap(body, ...progress(3), note, alert, slot, h('div', { class: 'actions' }, issue));
    issue.click();
  }

  stepScan();
}
