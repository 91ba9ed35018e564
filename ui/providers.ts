import { api, asProblem, type IdentityProvider, type SignInOutcome } from './api.js';
import { h, uid } from './dom.js';
import { actionButton, alertBox } from './forms.js';
import { t } from './messages/providers.js';
import { messageFor } from './problems.js';

/*
 * "Continue with …": redirect sign-in through an upstream provider (docs/providers.md). A button
 * starts a flow (POST /provider-flows) and sends the window to the provider; the service's callback
 * sends it back to the route it started from, with `provider` and one of `handoff` (a one-time code,
 * exchanged by POST /provider-handoffs), `result=linked` or `error=<reason>` in the hash's query.
 * That query leaves the address bar before anything else happens, so no code stays in history.
 */

/** What a provider flow came back with. */
export interface ProviderReturn {
  /** The route it came back to (`/sign-in`, `/sign-up`, `/security`, `/authorize/<uid>`). */
  route: string;
  provider: string | null;
  handoff: string | null;
  result: string | null;
  error: string | null;
}

const KEYS = ['provider', 'handoff', 'result', 'error'];
let returned: ProviderReturn | null = null;

/**
 * Reads a provider flow's answer from the hash (`#/sign-in?provider=google&handoff=…`) and takes
 * it out of the address bar at once (replaceState: no new history entry, no hashchange). Called
 * before each draw; the page of that route takes it with `takeProviderReturn`.
 */
export function captureProviderReturn(): void {
  const hash = location.hash;
  const q = hash.indexOf('?');
  if (q < 0) return;
  const params = new URLSearchParams(hash.slice(q + 1));
  if (!KEYS.some((k) => params.has(k))) return;
  const route = hash.slice(1, q) || '/';
  history.replaceState(history.state, '', `${location.pathname}${location.search}#${route}`);
  returned = {
    route,
    provider: params.get('provider'),
    handoff: params.get('handoff'),
    result: params.get('result'),
    error: params.get('error'),
  };
}

/** The answer that came back to `route`, once; null when there is none. */
export function takeProviderReturn(route: string): ProviderReturn | null {
  if (!returned || returned.route !== route) return null;
  const r = returned;
  returned = null;
  return r;
}

/** An answer no page took (the route drew another page): forgotten. */
export function dropProviderReturn(): void {
  returned = null;
}

/** A provider's name as people know it: from the list, else its configured name. */
export function displayNameOf(providers: IdentityProvider[], name: string | null): string {
  if (!name) return t('theProvider');
  return providers.find((p) => p.name === name)?.displayName ?? name;
}

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The sentence for a flow that came back with `error` (or a refused handoff). */
export function providerSentence(reason: string | null, name: string, intent: 'sign_in' | 'link'): string {
  const params = { name, Name: capital(name) };
  switch (reason) {
    case 'cancelled':
      return t(intent === 'link' ? 'cancelled.link' : 'cancelled.sign_in', params);
    case 'unavailable':
    case 'account_exists':
    case 'sign_up_closed':
    case 'already_linked':
    case 'hook_refused':
      return t(reason, params);
    default:
      return t(intent === 'link' ? 'failed.link' : 'failed.sign_in', params);
  }
}

/** A refusal of POST /provider-flows, in the person's words. */
function startRefusal(error: unknown, name: string): Error {
  const p = asProblem(error);
  if (p.code === 'service.unavailable') return new Error(providerSentence('unavailable', name, 'sign_in'));
  if (p.code === 'identity.provider_unavailable') {
    return new Error(t('notAvailable', { Name: capital(name) }));
  }
  return error instanceof Error ? error : new Error(messageFor(p));
}

/** A small neutral mark: the name's first letter in a circle (no third-party logo, nothing to load). */
export function providerMark(name: string): HTMLElement {
  return h('span', { class: 'provider-mark', 'aria-hidden': 'true' }, name.trim().charAt(0).toUpperCase());
}

/** Starts a flow at `provider` and hands the window to it. */
export async function goToProvider(
  provider: IdentityProvider,
  intent: 'sign_in' | 'link' | 'step_up',
  route: string,
  elevationToken?: string,
): Promise<void> {
  let url: string;
  try {
    url = await api.startProviderFlow(provider.name, intent, route, elevationToken);
  } catch (error) {
    throw startRefusal(error, provider.displayName);
  }
  // Which act comes back (a link and a step-up both return to Security): for the sentence only.
  sessionStorage.setItem(INTENT_KEY, intent);
  location.assign(url);
}

const INTENT_KEY = 'identity-service.provider-intent';

/** The intent of the flow this tab last started (and forgets it). */
export function takeStartedIntent(): string | null {
  const intent = sessionStorage.getItem(INTENT_KEY);
  sessionStorage.removeItem(INTENT_KEY);
  return intent;
}

/** A "Continue with <name>" (or "Connect <name>") button with the provider's mark. */
export function providerButton(label: string, name: string, alert: HTMLElement, run: () => Promise<void>) {
  const button = actionButton(label, alert, run, 'secondary provider');
  button.prepend(providerMark(name));
  return button;
}

export interface ContinueWithOptions {
  /** The route the flow comes back to: `/sign-in`, `/sign-up` or `/authorize/<uid>`. */
  route: string;
  /** A flow came back signed in: a session, or a second step to take. */
  signedIn(outcome: SignInOutcome, displayName: string): void;
}

/**
 * The "Continue with …" card (hidden while the list loads, and when it is empty or cannot be had),
 * and `notice`, to put at the top of the page: what a flow that came back to this route answered
 * (its error as a sentence, or "Finishing…" while its handoff is exchanged).
 */
export function continueWith(o: ContinueWithOptions): { notice: HTMLElement; card: HTMLElement } {
  const back = takeProviderReturn(o.route);
  const notice = alertBox();
  notice.id = 'provider-notice';
  const status = h('p', { class: 'info', role: 'status', hidden: true });
  const titleId = uid('providers-title');
  const alert = alertBox();
  const buttons = h('div', { class: 'actions providers', id: 'providers' });
  const card = h(
    'section',
    { class: 'card', 'aria-labelledby': titleId, hidden: true },
    h('h2', { id: titleId }, t('orContinueWith')),
    alert,
    buttons,
  );
  const tell = (text: string) => {
    status.hidden = true;
    notice.textContent = text;
    notice.hidden = false;
    // After the page is drawn (its heading takes the focus first).
    setTimeout(() => notice.isConnected && notice.focus(), 0);
  };
  if (back?.handoff) {
    status.textContent = t('finishing');
    status.hidden = false;
  }
  void (async () => {
    const providers = await api.providers();
    buttons.replaceChildren(
      ...providers.map((p) =>
        providerButton(t('continueWith', { name: p.displayName }), p.displayName, alert, () =>
          goToProvider(p, 'sign_in', o.route),
        ),
      ),
    );
    card.hidden = providers.length === 0;
    if (!back) return;
    const name = displayNameOf(providers, back.provider);
    if (!back.handoff) {
      tell(providerSentence(back.error, name, 'sign_in'));
      return;
    }
    status.textContent = t('finishingWith', { name });
    try {
      const outcome = await api.exchangeProviderHandoff(back.handoff);
      status.hidden = true;
      o.signedIn(outcome, name);
    } catch (error) {
      const p = asProblem(error);
      tell(
        p.code === 'identity.sign_in_refused' || p.status === 401
          ? providerSentence('refused', name, 'sign_in')
          : messageFor(p),
      );
    }
  })();
  return { notice: h('div', null, status, notice), card };
}
