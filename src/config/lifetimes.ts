import { integer, section } from './schema.js';

/** How long what the service hands out lives, in seconds. */
export const lifetimes = section({
  variables: {
    ACCESS_TOKEN_TTL: integer(900, 60, 86400, { description: 'access-token lifetime, seconds' }),
    SESSION_TTL: integer(30 * 86400, 300, 365 * 86400, {
      description: 'absolute session lifetime, fixed at sign-in, seconds',
      shown: '`2592000` (30 days)',
    }),
    SECOND_FACTOR_TICKET_TTL: integer(300, 60, 3600, {
      description: 'second-factor ticket lifetime, seconds',
    }),
    CHALLENGE_TTL: integer(900, 60, 86400, { description: 'out-of-band challenge lifetime, seconds' }),
    ELEVATION_TTL: integer(300, 30, 3600, { description: 'elevation-token lifetime, seconds' }),
    ACCOUNT_LOCK_TTL: integer(900, 60, 86400, {
      description: 'how long the identity-wide lock lasts once tripped, seconds',
    }),
  },
  map: (e) => ({
    /** Lifetimes in seconds. */
    lifetimes: {
      accessToken: e.ACCESS_TOKEN_TTL,
      session: e.SESSION_TTL,
      ticket: e.SECOND_FACTOR_TICKET_TTL,
      challenge: e.CHALLENGE_TTL,
      elevation: e.ELEVATION_TTL,
      lock: e.ACCOUNT_LOCK_TTL,
      nonce: 600,
    },
  }),
});
