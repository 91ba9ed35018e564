import { Type } from '@sinclair/typebox';
import { ConfigError, oneOf, section } from '../../config/schema.js';

/** The channels SIGN_IN_CODES names, and the identifier type each reaches. */
const CHANNELS: Record<string, 'email' | 'phone'> = { email: 'email', sms: 'phone' };

/** Sign-in without a password (issue 45): which channels may carry a sign-in code, and for whom. */
export const signInSection = section({
  variables: {
    SIGN_IN_CODES: Type.String({
      default: 'off',
      pattern: '^(off|(email|sms)(,(email|sms))?)$',
      refusal: 'must be off or a comma-separated list of email, sms',
      description:
        '`off`, or the channels (`email`, `sms`, or `email,sms`) on which `POST /sign-ins/codes` sends a one-time code that signs in without a password. A code is one factor: an identity holding a second factor still gets a second-factor ticket. Off by default, so an existing deployment does not gain a way in its operator never chose (see [API](api.md#sign-in-with-a-code) and [security](security.md#sign-in-codes))',
    }),
    SIGN_IN_CODES_WITH_PASSWORD: oneOf('on', ['on', 'off'], {
      description:
        '`on` or `off`: whether an identity that has a password may also sign in by code (`off`: only identities without one, such as those that signed up with a provider, may); refused the same way as an unknown address, nothing sent',
    }),
    SIGN_IN_LINKS: oneOf('on', ['on', 'off'], {
      description:
        '`on` or `off`: whether the message of a sign-in code also carries a link to the hosted pages that signs in with one click (the same challenge in another form: one use between them). The link signs in only after the person presses Continue on the page it opens (a mail scanner that follows it signs nobody in); see [API](api.md#sign-in-with-a-link) and [security](security.md#sign-in-links)',
    }),
    SIGN_IN_CODES_SIGN_UP: oneOf('off', ['on', 'off'], {
      description:
        '`on` or `off`: whether `POST /sign-ups` may omit the password, for an account that signs in by code only (on a channel `SIGN_IN_CODES` names; the code sent then opens the first session at `POST /sign-ups/confirmations`). Off by default; `on` needs `SIGN_IN_CODES` (an account without a password needs a way back in). See [API](api.md#sign-up-by-code)',
    }),
  },
  map: (e) => ({
    signInCodes: {
      /** The identifier types a sign-in code may be sent to; empty when SIGN_IN_CODES=off (no routes). */
      channels:
        e.SIGN_IN_CODES === 'off' ? [] : [...new Set(e.SIGN_IN_CODES.split(',').map((c) => CHANNELS[c]))],
      /** Whether an identity with a password may sign in by code (SIGN_IN_CODES_WITH_PASSWORD). */
      withPassword: e.SIGN_IN_CODES_WITH_PASSWORD === 'on',
      /** Whether a sign-in code's message carries a link too (SIGN_IN_LINKS). */
      links: e.SIGN_IN_LINKS === 'on',
      /** Whether POST /sign-ups may omit the password (SIGN_IN_CODES_SIGN_UP). */
      signUp: e.SIGN_IN_CODES_SIGN_UP === 'on',
    },
  }),
  /** A passwordless account signs in by code: sign-up by code without code sign-in has no way back. */
  check: (config: { signInCodes: { channels: string[]; signUp: boolean } }) => {
    if (config.signInCodes.signUp && config.signInCodes.channels.length === 0) {
      throw new ConfigError('SIGN_IN_CODES_SIGN_UP', 'needs SIGN_IN_CODES to name a channel');
    }
  },
});
