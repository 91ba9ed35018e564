import { append } from '../dom.js';

/** Replaces a card's content with the next step and moves focus to its heading. */
export function swap(card: HTMLElement, ...children: (Node | string)[]): void {
  const wasShown = card.isConnected;
  card.replaceChildren();
  append(card, children);
  const heading = card.querySelector<HTMLElement>('h2');
  if (wasShown) heading?.focus();
}
