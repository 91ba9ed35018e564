/**
 * What the console's shell (main.ts) lends the pages kept in files of their own (health.ts,
 * webhooks.ts, organization.ts, clients-edit.ts): passed in at the call, so no page imports the
 * shell back.
 */
export interface ConsoleKit {
  /** Replaces the page: its title (the h1 and the document's) and its content. */
  draw(title: string, ...children: (Node | string | null | false)[]): void;
  /** A table in a scrolling box, named by its caption. */
  table(caption: string, head: string[], rows: (Node | string)[][]): HTMLElement;
  alertBox(text: string): HTMLElement;
  problemText(error: unknown): string;
  /** A modal confirmation: Confirm runs `act`; its refusal is shown in the dialog by `refusal`. */
  confirmThen(
    text: string,
    act: () => Promise<void>,
    refusal?: (err: unknown) => string,
    danger?: boolean,
  ): void;
  /** Draws the current page again. */
  route(): Promise<void>;
}
