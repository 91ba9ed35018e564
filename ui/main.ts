import { api, asProblem, loadSettings } from './api.js';
import { append, h } from './dom.js';
import { devicesPage } from './pages/devices.js';
import { historyPage } from './pages/history.js';
import { homePage } from './pages/home.js';
import { recoverPage } from './pages/recover.js';
import { securityPage } from './pages/security.js';
import { secondFactorPage, signInPage } from './pages/sign-in.js';
import { signUpPage } from './pages/sign-up.js';
import { messageFor } from './problems.js';
import { go, type Page, type PageContent, routeOf } from './router.js';

/*
 * Hash routes (#/security) hold a place, never a token: grants live in the session manager's
 * store and tickets in memory, so nothing secret reaches the address bar, history or a Referer.
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
  '/security': securityPage,
};
const NAV: [string, string][] = [
  ['/', 'Account'],
  ['/security', 'Security'],
  ['/devices', 'Devices'],
  ['/history', 'Sign-in history'],
];

const main = document.getElementById('main') as HTMLElement;
const nav = document.getElementById('nav') as HTMLElement;
let renders = 0;

function drawNav(path: string, signedIn: boolean): void {
  nav.hidden = !signedIn;
  if (!signedIn) {
    nav.replaceChildren();
    return;
  }
  const signOut = h('button', { type: 'button', class: 'link' }, 'Sign out');
  signOut.addEventListener('click', async () => {
    signOut.disabled = true;
    await api.signOut();
    go('/sign-in');
  });
  nav.replaceChildren(
    h(
      'ul',
      null,
      NAV.map(([to, label]) =>
        h('li', null, h('a', { href: `#${to}`, 'aria-current': to === path ? 'page' : undefined }, label)),
      ),
      h('li', null, signOut),
    ),
  );
}

async function render(): Promise<void> {
  const path = routeOf(location.hash);
  const signedIn = await api.signedIn();
  let page = signedIn ? (PRIVATE[path] ?? PUBLIC[path]) : PUBLIC[path];
  if (!page) {
    go(signedIn ? '/' : '/sign-in');
    return;
  }
  // A signed-in person who opens a sign-in page goes home instead.
  if (signedIn && PUBLIC[path] && path !== '/sign-in/second-factor') page = homePage;
  const turn = ++renders;
  drawNav(signedIn ? (PUBLIC[path] ? '/' : path) : path, signedIn);
  let content: PageContent;
  try {
    content = await page();
  } catch (error) {
    const p = asProblem(error);
    if (p.code === 'client.signed_out' || p.code === 'identity.session_required') {
      go('/sign-in');
      return;
    }
    content = {
      title: 'Something went wrong',
      body: [
        h('p', { class: 'alert', role: 'alert' }, messageFor(p)),
        h('p', null, h('a', { href: '#/' }, 'Try again')),
      ],
    };
  }
  if (turn !== renders) return; // a later navigation won the race
  const { title, body } = content;
  document.title = `${title} · Your account`;
  const heading = h('h1', { tabindex: '-1' }, title);
  main.replaceChildren(heading);
  append(main, body);
  // Focus moves to the new page's heading, so keyboard and screen-reader users start there.
  if (turn > 1) heading.focus();
}

document.querySelector('.skip')?.addEventListener('click', (event) => {
  event.preventDefault();
  main.focus();
});
window.addEventListener('hashchange', () => void render());
api.onSignedOut(() => {
  if (!PUBLIC[routeOf(location.hash)]) go('/sign-in');
  else void render();
});

loadSettings()
  .then(() => render())
  .catch(() => {
    main.replaceChildren(
      h('h1', null, 'Unavailable'),
      h('p', null, 'The account service could not be reached.'),
    );
  });
