import { api, asProblem, type InteractionDetails, interactions } from '../api.js';
import { h } from '../dom.js';
import { actionButton, alertBox } from '../forms.js';
import { messageFor } from '../problems.js';
import type { PageContent } from '../router.js';
import { signInBody } from './sign-in.js';

/*
 * The OpenID Provider's interactions: the provider sends the browser to #/authorize/<uid> when the
 * person must sign in, and to #/consent/<uid> for a consent. What the application asks for comes
 * from GET /oidc/interaction/<uid>/details; the uid only ever travels in the hash and those paths.
 */

/** What a scope lets the application do, in the person's words (consent and Connected apps). */
export const SCOPE_WORDS: Record<string, string> = {
  openid: 'Confirm who you are',
  profile: 'Your name and basic profile',
  email: 'Your email address',
  phone: 'Your phone number',
  offline_access: 'Stay connected when you are not using it',
};

/** The interaction, or the page that says it cannot go on (expired, unknown, unreachable). */
async function load(uid: string): Promise<InteractionDetails | PageContent> {
  try {
    return await interactions.details(uid);
  } catch (error) {
    const p = asProblem(error);
    return {
      title: 'This request has expired',
      body: [
        h(
          'p',
          { class: 'alert', role: 'alert' },
          p.status && p.status >= 400 && p.status < 500
            ? 'This sign-in request is no longer valid. Go back to the application and start again.'
            : messageFor(p),
        ),
        h('p', null, h('a', { href: '#/' }, 'Go to your account')),
      ],
    };
  }
}

const isDetails = (v: InteractionDetails | PageContent): v is InteractionDetails => 'uid' in v;

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
      title: `Continuing to ${name}`,
      body: [h('p', { role: 'status' }, `You are signed in. Taking you back to ${name}…`)],
    };
  }
  return {
    title: `Sign in to continue to ${name}`,
    body: [
      signedIn
        ? h('p', null, `${name} asks you to sign in again, to be sure it is you.`)
        : h('p', null, `${name} uses your account here to sign you in.`),
      ...signInBody(uid),
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
  const allow = actionButton('Allow', alert, answer('allow'), 'primary');
  const cancel = actionButton('Cancel', alert, answer('deny'), 'secondary');
  const scopes = [...new Set(details.scopes)];
  return {
    title: `Allow ${name} to use your account?`,
    body: [
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'consent-title' },
        h('h2', { id: 'consent-title' }, `${name} would like:`),
        h(
          'ul',
          { class: 'items', id: 'scopes' },
          scopes.map((scope) => h('li', null, SCOPE_WORDS[scope] ?? `Access named “${scope}”`)),
        ),
        details.client.firstParty ? null : h('p', { class: 'hint' }, `Allow only if you trust ${name}.`),
        alert,
        h('div', { class: 'actions' }, allow, cancel),
      ),
    ],
  };
}
