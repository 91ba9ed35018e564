import { api, asProblem, type InteractionDetails, interactions } from '../api.js';
import { h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import { chooseLocale, LOCALES, setLocale } from '../i18n.js';
import { scopeWords, t } from '../messages/interaction.js';
import { messageFor } from '../problems.js';
import type { PageContent } from '../router.js';
import { go } from '../router.js';
import { signInBody } from './sign-in.js';

/*
 * The OpenID Provider's interactions: the provider sends the browser to #/authorize/<uid> when the
 * person must sign in, and to #/consent/<uid> for a consent. What the application asks for comes
 * from GET /oidc/interaction/<uid>/details; the uid only ever travels in the hash and those paths.
 */

/** The details, with the authorization request's `ui_locales` (most wanted first; [] when none). */
type Details = InteractionDetails & { uiLocales?: string[] };

/**
 * The application's `ui_locales`, when it names a language the pages speak, wins over the
 * browser's languages (OpenID Connect Core 3.1.2.1); it holds for the rest of the page's life.
 */
function speakAsAsked(details: Details): void {
  const asked = details.uiLocales ?? [];
  const spoken = asked.some((tag) => {
    const lower = tag.toLowerCase();
    return lower === 'en-xa' || (LOCALES as readonly string[]).includes(lower.split('-')[0]);
  });
  if (spoken) setLocale(chooseLocale(asked));
}

/** The interaction, or the page that says it cannot go on (expired, unknown, unreachable). */
async function load(uid: string): Promise<Details | PageContent> {
  try {
    const details: Details = await interactions.details(uid);
    speakAsAsked(details);
    return details;
  } catch (error) {
    const p = asProblem(error);
    return {
      title: t('expired.title'),
      body: [
        h(
          'p',
          { class: 'alert', role: 'alert' },
          p.status && p.status >= 400 && p.status < 500 ? t('expired.text') : messageFor(p),
        ),
        h('p', null, h('a', { href: '#/' }, t('expired.home'))),
      ],
    };
  }
}

const isDetails = (v: Details | PageContent): v is Details => 'uid' in v;

/**
 * A URL of the client's metadata, when safe to put in the page: https, or http on a loopback host
 * (the service refuses any other at registration; checked again here, so a javascript: or data:
 * URL can never become a link or an image source).
 */
function safeUrl(value: string | null | undefined): string | null {
  if (!value) return null;
  try {
    const url = new URL(value);
    if (url.protocol === 'https:') return url.href;
    if (url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname))
      return url.href;
  } catch {
    // not a URL: nothing shown
  }
  return null;
}

/** The client's home page, privacy policy and terms, as links that open apart from the consent. */
function clientLinks(details: Details, name: string): HTMLElement | null {
  const links = (
    [
      ['client-uri', details.client.clientUri, t('consent.website')],
      ['policy-uri', details.client.policyUri, t('consent.policy')],
      ['tos-uri', details.client.tosUri, t('consent.terms')],
    ] as const
  ).flatMap(([id, uri, text]) => {
    const href = safeUrl(uri);
    return href
      ? [
          h(
            'li',
            null,
            // noopener: the client's page gets no handle on this one; no referrer names the interaction.
            h(
              'a',
              { id, href, target: '_blank', rel: 'noopener noreferrer' },
              text,
              h('span', { class: 'visually-hidden' }, ` ${t('consent.opens')}`),
            ),
          ),
        ]
      : [];
  });
  if (links.length === 0) return null;
  return h(
    'div',
    { class: 'client-links' },
    h('p', { class: 'hint' }, t('consent.about', { name })),
    h('ul', { class: 'links' }, links),
  );
}

/**
 * Who is about to consent ("Signed in as a***@example.com", with "Not you?"), and, when the
 * application asks for the `organization` scope, which organization it will see: the session's
 * active one. "Not you?" signs this browser out and goes back to the application's sign-in page;
 * the provider then asks the consent of whoever signs in (interactions.ts, nextStep).
 */
async function whoConsents(uid: string, name: string, scopes: string[]): Promise<HTMLElement[]> {
  const context = await api.context().catch(() => null);
  if (!context) return [];
  const who = context.identifiers[0]?.value ?? '';
  const notYou = h('button', { type: 'button', class: 'link', id: 'not-you' }, t('consent.notYou'));
  notYou.addEventListener('click', async () => {
    await api.signOut();
    go(`/authorize/${uid}`);
  });
  const rows = [
    h('p', { class: 'signed-in-as', id: 'signed-in-as' }, t('consent.account', { who }), ' ', notYou),
  ];
  if (scopes.includes('organization')) {
    const active = context.organizations.find((o) => o.active);
    rows.push(
      h(
        'p',
        { class: 'hint', id: 'shared-organization' },
        active
          ? t('consent.organization', { name, organization: active.name })
          : t('consent.noOrganization', { name }),
      ),
    );
  }
  return rows;
}

/**
 * #/authorize/<uid>: the sign-in an application asked for. Already signed in (and no fresh sign-in
 * asked for), the window goes straight back to the provider; otherwise the normal sign-in forms,
 * whose completion (second step included) goes back to the provider too. A fresh sign-in replaces
 * this browser's session (the handover ends the previous one).
 */
export async function authorizePage(uid: string): Promise<PageContent> {
  const details = await load(uid);
  if (!isDetails(details)) return details;
  const name = details.client.name;
  const signedIn = await api.signedIn();
  if (signedIn && !details.freshSignIn) {
    interactions.continue(uid);
    return {
      title: t('continuing.title', { name }),
      body: [h('p', { role: 'status' }, t('continuing.text', { name }))],
    };
  }
  return {
    title: t('signIn.title', { name }),
    body: [
      h('p', null, signedIn ? t('signIn.again', { name }) : t('signIn.intro', { name })),
      ...signInBody(uid, details.loginHint ?? null),
    ],
  };
}

/** #/consent/<uid>: what the application asks for, and the person's answer. */
export async function consentPage(uid: string): Promise<PageContent> {
  const details = await load(uid);
  if (!isDetails(details)) return details;
  const name = details.client.name;
  const alert = alertBox();
  const answer = (decision: 'allow' | 'deny') => async () => {
    const redirectTo = await interactions.consent(uid, decision);
    location.assign(redirectTo);
  };
  const allow = actionButton(t('consent.allow'), alert, answer('allow'), 'primary');
  const cancel = actionButton(t('consent.cancel'), alert, answer('deny'), 'secondary');
  const scopes = [...new Set(details.scopes)];
  const logo = safeUrl(details.client.logoUri);
  const who = await whoConsents(uid, name, scopes);
  return {
    title: t('consent.title', { name }),
    body: [
      h(
        'section',
        { class: 'card sign-in-card', 'aria-labelledby': 'consent-title' },
        logo
          ? // Decorative: the name beside it says what it would.
            h('img', { class: 'client-logo', id: 'client-logo', src: logo, alt: '' })
          : null,
        h('h2', { id: 'consent-title' }, t('consent.asks', { name })),
        h(
          'ul',
          { class: 'items', id: 'scopes' },
          scopes.map((scope) => h('li', null, scopeWords(scope))),
        ),
        ...who,
        clientLinks(details, name),
        details.client.firstParty ? null : h('p', { class: 'hint' }, t('consent.trust', { name })),
        alert,
        h('div', { class: 'actions' }, allow, cancel),
      ),
    ],
  };
}
