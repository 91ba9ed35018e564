import type { PageInfo } from '../pagination/page.js';

/**
 * Success envelope (docs/architecture.md, "The request path"): `data` always, `meta` only when there
 * is something in it.
 */
export function envelope<T>(
  data: T,
  meta?: Record<string, unknown>,
): { data: T; meta?: Record<string, unknown> } {
  return meta ? { data, meta } : { data };
}

export function page<T>(items: T[], pageInfo: PageInfo): { data: T[]; meta: { pageInfo: PageInfo } } {
  return { data: items, meta: { pageInfo } };
}
