/** What the console's shell (main.ts) lends the pages kept in files of their own. */
export interface PageKit {
  /** Replaces the page: its title (the h1 and the document's) and its content. */
  draw(title: string, ...children: (Node | string | null | false)[]): void;
  /** A table in a scrolling box, named by its caption. */
  table(caption: string, head: string[], rows: (Node | string)[][]): HTMLElement;
  alertBox(text: string): HTMLElement;
}
