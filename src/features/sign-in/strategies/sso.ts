import type { RequestMeta } from '../../../platform/http/auth.js';
import type { Complete, SignInResult, Strategy } from '../strategy.js';

/** A completed SAML sign-in's handoff, exchanged: the identity proved, its epoch, the connection. */
export interface SsoHandoff {
  identityId: string;
  epoch: number;
  connectionId: string;
}

/**
 * Enterprise sign-in through an organization's connection (docs/sso.md): the assertion is checked
 * by sso/saml.ts at the ACS and the linking rules applied by sso/service.ts; POST /sso-handoffs
 * spends the handoff code with the flow's cookie and answers the identity proved. Here it becomes
 * a sign-in like every other: an IdP is one factor, so an identity holding a second factor gets a
 * ticket for the second step.
 */
export class SsoStrategy implements Strategy<SsoHandoff> {
  signIn(handoff: SsoHandoff, meta: RequestMeta, complete: Complete): Promise<SignInResult> {
    const { identityId, epoch, connectionId } = handoff;
    return complete({ identityId, epoch, method: 'sso', connectionId, stage: 'first' }, meta);
  }
}
