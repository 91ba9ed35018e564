import { api, asProblem } from '../api.js';
import { append, h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import { pendingStep } from '../identifier.js';
import { t } from '../messages/sign-in.js';
import type { PageContent } from '../router.js';
import { afterFirstStep } from './second-step.js';

/*
 * A sign-in code's link (SIGN_IN_LINKS): `<ui>#/sign-in/link/<signInCodeId>/<token>`. The token is
 * in the fragment, which a browser never sends; the page takes it out of the address bar and
 * history at once (into this tab's sessionStorage, as an invitation's) and shows `#/sign-in/link`.
 * Opening it signs nobody in (a mail scanner follows links): the page looks the link up and shows
 * "Continue as <masked address>"; only the press of that button signs this browser in. When this
 * is not the browser that asked for the code, the page says so first.
 */
interface Pending {
  signInCodeId: string;
  token: string;
}
const KEY = 'sign-in-link';
const LINK = /^\/sign-in\/link\/([0-9a-fA-F-]{36})\/([A-Za-z0-9_-]{16,128})$/;

/** `#/sign-in/link/<id>/<token>` becomes `#/sign-in/link`, the link kept for this tab; answers the route. */
export function captureSignInLink(path: string): string {
  const m = LINK.exec(path);
  if (!m) return path;
  pendingStep.write(KEY, { signInCodeId: m[1], token: m[2] } satisfies Pending);
  history.replaceState(history.state, '', `${location.pathname}${location.search}#/sign-in/link`);
  return '/sign-in/link';
}

/** The link refused (spent, replaced, expired, or no link at all): said, with the way to sign in. */
function refused(): (Node | string)[] {
  return [
    h('p', { class: 'alert', role: 'alert', tabindex: '-1' }, t('link.refused')),
    h('p', null, h('a', { href: '#/sign-in' }, t('link.signIn'))),
  ];
}

export async function signInLinkPage(): Promise<PageContent> {
  const title = t('title');
  const link = pendingStep.read<Pending>(KEY);
  if (!link) return { title, body: refused() };
  let found: Awaited<ReturnType<typeof api.lookUpSignInLink>>;
  try {
    found = await api.lookUpSignInLink(link.signInCodeId, link.token);
  } catch (error) {
    if (asProblem(error).code !== 'identity.sign_in_refused') throw error;
    pendingStep.clear(KEY);
    return { title, body: refused() };
  }
  const card = h('section', { class: 'card sign-in-card', 'aria-label': t('cardLabel') });
  const alert = alertBox();
  const button = actionButton(
    t('link.continueAs', { identifier: found.maskedIdentifier }),
    alert,
    async () => {
      let result: Awaited<ReturnType<typeof api.signInWithLink>>;
      try {
        result = await api.signInWithLink(link.signInCodeId, link.token);
      } catch (error) {
        if (asProblem(error).code !== 'identity.sign_in_refused') throw error;
        pendingStep.clear(KEY);
        card.replaceChildren(...refused());
        card.querySelector<HTMLElement>('[role="alert"]')?.focus();
        return;
      }
      pendingStep.clear(KEY);
      afterFirstStep(result, null, null, 'link');
    },
    'primary wide',
  );
  append(card, [
    h('p', null, t('link.intro')),
    // Another browser than the one that asked: whoever holds the link could be anyone.
    found.sameBrowser ? null : h('p', { class: 'alert link-elsewhere' }, t('link.otherBrowser')),
    alert,
    h('div', { class: 'actions' }, button),
  ]);
  return { title, body: [card] };
}
