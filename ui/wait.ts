import { h } from './dom.js';
import { t } from './messages/forms.js';

/**
 * A wait in the person's words: "30 seconds" under a minute, "about 15 minutes" (rounded up) up to
 * an hour and a half, "about 2 hours" (rounded up) beyond. Never "888 seconds".
 */
export function waitPhrase(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  if (s < 60) return t('seconds', { count: s });
  if (s <= 90 * 60) return t('aboutMinutes', { count: Math.ceil(s / 60) });
  return t('aboutHours', { count: Math.ceil(s / 3600) });
}

/** A countdown's text: mm:ss, or h:mm:ss from an hour on. */
export function countdownText(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  const two = (n: number) => String(n).padStart(2, '0');
  const hours = Math.floor(s / 3600);
  const rest = `${two(Math.floor((s % 3600) / 60))}:${two(s % 60)}`;
  return hours > 0 ? `${hours}:${rest}` : rest;
}

/** Buttons held back by a wait, with the countdown's end. */
const held = new WeakMap<HTMLButtonElement, { stop(): void }>();

/** Whether `button` is disabled by a wait (and must stay so when its action ends). */
export function isHeld(button: HTMLButtonElement): boolean {
  return held.has(button);
}

/**
 * Disables `button` for `seconds` (the service's Retry-After), with a visible countdown beside it
 * that is updated each second. The countdown is a `timer` (not live: a screen reader is not told
 * every second; the alert already said how long) and the button's own name never changes. At zero
 * the button is enabled again, the countdown removed and `alert` cleared if it still says `message`.
 */
export function holdButton(
  button: HTMLButtonElement,
  seconds: number,
  alert: HTMLElement,
  message: string,
): void {
  held.get(button)?.stop();
  const end = Date.now() + Math.max(1, Math.ceil(seconds)) * 1000;
  const time = h('span', { class: 'countdown-time' });
  const countdown = h('span', { class: 'countdown', role: 'timer' }, t('tryAgainIn'), time);
  button.after(countdown);
  button.disabled = true;
  let timer: number | undefined;
  const stop = () => {
    if (timer !== undefined) window.clearInterval(timer);
    held.delete(button);
    countdown.remove();
  };
  const tick = () => {
    const left = Math.ceil((end - Date.now()) / 1000);
    if (!button.isConnected) {
      stop();
      return;
    }
    if (left <= 0) {
      stop();
      button.disabled = false;
      if (alert.textContent === message) {
        alert.textContent = '';
        alert.hidden = true;
      }
      return;
    }
    time.textContent = countdownText(left);
  };
  held.set(button, { stop });
  tick();
  timer = window.setInterval(tick, 1000);
}
