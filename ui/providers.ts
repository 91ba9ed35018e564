import { api, asProblem, type IdentityProvider, type SignInOutcome } from './api.js';
import { h, uid } from './dom.js';
import { actionButton, alertBox } from './forms.js';
import { t } from './messages/providers.js';
import { t as ssoText } from './messages/sso.js';
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

const SVG = 'http://www.w3.org/2000/svg';

/**
 * The presets' own marks, drawn through the DOM (nothing loaded, no markup string: the CSP allows
 * neither): each a viewBox and its shapes, a path or a rectangle, with its colour (`currentColor`
 * for the one-colour marks, which then follow the theme).
 */
const MARKS: Record<string, { viewBox: string; shapes: { d?: string; rect?: number[]; fill: string }[] }> = {
  google: {
    viewBox: '0 0 48 48',
    shapes: [
      {
        fill: '#EA4335',
        d: 'M24 9.5c3.54 0 6.71 1.22 9.21 3.6l6.85-6.85C35.9 2.38 30.47 0 24 0 14.62 0 6.51 5.38 2.56 13.22l7.98 6.19C12.43 13.72 17.74 9.5 24 9.5z',
      },
      {
        fill: '#4285F4',
        d: 'M46.98 24.55c0-1.57-.15-3.09-.38-4.55H24v9.02h12.94c-.58 2.96-2.26 5.48-4.78 7.18l7.73 6c4.51-4.18 7.09-10.36 7.09-17.65z',
      },
      {
        fill: '#FBBC05',
        d: 'M10.53 28.59c-.48-1.45-.76-2.99-.76-4.59s.27-3.14.76-4.59l-7.98-6.19C.92 16.46 0 20.12 0 24c0 3.88.92 7.54 2.56 10.78l7.97-6.19z',
      },
      {
        fill: '#34A853',
        d: 'M24 48c6.48 0 11.93-2.13 15.89-5.81l-7.73-6c-2.15 1.45-4.92 2.3-8.16 2.3-6.26 0-11.57-4.22-13.47-9.91l-7.98 6.19C6.51 42.62 14.62 48 24 48z',
      },
    ],
  },
  microsoft: {
    viewBox: '0 0 21 21',
    shapes: [
      { fill: '#F25022', rect: [1, 1, 9, 9] },
      { fill: '#7FBA00', rect: [11, 1, 9, 9] },
      { fill: '#00A4EF', rect: [1, 11, 9, 9] },
      { fill: '#FFB900', rect: [11, 11, 9, 9] },
    ],
  },
  github: {
    viewBox: '0 0 16 16',
    shapes: [
      {
        fill: 'currentColor',
        d: 'M8 0C3.58 0 0 3.58 0 8c0 3.54 2.29 6.53 5.47 7.59.4.07.55-.17.55-.38 0-.19-.01-.82-.01-1.49-2.01.37-2.53-.49-2.69-.94-.09-.23-.48-.94-.82-1.13-.28-.15-.68-.52-.01-.53.63-.01 1.08.58 1.23.82.72 1.21 1.87.87 2.33.66.07-.52.28-.87.51-1.07-1.78-.2-3.64-.89-3.64-3.95 0-.87.31-1.59.82-2.15-.08-.2-.36-1.02.08-2.12 0 0 .67-.21 2.2.82.64-.18 1.32-.27 2-.27.68 0 1.36.09 2 .27 1.53-1.04 2.2-.82 2.2-.82.44 1.1.16 1.92.08 2.12.51.56.82 1.27.82 2.15 0 3.07-1.87 3.75-3.65 3.95.29.25.54.73.54 1.48 0 1.07-.01 1.93-.01 2.2 0 .21.15.46.55.38A8.013 8.013 0 0 0 16 8c0-4.42-3.58-8-8-8z',
      },
    ],
  },
  apple: {
    viewBox: '0 0 24 24',
    shapes: [
      {
        fill: 'currentColor',
        d: 'M12.152 6.896c-.948 0-2.415-1.078-3.96-1.04-2.04.027-3.91 1.183-4.961 3.014-2.117 3.675-.546 9.103 1.519 12.09 1.013 1.454 2.208 3.09 3.792 3.039 1.52-.065 2.09-.987 3.935-.987 1.831 0 2.35.987 3.96.948 1.637-.026 2.676-1.48 3.676-2.948 1.156-1.688 1.636-3.325 1.662-3.415-.039-.013-3.182-1.221-3.22-4.857-.026-3.04 2.48-4.494 2.597-4.559-1.429-2.09-3.623-2.324-4.39-2.376-2-.156-3.675 1.09-4.61 1.09zM15.53 3.83c.843-1.012 1.4-2.427 1.245-3.83-1.207.052-2.662.805-3.532 1.818-.78.896-1.454 2.338-1.273 3.714 1.338.104 2.715-.688 3.559-1.701',
      },
    ],
  },
};

/**
 * A provider's mark: a preset's own (Google, Microsoft, GitHub, Apple), else a small neutral one,
 * the name's first letter in a circle. Decoration: the text beside it names the provider.
 */
export function providerMark(name: string, preset?: string | null): Element {
  const mark = preset ? MARKS[preset] : undefined;
  if (!mark) {
    return h('span', { class: 'provider-mark', 'aria-hidden': 'true' }, name.trim().charAt(0).toUpperCase());
  }
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', mark.viewBox);
  svg.setAttribute('width', '20');
  svg.setAttribute('height', '20');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  svg.setAttribute('class', `provider-logo provider-logo-${preset}`);
  for (const shape of mark.shapes) {
    let el: SVGElement;
    if (shape.rect) {
      el = document.createElementNS(SVG, 'rect');
      const [x, y, width, height] = shape.rect;
      el.setAttribute('x', String(x));
      el.setAttribute('y', String(y));
      el.setAttribute('width', String(width));
      el.setAttribute('height', String(height));
    } else {
      el = document.createElementNS(SVG, 'path');
      el.setAttribute('d', shape.d ?? '');
    }
    el.setAttribute('fill', shape.fill);
    svg.appendChild(el);
  }
  return svg;
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
export function providerButton(
  label: string,
  name: string,
  alert: HTMLElement,
  run: () => Promise<void>,
  preset?: string | null,
) {
  const button = actionButton(label, alert, run, 'secondary provider');
  button.prepend(providerMark(name, preset));
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
    status.textContent = back.provider === null ? ssoText('finishing') : t('finishing');
    status.hidden = false;
  }
  // No provider named: an enterprise (SAML) sign-in came back here (docs/sso.md).
  if (back && back.provider === null) {
    void (async () => {
      if (!back.handoff) {
        const known = ['not_allowed', 'hook_refused', 'unavailable'] as const;
        const error = known.find((k) => k === back.error);
        tell(ssoText(error ?? 'refused'));
        return;
      }
      try {
        const outcome = await api.exchangeSsoHandoff(back.handoff);
        status.hidden = true;
        o.signedIn(outcome, ssoText('theIdp'));
      } catch (error) {
        const p = asProblem(error);
        tell(p.code === 'identity.sign_in_refused' || p.status === 401 ? ssoText('refused') : messageFor(p));
      }
    })();
  }
  const sso = back?.provider === null;
  void (async () => {
    const providers = await api.providers();
    buttons.replaceChildren(
      ...providers.map((p) =>
        providerButton(
          t('continueWith', { name: p.displayName }),
          p.displayName,
          alert,
          () => goToProvider(p, 'sign_in', o.route),
          p.preset,
        ),
      ),
    );
    card.hidden = providers.length === 0;
    if (!back || sso) return;
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
