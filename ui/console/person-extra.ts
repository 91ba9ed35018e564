import { h } from '../dom.js';
import { tx } from '../messages/console-orgs.js';

/**
 * "Resend confirmation" on a person's page, shown as absent with its reason (docs/admin.md,
 * "Resend confirmation"; docs/decisions.md): nothing of an existing person awaits a confirmation
 * the service could send again on their behalf.
 */
export function resendNote(): HTMLElement {
  return h(
    'section',
    { 'aria-labelledby': 'resend-title', class: 'resend' },
    h('h2', { id: 'resend-title' }, tx('resendTitle')),
    h('p', { class: 'hint', id: 'resend-absent' }, tx('resendAbsent')),
  );
}
