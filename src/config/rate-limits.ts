import { Type } from '@sinclair/typebox';
import ipaddr from 'ipaddr.js';
import { formatted, section } from './schema.js';

/** A limit: this many requests per window (the platform's limiter takes the same shape). */
export interface RateLimitSetting {
  max: number;
  windowSeconds: number;
}

const rate = (def: string, doc: { description: string }) =>
  Type.String({
    default: def,
    pattern: '^0*[1-9][0-9]{0,8}/0*[1-9][0-9]{0,8}$',
    refusal: 'must be <count>/<seconds> with both at least 1',
    ...doc,
  });

function rateOf(value: string): RateLimitSetting {
  const [max, windowSeconds] = value.split('/').map(Number);
  return { max, windowSeconds };
}

/**
 * TRUST_PROXY entries: each an IPv4 or IPv6 address or a CIDR range. Returns the entries as given,
 * or null when any of them is not one (a bare hop count or `true` is refused: Fastify would read a
 * number as "trust nothing" and `true` as "trust everyone").
 */
function proxyList(value: string): string[] | null {
  const entries = value.split(',').map((e) => e.trim());
  const address = (a: string) => ipaddr.IPv4.isValidFourPartDecimal(a) || ipaddr.IPv6.isValid(a);
  for (const entry of entries) {
    const [host, bits, extra] = entry.split('/');
    if (!address(host) || extra !== undefined) return null;
    if (bits === undefined) continue;
    const max = ipaddr.IPv4.isValidFourPartDecimal(host) ? 32 : 128;
    if (!/^[0-9]{1,3}$/.test(bits) || Number(bits) > max) return null;
  }
  return entries;
}

