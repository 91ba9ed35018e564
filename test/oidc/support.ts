import type { FastifyInstance } from 'fastify';
import { ADMIN_KEY } from '../helpers/admin.js';

/** One request to the admin listener with the `ops` key (or `key`), any method, any body. */
export function adminCall(
  admin: FastifyInstance,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  opts: { payload?: unknown; headers?: Record<string, string>; key?: string } = {},
) {
  return admin.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${opts.key ?? ADMIN_KEY}`, ...opts.headers },
    ...(opts.payload === undefined ? {} : { payload: opts.payload as object }),
  });
}

/** The token endpoint with a client_credentials grant and Basic authentication. */
export function clientCredentials(app: FastifyInstance, clientId: string, secret: string) {
  const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString(
    'base64',
  );
  return app.inject({
    method: 'POST',
    url: '/oidc/token',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  });
}
