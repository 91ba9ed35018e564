import { api, asProblem } from '../../api.js';
import { announce, formatDate, h } from '../../dom.js';
import { alertBox } from '../../forms.js';
import { t } from '../../messages/security.js';
import {
  displayNameOf,
  goToProvider,
  providerButton,
  providerMark,
  providerSentence,
} from '../../providers.js';
import type { PageContent } from '../../router.js';
import { elevated } from '../../stepup.js';
import { card, confirmButton, focusedPage, type Said, takeReturn } from './common.js';

const ROUTE = '/security/linked';

/**
 * #/security/linked: the providers linked as ways in (Disconnect: confirmed first, elevated, and
 * refused for the last way in), and "Connect <name>" for each configured provider not linked yet:
 * a link flow, elevated first, that comes back here with `result=linked` or an error.
 */
export async function linkedPage(): Promise<PageContent> {
  const back = await takeReturn(ROUTE);
  const { el } = card('connected', t('linked.card'));
  const body = h('div');
  el.append(body);
  const draw = async (said?: Said) => {
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
            providerMark(name, providers.find((p) => p.name === m.display)?.preset),
            name,
            h(
              'span',
              { class: 'item-meta' },
              t('linked.meta', { added: formatDate(m.verifiedAt), used: formatDate(m.lastUsedAt) }),
            ),
          ),
          confirmButton({
            label: t('linked.disconnect'),
            ariaLabel: t('linked.disconnectLabel', { name }),
            question: t('linked.disconnectQuestion', { name }),
            detail: t('linked.disconnectDetail'),
            confirm: t('linked.disconnect'),
            alert,
            async run() {
              try {
                await elevated(slot, (token) => api.removeSignInMethod(m.id, token));
              } catch (error) {
                if (asProblem(error).code !== 'identity.last_sign_in_method') throw error;
                throw new Error(t('linked.lastWayIn', { name }));
              }
              announce(t('linked.disconnected', { name }));
              await draw({ text: t('linked.noLonger', { name }), ok: true });
            },
          }),
        );
      }),
    );
    const connect = providers
      .filter((p) => !linked.has(p.name))
      .map((p) =>
        providerButton(
          t('linked.connect', { name: p.displayName }),
          p.displayName,
          alert,
          () => elevated(slot, (token) => goToProvider(p, 'link', '/security', token)),
          p.preset,
        ),
      );
    body.replaceChildren(
      h(
        'p',
        null,
        links.length ? t('linked.some') : providers.length ? t('linked.none') : t('linked.noProviders'),
      ),
      done,
      alert,
      slot,
      links.length ? list : '',
      connect.length ? h('div', { class: 'actions providers' }, connect) : '',
    );
    if (said) setTimeout(() => (said.ok ? done : alert).isConnected && (said.ok ? done : alert).focus(), 0);
  };
  let said = back.said;
  if (back.link) {
    const { provider: name, result, error } = back.link;
    said =
      result === 'linked' && !error
        ? {
            text: t('linked.connected', { Name: `${name.charAt(0).toUpperCase()}${name.slice(1)}` }),
            ok: true,
          }
        : { text: providerSentence(error, name, 'link'), ok: false };
  }
  await draw(said);
  return focusedPage(t('linked.title'), [el]);
}
