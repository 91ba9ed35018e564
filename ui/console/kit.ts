/**
 * What the console's shell (main.ts) lends the pages kept in files of their own (organization.ts,
 * clients-edit.ts): passed in at the call, so no page imports the shell back.
 */
export interface ConsoleKit {
  draw(title: string, ...children: (Node | string | null | false)[]): void;
  table(caption: string, head: string[], rows: (Node | string)[][]): HTMLElement;
  problemText(error: unknown): string;
  confirmThen(
    text: string,
    act: () => Promise<void>,
    refusal?: (err: unknown) => string,
    danger?: boolean,
  ): void;
  /** Draws the current page again. */
  route(): Promise<void>;
}
