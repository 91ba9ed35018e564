import type { RequestMeta } from '../../../platform/http/auth.js';
import type { SignInHandoff } from '../../providers/flows/service.js';
import type { Complete, SignInResult, Strategy } from '../strategy.js';

/**
 * Redirect sign-in through an upstream provider ("Continue with …", docs/providers.md): the proof
 * is checked by providers/flows/service.ts across the flow (the callback checks the upstream's answer and
 * applies the linking rules; POST /provider-handoffs spends the handoff code with the flow's
 * cookie), which answers the identity it proved. Here it becomes a sign-in like the ID-token
 * path's: an upstream account is one factor.
 */
export class ProviderRedirectStrategy implements Strategy<SignInHandoff> {
  signIn(handoff: SignInHandoff, meta: RequestMeta, complete: Complete): Promise<SignInResult> {
    return complete(
      { identityId: handoff.identityId, epoch: handoff.epoch, method: 'provider', stage: 'first' },
      meta,
    );
  }
}