/** The limits per client address and the guess budgets, and who the client address is. */
export const rateLimits = section({
  variables: {
    RATE_LIMIT_SENDS_A_MESSAGE: rate('5/900', {
      description:
        "`<count>/<seconds>` per client address and route on POST /sign-ups, POST /password-recoveries, POST /sign-ins/codes and POST /sign-in-methods, counting only the requests that send a message (a recovery start or a sign-in code's send counts whenever it answers 201, known address or not); typos, unusable addresses and `409` refusals send nothing and spend nothing of it, but every request to these routes also counts against `RATE_LIMIT_ANSWERS_A_CHALLENGE` per client address, which bounds asking whether addresses are taken. Counted in the database, in the transaction that sends, so concurrent requests at the limit cannot all send. The same count and window apply per destination, in the database: every code sent to one address or number counts against a window of that destination, whichever client asked: recovery starts against one of their own and sign-in codes' sends against another (each counted whether or not an account holds the address, so its 429 comes at the same count for both), sign-up, sign-in-method and step-up codes and invitations against the other; an email counts as its mailbox (`+tag` dropped, Gmail dots folded). Past it a request answers 429 with `Retry-After` and sends nothing. Notices (new sign-ins, security changes) never count against it and are never held back by it, since strangers' requests can spend it: they have a bound of their own per identity (see `SIGN_IN_NOTICES`). A step-up that sends a code also counts per identity and per address. See [API](api.md#messages-per-destination)",
    }),
    RATE_LIMIT_ANSWERS_A_CHALLENGE: rate('10/60', {
      description:
        'per client address on POST /sign-ups/confirmations and POST /sign-ins/second-factors (and other code-answering routes), and on `POST /oidc/device`, where a person types a device user code (see [OpenID Provider](oidc.md#device-authorization-grant))',
    }),
    RATE_LIMIT_PROVES_A_PASSWORD: rate('10/60', {
      description: 'per client address on POST /sign-ins and POST /sign-ins/renewals',
    }),
    RATE_LIMIT_ACCOUNT_EXPORTS: rate('5/3600', { description: 'per client address on GET /account/export' }),
    // Each upload is decoded and re-encoded (libvips): a signed-in caller must not be able to keep
    // the image threads busy. A person sets a picture a few times, not a few times a minute.
    RATE_LIMIT_PICTURE_UPLOADS: rate('20/3600', {
      description: 'per client address on PUT /account/picture (each upload is decoded and re-encoded)',
    }),
    RATE_LIMIT_OIDC_CLIENTS: rate('600/60', {
      description:
        "per client address on the OpenID Provider's client-authenticated endpoints (token, introspection, revocation, pushed authorization requests), each counted on its own; a relying party's server refreshes and introspects from one address. Wrong client secrets are also held by the client's guess budget (`RATE_LIMIT_GUESSES`). The SCIM routes (`/scim/v2`, a directory's server authenticated by its SCIM token) share one count of their own under the same limit; see [SCIM](scim.md)",
    }),
    // One sign-in into an app is one authorization request (two when the app tries prompt=none
    // first); 60 a minute leaves room for a household or an office behind one address while a
    // flood stores at most 60 interactions a minute from it (docs/decisions.md).
    RATE_LIMIT_OIDC_AUTHORIZATIONS: rate('60/60', {
      description:
        "per client address on the OpenID Provider's browser endpoints, `GET`/`POST /oidc/auth` (authorization) and `GET`/`POST /oidc/session/end` (RP-initiated logout), each counted on its own; a `POST` counts, and so does the `GET` it is redirected to. Past it `429` with `Retry-After` and an HTML page, never a redirect to the app. See [OpenID Provider](oidc.md#limits)",
    }),
    // Default: ten free failures, then 1, 2, 4 ... seconds up to twelve hours between attempts (the
    // bound this keeps on guessing a 6-digit code, ten sent codes live at once included, is in
    // docs/security.md "The guessing bound").
    RATE_LIMIT_GUESSES: Type.String({
      default: `10/${12 * 3600}`,
      pattern: '^0*[1-9][0-9]{1,8}/0*[1-9][0-9]{0,8}$',
      refusal: 'must be <free failures>/<longest delay in seconds> with at least 10 free failures',
      description:
        '`<free failures>/<longest delay in seconds>`: per-subject guess budgets (per identity for step-up, enrolment, sign-in-method confirmations and second-factor sign-ins; per identifier and address prefix for passwords; per identifier for sign-up and recovery codes). Past the free failures each attempt waits 1, 2, 4 … seconds up to the longest delay; an early attempt is 429 with `Retry-After`, right or wrong, unchecked; a success resets, and a count untouched for thirty longest delays is forgotten. At least 10 free failures. See [security](security.md) for the bound',
    }),
    TRUST_PROXY: formatted(
      'proxy-list',
      'must be a comma-separated list of proxy addresses or CIDR ranges (a hop count or true is not accepted)',
      {
        description:
          'comma-separated addresses or CIDR ranges of the proxies whose `X-Forwarded-For` is honoured; a hop count, `true` or any unusable entry stops start-up',
        shown: 'none: the socket address is the client',
      },
    ),
  },
  formats: { 'proxy-list': (v) => proxyList(v) !== null },
  map: (e) => {
    const guesses = rateOf(e.RATE_LIMIT_GUESSES);
    return {
      rateLimits: {
        sendsAMessage: rateOf(e.RATE_LIMIT_SENDS_A_MESSAGE),
        answersAChallenge: rateOf(e.RATE_LIMIT_ANSWERS_A_CHALLENGE),
        provesAPassword: rateOf(e.RATE_LIMIT_PROVES_A_PASSWORD),
        /** GET /account/export, per client address. */
        accountExports: rateOf(e.RATE_LIMIT_ACCOUNT_EXPORTS),
        /** PUT /account/picture, per client address. */
        pictureUploads: rateOf(e.RATE_LIMIT_PICTURE_UPLOADS),
        /** The OpenID Provider's client-authenticated endpoints, per client address. */
        oidcClients: rateOf(e.RATE_LIMIT_OIDC_CLIENTS),
        /** The OpenID Provider's browser endpoints (authorization, end session), per client address. */
        oidcAuthorizations: rateOf(e.RATE_LIMIT_OIDC_AUTHORIZATIONS),
        /** Per-subject guess budgets (RATE_LIMIT_GUESSES). */
        guesses: { free: guesses.max, maxDelaySeconds: guesses.windowSeconds },
      },
      /** Proxies whose X-Forwarded-For is honoured (addresses or CIDR ranges); false: none. */
      trustProxy: ((e.TRUST_PROXY && proxyList(e.TRUST_PROXY)) || false) as string[] | false,
    };
  },
});
