import type { RouteOptions } from 'fastify';

/**
 * Whether a route answers only safe methods (GET, HEAD, OPTIONS: RFC 9110, 9.2.1), which never
 * change anything, so hooks that follow a change (sign-in and security notices) are not added to it.
 */
export function onlySafeMethods(route: Pick<RouteOptions, 'method'>): boolean {
  return [route.method].flat().every((m) => m === 'GET' || m === 'HEAD' || m === 'OPTIONS');
}
