import { api } from '../../api.js';
import { formatDate, h } from '../../dom.js';
import { actionButton, alertBox } from '../../forms.js';
import { t } from '../../messages/security.js';
import type { PageContent } from '../../router.js';
import { elevated } from '../../stepup.js';
import { swap } from '../steps.js';
import { card, confirmButton, focusedPage, saidBox, takeReturn } from './common.js';

/**
 * The codes, shown once, with Copy, Download and "I have saved them" (which calls `done`).
 * `extra` goes before the heading (the guided setup's step counter).
 */
export function showCodes(
  body: HTMLElement,
  codes: string[],
  done: () => Promise<void>,
  extra: (Node | string)[] = [],
): void {
  const text = `${codes.join('\n')}\n`;
  const status = h('p', { role: 'status' });
  const copy = h('button', { type: 'button', class: 'secondary' }, t('recovery.copy'));
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = t('recovery.copied');
    } catch {
      status.textContent = t('recovery.copyRefused');
    }
  });
  const download = h('button', { type: 'button', class: 'secondary' }, t('recovery.download'));
  download.addEventListener('click', () => {
    const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }));
    const a = h('a', { href: url, download: 'recovery-codes.txt', hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    status.textContent = t('recovery.downloaded');
  });
  const saved = h('button', { type: 'button' }, t('recovery.saved'));
  saved.addEventListener('click', async () => {
    await done();
    (body.closest('section')?.querySelector('h2') as HTMLElement | null)?.focus();
  });
  swap(
    body,
    ...extra,
    h('h3', { tabindex: '-1' }, t('guide.codesTitle')),
    h('p', { class: 'info' }, t('recovery.shown')),
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

/** #/security/recovery-codes: how many are left; new ones (confirmed first when some are live). */
export async function recoveryCodesPage(): Promise<PageContent> {
  const { said } = await takeReturn('/security/recovery-codes');
  const { el } = card('recovery', t('recovery.title'));
  const body = h('div');
  el.append(body);
  const draw = async () => {
    const status = await api.recoveryCodeStatus();
    const alert = alertBox();
    const slot = h('div');
    const issue = async () => {
      const codes = await elevated(slot, (token) => api.issueRecoveryCodes(token));
      showCodes(body, codes, draw);
    };
    // New codes void the live ones: that is asked first. None live: nothing is lost.
    const button =
      status.remaining > 0
        ? confirmButton({
            label: t('recovery.createNew'),
            cls: 'secondary',
            question: t('recovery.newQuestion'),
            detail: t('recovery.newDetail'),
            confirm: t('recovery.newConfirm'),
            alert,
            run: issue,
          })
        : actionButton(t('recovery.create'), alert, issue, 'secondary');
    body.replaceChildren(
      h(
        'p',
        null,
        status.remaining > 0
          ? t('recovery.left', { count: status.remaining, when: formatDate(status.issuedAt) })
          : t('recovery.none'),
      ),
      alert,
      slot,
      h('div', { class: 'actions' }, button),
    );
  };
  await draw();
  return focusedPage(
    t('recovery.title'),
    [saidBox(said), el].filter((x): x is HTMLElement => !!x),
  );
}
