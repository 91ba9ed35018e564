import { oneOf, section } from './schema.js';

/** The messages the service sends of its own accord, after a sign-in or a security change. */
export const notices = section({
  variables: {
    SIGN_IN_NOTICES: oneOf('on', ['on', 'off'], {
      description:
        "`on` or `off`: after a sign-in from a device and address prefix the identity has not used in 90 days, a message to its first verified identifier a channel reaches, no link in it. Never dropped, and never counted against the per-destination limit of `RATE_LIMIT_SENDS_A_MESSAGE` (which strangers can spend): only the identity's own sign-ins spend its bound, one message per 15 minutes, the first at once and later ones in the window coalesced into one message when it ends (see [API](api.md#4-new-sign-in-notices) and [security](security.md#notices))",
    }),
    SECURITY_NOTICES: oneOf('on', ['on', 'off'], {
      description:
        "`on` or `off`: a message to every verified identifier (and to an identifier just removed) after a change an attacker would make: password, authenticator, passkey, recovery codes, identifiers, linked providers; no link in it, never held back by the per-destination limit, the first change at once and later changes within its 15 minutes coalesced into one message; a window of its own, apart from the new-sign-in notices' (see [security](security.md#notices))",
    }),
  },
  map: (e) => ({
    /** New-sign-in notices on the identity's verified channel (SIGN_IN_NOTICES). */
    signInNotices: e.SIGN_IN_NOTICES === 'on',
    /** Messages after a security change to the identity's verified channels (SECURITY_NOTICES). */
    securityNotices: e.SECURITY_NOTICES === 'on',
  }),
});
