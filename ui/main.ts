import { api, asProblem, type Brand, loadSettings } from './api.js';
import { append, h } from './dom.js';
import { chooseLocale, onLocaleChange, setLocale } from './i18n.js';
import { t as brandText } from './messages/brand.js';
import { appsPage } from './pages/apps.js';
import { devicesPage } from './pages/devices.js';
import { historyPage } from './pages/history.js';
import { homePage } from './pages/home.js';
import { authorizePage, consentPage } from './pages/interaction.js';
import { organizationSwitcher, organizationsPage, takeFlash } from './pages/organizations.js';
import { backToInvitation, captureInvitation, invitationPage } from './pages/organizations-invitation.js';
import { organizationPage } from './pages/organizations-members.js';
import { transferPage } from './pages/organizations-transfer.js';
import { recoverPage } from './pages/recover.js';
import {
  addressesPage,
  deleteAccountPage,
  linkedPage,
  passkeysPage,
  passwordPage,
  recoveryCodesPage,
  securityPage,
  twoStepPage,
} from './pages/security.js';
import { secondFactorPage, signInPage } from './pages/sign-in.js';
import { captureSignInLink, signInLinkPage } from './pages/sign-in-link.js';
import { signUpPage } from './pages/sign-up.js';
import { ssoContinuePage } from './pages/sso-continue.js';
import { ssoTestDonePage, ssoTestPage } from './pages/sso-test.js';
import { messageFor } from './problems.js';
import { captureProviderReturn, dropProviderReturn } from './providers.js';
import { go, type Page, type PageContent, routeOf } from './router.js';

/*
 * Hash routes (#/security) hold a place, never a token: the refresh token lives in the service's
 * HttpOnly cookie, the access token and tickets in memory, so nothing secret reaches the address
 * bar, history or a Referer. The OpenID Provider's interactions carry their uid (not a secret).
 */
const PUBLIC: Record<string, Page> = {
  '/sign-in': signInPage,
  '/sign-in/second-factor': secondFactorPage,
  '/sign-up': signUpPage,
  '/recover': recoverPage,
};
const PRIVATE: Record<string, Page> = {
  '/': homePage,
  '/history': historyPage,
  '/devices': devicesPage,
  '/apps': appsPage,
  '/security': securityPage,
  '/security/password': passwordPage,
  '/security/two-step': twoStepPage,
  '/security/passkeys': passkeysPage,
  '/security/recovery-codes': recoveryCodesPage,
  '/security/addresses': addressesPage,
  '/security/linked': linkedPage,
  '/security/delete': deleteAccountPage,
  '/organizations': organizationsPage,
  // A connection test came back (ui/pages/sso-test.ts): what the IdP sent, nobody signed in.
  '/sso-test': ssoTestPage,
};
/** Pages of the account named by an id in their path (#/organizations/<id>). */
const PRIVATE_WITH_ID: [RegExp, (id: string) => ReturnType<Page>][] = [
  [/^\/organizations\/([0-9a-f-]{36})$/, organizationPage],
  [/^\/organizations\/([0-9a-f-]{36})\/transfer$/, transferPage],
];
/**
 * Pages for signed-in and signed-out people alike, with the nav when signed in: an invitation
 * (its token already taken out of the address bar, see ui/pages/organizations-invitation.ts).
 */
const OPEN: Record<string, Page> = {
  '/invitation': invitationPage,
  // A sign-in code's link (its token already taken out of the address bar, ui/pages/sign-in-link.ts).
  '/sign-in/link': signInLinkPage,
  // An IdP-initiated SAML sign-in asks the person to continue (ui/pages/sso-continue.ts).
  '/sso-continue': ssoContinuePage,
  // An operator's connection test came back: its result is in the operators' console.
  '/sso-test-done': ssoTestDonePage,
};
/** The OpenID Provider's interactions, for signed-in and signed-out people alike, without the nav. */
const INTERACTIONS: [RegExp, (uid: string) => ReturnType<Page>][] = [
  [/^\/authorize\/([^/]+)$/, authorizePage],
  [/^\/consent\/([^/]+)$/, consentPage],
];

function privateWithId(path: string): Page | undefined {
  for (const [pattern, page] of PRIVATE_WITH_ID) {
    const m = pattern.exec(path);
    if (m) return () => page(m[1]);
  }
  return undefined;
}

