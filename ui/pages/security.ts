import { api } from '../api.js';
import { h } from '../dom.js';
import { t } from '../messages/security.js';
import { displayNameOf } from '../providers.js';
import type { PageContent } from '../router.js';
import { ago } from '../when.js';
import { takeReturn } from './security/common.js';
import { nudgesOf } from './security/nudges.js';

export { addressesPage } from './security/addresses.js';
export { deleteAccountPage } from './security/delete.js';
export { linkedPage } from './security/linked.js';
export { passkeysPage } from './security/passkeys.js';
export { passwordPage } from './security/password.js';
export { recoveryCodesPage } from './security/recovery.js';
export { twoStepPage } from './security/two-step.js';

/**
 * One row of the overview: what it is, its state, and what it suggests when a protection is
 * missing; the whole row is the link to its focused page (a chevron, a hover and focus ring mark
 * it as one, and Tab reaches it).
 */
function row(
  id: string,
  label: string,
  state: string,
  href: string,
  on: boolean | null,
  nudge?: string,
): HTMLElement {
  return h(
    'li',
    null,
    h(
      'a',
      { class: nudge ? 'overview-row nudged' : 'overview-row', href, id: `row-${id}` },
      h(
        'span',
        { class: 'row-text' },
        h('span', { class: 'item-title' }, label),
        h('span', { class: on === null ? 'item-meta' : on ? 'item-meta on' : 'item-meta off' }, state),
        nudge ? h('span', { class: 'row-nudge', id: `nudge-${id}` }, nudge) : null,
      ),
      h('span', { class: 'row-chevron', 'aria-hidden': 'true' }),
    ),
  );
}

/**
 * Security: an overview of how the account is protected (GET /account, the owner's own facts),
 * one row per area, each opening its focused page (#/security/password, …).
 */
export async function securityPage(): Promise<PageContent> {
  // A provider flow came back here: its answer goes on to the focused page it belongs to.
  const back = await takeReturn('/security');
  if (back.said || back.link) return { title: t('title'), body: [] };
  const [account, providers] = await Promise.all([api.account(), api.providers()]);
  const { password, secondFactors, passkeys, recoveryCodes, providerLinks } = account;
  const addresses = account.identifiers.filter((i) => i.verifiedAt).map((i) => i.value);
  const linked = [...new Set(providerLinks.map((l) => displayNameOf(providers, l.provider)))];
  const nudges = nudgesOf(account);
  const rows = [
    row(
      'password',
      t('row.password'),
      password.set
        ? password.changedAt
          ? t('row.passwordChanged', { when: ago(password.changedAt) })
          : t('row.passwordSet')
        : t('row.passwordNone'),
      '#/security/password',
      null,
    ),
    row(
      'two-step',
      t('row.twoStep'),
      secondFactors.active > 0 ? t('row.twoStepOn', { count: secondFactors.active }) : t('row.twoStepOff'),
      '#/security/two-step',
      secondFactors.active > 0,
      nudges.includes('two-step') ? t('nudge.twoStep') : undefined,
    ),
    row(
      'passkeys',
      t('row.passkeys'),
      passkeys.count > 0 ? t('row.passkeysCount', { count: passkeys.count }) : t('row.passkeysNone'),
      '#/security/passkeys',
      null,
    ),
    row(
      'recovery-codes',
      t('row.recovery'),
      recoveryCodes.remaining > 0 ? t('row.recoveryLeft', { count: recoveryCodes.remaining }) : t('none'),
      '#/security/recovery-codes',
      null,
      nudges.includes('recovery-codes')
        ? t('nudge.recovery')
        : nudges.includes('recovery-codes-few')
          ? t('nudge.recoveryFew')
          : undefined,
    ),
    row(
      'addresses',
      t('row.addresses'),
      addresses.length === 0
        ? t('none')
        : addresses.length <= 2
          ? addresses.join(' · ')
          : t('row.addressesMore', { first: addresses[0], count: addresses.length - 1 }),
      '#/security/addresses',
      null,
    ),
  ];
  // Linked accounts: only where a provider is configured or one is still linked.
  if (providers.length || linked.length) {
    rows.push(
      row(
        'linked',
        t('row.linked'),
        linked.length ? linked.join(' · ') : t('none'),
        '#/security/linked',
        null,
      ),
    );
  }
  return {
    title: t('title'),
    body: [
      h(
        'div',
        { class: 'card' },
        h('p', { class: 'hint' }, t('hint')),
        h('ul', { class: 'items overview', id: 'security-overview' }, rows),
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'delete-account-title' },
        h('h2', { id: 'delete-account-title' }, t('delete.title')),
        h('p', { class: 'hint' }, t('delete.hint')),
        h('p', null, h('a', { href: '#/security/delete', id: 'delete-account-link' }, t('delete.open'))),
      ),
    ],
  };
}
