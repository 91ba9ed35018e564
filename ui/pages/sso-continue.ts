import { api, asProblem } from '../api.js';
import { append, h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import { pendingStep } from '../identifier.js';
import { t } from '../messages/sso.js';
import { takeProviderReturn } from '../providers.js';
import type { PageContent } from '../router.js';
import { afterFirstStep } from './second-step.js';

/*
 * The landing of an IdP-initiated SAML sign-in (docs/sso.md): `#/sso-continue?handoff=<code>`.
 * Nobody is signed in by opening it (login CSRF: anyone can post an unsolicited response of their
 * own account and send a victim here): the page names the organization and the connection the code
 * signs into, and only the press of Continue spends the code. The code leaves the address bar at
 * once (providers.ts) and is kept for this tab only (sessionStorage), for a redraw.
 */
const KEY = 'sso-continue';

function refused(): (Node | string)[] {
  return [
    h('p', { class: 'alert', role: 'alert', tabindex: '-1' }, t('continue.refused')),
    h('p', null, h('a', { href: '#/sign-in' }, t('continue.signIn'))),
  ];
}

export async function ssoContinuePage(): Promise<PageContent> {
  const title = t('continue.title');
  const back = takeProviderReturn('/sso-continue');
  if (back?.handoff) pendingStep.write(KEY, { code: back.handoff });
  const pending = pendingStep.read<{ code: string }>(KEY);
  if (!pending) return { title, body: refused() };
  let found: Awaited<ReturnType<typeof api.previewSsoHandoff>>;
  try {
    found = await api.previewSsoHandoff(pending.code);
  } catch (error) {
    if (asProblem(error).code !== 'identity.sign_in_refused') throw error;
    pendingStep.clear(KEY);
    return { title, body: refused() };
  }
  const card = h('section', { class: 'card sign-in-card', 'aria-label': title });
  const alert = alertBox();
  const button = actionButton(
    t('continue.submit'),
    alert,
    async () => {
      let result: Awaited<ReturnType<typeof api.exchangeSsoHandoff>>;
      try {
        result = await api.exchangeSsoHandoff(pending.code);
      } catch (error) {
        if (asProblem(error).code !== 'identity.sign_in_refused') throw error;
        pendingStep.clear(KEY);
        card.replaceChildren(...refused());
        card.querySelector<HTMLElement>('[role="alert"]')?.focus();
        return;
      }
      pendingStep.clear(KEY);
      afterFirstStep(result, null, found.organization.name);
    },
    'primary wide',
  );
  const cancel = h('a', { href: '#/sign-in' }, t('continue.cancel'));
  cancel.addEventListener('click', () => pendingStep.clear(KEY));
  append(card, [
    h('p', null, t('continue.intro')),
    h(
      'dl',
      { class: 'sso-continue' },
      h('dt', null, t('continue.organization')),
      h('dd', { id: 'sso-organization' }, found.organization.name),
      h('dt', null, t('continue.connection')),
      h('dd', { id: 'sso-connection' }, found.connection.name),
    ),
    alert,
    h('div', { class: 'actions' }, button),
  ]);
  return { title, body: [card, h('p', { class: 'sign-in-below' }, cancel)] };
}