function interactionPage(path: string): Page | undefined {
  for (const [pattern, page] of INTERACTIONS) {
    const m = pattern.exec(path);
    if (!m) continue;
    let uid: string;
    try {
      uid = decodeURIComponent(m[1]);
    } catch {
      return undefined;
    }
    return () => page(uid);
  }
  return undefined;
}

const NAV = [
  ['/', 'nav.home'],
  ['/security', 'nav.security'],
  ['/devices', 'nav.devices'],
  ['/apps', 'nav.apps'],
  ['/history', 'nav.history'],
] as const;

const main = document.getElementById('main') as HTMLElement;
const nav = document.getElementById('nav') as HTMLElement;
let renders = 0;
/**
 * Why the person was signed out, for the sign-in page they land on: kept while that page is drawn
 * again (two renders may race to it), forgotten once they go elsewhere or sign in.
 */
let notice: { text: string; path?: string } | null = null;
/** The thin bar that says a page is on its way (shown only when it takes a moment). */
const loading = h('div', { class: 'page-loading', hidden: true, 'aria-hidden': 'true' });
document.body.prepend(loading);
/** The product's name, after each page's title (the service writes it into the header too). */
let product = document.title;

/**
 * The product's name (without one configured, "Your account" in the page's language) and the help
 * link in the footer, when the service has one (BRAND_SUPPORT_URL).
 */
function drawBrand(brand: Brand): void {
  product = brand.name ?? brandText('product');
  // The static page's own words, in the page's language.
  document.querySelector('.skip')?.replaceChildren(brandText('skip'));
  nav.setAttribute('aria-label', brandText('nav.label'));
  document.querySelector('.brand-name')?.replaceChildren(product);
  const footer = document.getElementById('footer') as HTMLElement;
  footer.hidden = !brand.supportUrl;
  footer.replaceChildren(
    ...(brand.supportUrl ? [h('a', { href: brand.supportUrl }, brandText('help'))] : []),
  );
}

function drawNav(path: string, signedIn: boolean): void {
  nav.hidden = !signedIn;
  if (!signedIn) {
    nav.replaceChildren();
    return;
  }
  const signOut = h('button', { type: 'button', class: 'link' }, brandText('nav.signOut'));
  signOut.addEventListener('click', async () => {
    signOut.disabled = true;
    await api.signOut();
    go('/sign-in');
  });
  // On a narrow screen the links fold behind a menu button (CSS shows both on a wide one).
  const toggle = h(
    'button',
    { type: 'button', class: 'secondary menu-toggle', 'aria-expanded': 'false', 'aria-controls': 'nav-list' },
    brandText('nav.menu'),
  );
  toggle.addEventListener('click', () => {
    const open = toggle.getAttribute('aria-expanded') !== 'true';
    toggle.setAttribute('aria-expanded', String(open));
    nav.classList.toggle('open', open);
  });
  nav.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || !nav.classList.contains('open')) return;
    nav.classList.remove('open');
    toggle.setAttribute('aria-expanded', 'false');
    toggle.focus();
  });
  nav.classList.remove('open');
  nav.replaceChildren(
    toggle,
    h(
      'ul',
      { id: 'nav-list' },
      NAV.map(([to, label]) =>
        h(
          'li',
          null,
          h(
            'a',
            {
              href: `#${to}`,
              // A sub-page (#/security/password) keeps its section marked.
              'aria-current': to === path || (to !== '/' && path.startsWith(`${to}/`)) ? 'page' : undefined,
            },
            brandText(label),
          ),
        ),
      ),
      h('li', null, signOut),
    ),
  );
  // Where the person acts (an organization, or Personal), as the list's first item.
  nav.querySelector('ul')?.prepend(organizationSwitcher());
}

