export interface PageContent {
  title: string;
  body: (Node | string)[];
}
export type Page = () => Promise<PageContent> | PageContent;

export const routeOf = (hash: string): string => {
  const path = hash.replace(/^#/, '');
  return path.startsWith('/') ? path : '/';
};

export function go(path: string): void {
  if (location.hash === `#${path}`) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = path;
}
