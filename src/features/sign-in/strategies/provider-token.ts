import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import type { Database } from '../../../platform/db/database.js';
import type { RequestMeta } from '../../../platform/http/auth.js';
import { Problem } from '../../../platform/problem.js';
import type { Hooks } from '../../events/hooks/service.js';
import type { EventLog } from '../../events/log.js';
import { identityChanged } from '../../identities/events.js';
import { deleteFreshIdentity, findIdentity, insertIdentity } from '../../identities/repository.js';
import { findLiveLink, insertLink, spendNonce, touchLink } from '../../providers/repository.js';
import type { ProviderInput } from '../../providers/service.js';
import type { ProviderVerifier } from '../../providers/verifier.js';
import { recordAttempt } from '../../sessions/repository.js';
import type { Complete, SignInResult, Strategy } from '../strategy.js';

/** What the ID-token proof uses. */
export interface ProviderTokenStrategyDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  providers: ProviderVerifier;
  /** identity.created for a first sign-in (docs/events.md). */
  events: EventLog;
  hooks: Pick<Hooks, 'beforeIdentityCreated'>;
}

/**
 * The provider path of POST /sign-ins: an upstream provider's ID token (docs/providers.md). Every
 * failure (unknown or disabled provider, a token the verifier refuses, a missing, unissued, expired
 * or spent nonce, a replayed token) is the same 401 as a wrong password. The nonce is spent and the
 * identity found or created in one transaction. An upstream account is one factor.
 */
export class ProviderTokenStrategy implements Strategy<ProviderInput> {
  constructor(private readonly deps: ProviderTokenStrategyDeps) {}

  async signIn(input: ProviderInput, meta: RequestMeta, complete: Complete): Promise<SignInResult> {
    const proof = await this.deps.providers.verify(input.provider, input.idToken);
    if (!proof) throw new Problem('identity.sign_in_refused');
    const now = this.deps.clock.now();
    // A subject with no identity yet makes one below: the hook is asked first, outside the transaction.
    if (!(await findLiveLink(this.deps.database.db, proof.provider, proof.subject))) {
      await this.deps.hooks.beforeIdentityCreated({
        via: 'provider',
        provider: proof.provider,
        subject: proof.subject,
        ip: meta.ip ?? null,
        userAgent: meta.userAgent ?? null,
      });
    }
    const found = await this.deps.database.db.transaction().execute(async (trx) => {
      if (!(await spendNonce(trx, proof.nonceHash, now))) return undefined;
      let link = await findLiveLink(trx, proof.provider, proof.subject);
      if (!link) {
        const identityId = randomUUID();
        await insertIdentity(trx, { id: identityId, createdAt: now });
        const linkId = await insertLink(trx, { id: randomUUID(), identityId, ...proof, now });
        if (linkId) {
          await identityChanged(this.deps.events, trx, 'identity.created', identityId, identityId, {
            via: 'provider',
          });
          await this.deps.audit.appendOwn(trx, 'identity.provider.registered', identityId, {
            provider: proof.provider,
            linkId,
          });
          // The epoch of a brand-new identity is its initial one.
          return { identityId, linkId, epoch: 0 };
        }
        // A concurrent first visit committed the link first: that identity is the one.
        await deleteFreshIdentity(trx, identityId);
        link = await findLiveLink(trx, proof.provider, proof.subject);
        if (!link) throw new Problem('service.unavailable');
      }
      await touchLink(trx, link.id, now);
      // Read here, before the session is opened: a removal of this link committed in between moves
      // the epoch on, and the session issued below is dead on arrival.
      const identity = await findIdentity(trx, link.identityId);
      // A disabled identity's sign-in is the ordinary refusal (docs/admin.md, "Disable and enable").
      if (!identity || identity.disabledAt !== null) return undefined;
      return { identityId: link.identityId, linkId: link.id, epoch: identity.sessionEpoch };
    });
    if (!found) {
      // A replay of a token whose subject is known is recorded in that identity's history.
      const link = await findLiveLink(this.deps.database.db, proof.provider, proof.subject);
      if (link) {
        await recordAttempt(this.deps.database.db, {
          identityId: link.identityId,
          now: this.deps.clock.now(),
          method: 'provider',
          outcome: 'refused',
          ip: meta.ip,
          userAgent: meta.userAgent,
        });
      }
      throw new Problem('identity.sign_in_refused');
    }
    return complete(
      { identityId: found.identityId, epoch: found.epoch, method: 'provider', stage: 'first' },
      meta,
    );
  }
}