async function render(): Promise<void> {
  // A provider flow's answer (#/sign-in?provider=…&handoff=…) leaves the address bar first.
  captureProviderReturn();
  // An invitation's token leaves the address bar at once (#/invitations/<token> -> #/invitation).
  // So does a sign-in link's (#/sign-in/link/<id>/<token> -> #/sign-in/link).
  const path = captureSignInLink(captureInvitation(routeOf(location.hash)));
  // On the first render this asks the service (a renewal with the session cookie).
  const signedIn = await api.signedIn();
  // Signed in (or up) from an invitation: back to it.
  if (signedIn && path === '/' && backToInvitation()) {
    go('/invitation');
    return;
  }
  const interaction = interactionPage(path);
  // The pages' language is the identity's: its messages follow (once per load and per switch).
  if (signedIn) api.sayLanguage();
  let page =
    interaction ??
    OPEN[path] ??
    (signedIn ? (PRIVATE[path] ?? privateWithId(path) ?? PUBLIC[path]) : PUBLIC[path]);
  if (!page) {
    go(signedIn ? '/' : '/sign-in');
    return;
  }
  // A signed-in person who opens a sign-in page goes home instead.
  if (signedIn && PUBLIC[path] && path !== '/sign-in/second-factor') page = homePage;
  const turn = ++renders;
  drawNav(signedIn ? (PUBLIC[path] ? '/' : path) : path, signedIn && !interaction);
  let content: PageContent;
  // A page that takes more than a moment (it asks the service) shows the bar and marks <main> busy.
  main.setAttribute('aria-busy', 'true');
  const slow = setTimeout(() => {
    if (turn === renders) loading.hidden = false;
  }, 150);
  const settled = () => {
    clearTimeout(slow);
    if (turn !== renders) return; // the later render owns the bar
    loading.hidden = true;
    main.removeAttribute('aria-busy');
  };
  try {
    content = await page();
  } catch (error) {
    dropProviderReturn();
    const p = asProblem(error);
    if (p.code === 'client.signed_out' || p.code === 'identity.session_required') {
      settled();
      // The service ended the session this page still held (another device, a password change).
      if (signedIn) notice ??= { text: brandText('ended.service') };
      go('/sign-in');
      return;
    }
    content = {
      title: brandText('failed.title'),
      body: [
        h('p', { class: 'alert', role: 'alert' }, messageFor(p)),
        h('p', null, h('a', { href: '#/' }, brandText('failed.retry'))),
      ],
    };
  }
  // The page of the route took the provider's answer, if it was for it; any other is forgotten.
  dropProviderReturn();
  settled();
  if (turn !== renders) return; // a later navigation won the race
  const { title, body } = content;
  document.title = `${title} · ${product}`;
  const heading = h('h1', { tabindex: '-1' }, title);
  main.replaceChildren(heading);
  if (signedIn || (notice?.path && notice.path !== path)) notice = null;
  if (notice) {
    main.append(h('p', { class: 'notice', role: 'status' }, notice.text));
    notice.path = path;
  }
  // A line left for this page by the last action (a switch refused for want of a second factor).
  const flash = takeFlash();
  if (flash) main.append(flash);
  append(main, body);
  // Focus moves to the new page's heading, so keyboard and screen-reader users start there.
  if (turn > 1) heading.focus();
}

document.querySelector('.skip')?.addEventListener('click', (event) => {
  event.preventDefault();
  main.focus();
});
window.addEventListener('hashchange', () => void render());
api.onSignedOut((reason) => {
  const path = routeOf(location.hash);
  if (interactionPage(path)) return; // the application's sign-in page stays as it is
  // Ended anywhere but by this page's own button: the sign-in page says why it is shown.
  if (reason === 'elsewhere') notice = { text: brandText('ended.elsewhere') };
  else if (reason === 'renewal_refused') notice = { text: brandText('ended.service') };
  else if (reason === 'account_deleted') notice = { text: brandText('ended.deleted') };
  if (!PUBLIC[path]) go('/sign-in');
  else void render();
});
// Signed in in another tab: a sign-in page here goes home (the second step stays where it is).
api.onSignedInElsewhere(() => {
  const path = routeOf(location.hash);
  if (PUBLIC[path] && path !== '/sign-in/second-factor') void render();
});

// At once, before anything is fetched: no handoff code or link token stays in the address bar or
// in history.
captureProviderReturn();
captureSignInLink(routeOf(location.hash));
setLocale(chooseLocale(navigator.languages));
loadSettings()
  .then((brand) => {
    drawBrand(brand);
    // An application's ui_locales may switch the language on its sign-in page: the frame follows.
    onLocaleChange(() => drawBrand(brand));
    return render();
  })
  .catch(() => {
    main.replaceChildren(
      h('h1', null, brandText('unavailable.title')),
      h('p', null, brandText('unavailable.text')),
    );
  });
