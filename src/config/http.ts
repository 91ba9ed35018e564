import { formatted, parseOrigin, section } from './schema.js';

/** Where the service is reached from: its own origin and the origins allowed cross-origin. */
export const http = section({
  variables: {
    PUBLIC_ORIGIN: formatted('origin', 'must be an absolute origin', {
      description:
        "the service's own origin; the access token's `iss` and `aud`, one value for every instance",
      shown: 'required in production; `http://HOST:PORT` outside it',
    }),
    CORS_ORIGINS: formatted(
      'origin-list',
      'entries must be absolute origins without path, query, fragment or wildcard',
      {
        description:
          'comma-separated absolute origins (no path, query, fragment or `*`) allowed cross-origin; credentials are never allowed; `ETag` and `X-Request-Id` are exposed',
      },
    ),
  },
  formats: {
    origin: (v) => parseOrigin(v) !== null,
    'origin-list': (v) => v.split(',').every((entry) => parseOrigin(entry.trim()) !== null),
  },
  map: (e, shared) => ({
    publicOrigin: shared.publicOrigin,
    corsOrigins: (e.CORS_ORIGINS?.split(',') ?? []).flatMap((entry) => parseOrigin(entry.trim()) ?? []),
  }),
});

/** PUBLIC_ORIGIN, or the address the API listens on when it is unset. */
export function publicOriginOf(host: string, port: number, configured: string | undefined): string {
  const ownOrigin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return (configured && parseOrigin(configured)) || ownOrigin;
}
