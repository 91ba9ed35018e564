import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database } from '../../platform/db/database.js';
import type { RequestMeta, SessionPrincipal } from '../../platform/http/auth.js';
import { Problem, type ProblemCode } from '../../platform/problem.js';
import { deleteFreshIdentity, findIdentity, insertIdentity } from '../identities/repository.js';
import type { SessionService } from '../sessions/service.js';
import {
  type Elevation,
  type MintElevationDeps,
  mintElevation,
  stepUpProofAllowed,
} from '../step-up/service.js';
import {
  findLiveLink,
  insertLink,
  insertNonce,
  pruneExpiredNonces,
  spendNonce,
  touchLink,
} from './repository.js';
import type { ProviderVerifier } from './verifier.js';

export interface ProviderInput {
  provider: string;
  idToken: string;
}

/** What provider nonces and ID-token acts use. */
export interface ProviderServiceDeps extends MintElevationDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  providers: ProviderVerifier;
  sessions: SessionService;
  config: Pick<Config, 'lifetimes'>;
}

/** Provider nonces, and ID tokens as a way in, a step-up and a sign-in method. */
export class ProviderService {
  constructor(private readonly deps: ProviderServiceDeps) {}

  /** POST /provider-nonces: the nonce is shown once; only its hex SHA-256 is stored. */
  async issueNonce(): Promise<{ nonce: string; expiresAt: string }> {
    const nonce = opaqueToken();
    const now = this.deps.clock.now();
    const expiresAt = new Date(now.getTime() + this.deps.config.lifetimes.nonce * 1000);
    await this.deps.database.db.transaction().execute(async (trx) => {
      await pruneExpiredNonces(trx, now);
      await insertNonce(trx, { id: randomUUID(), hash: sha256Hex(nonce), now, expiresAt });
    });
    return { nonce, expiresAt: expiresAt.toISOString() };
  }

  /**
   * Provider path of POST /sign-ins. Every failure (unknown or disabled provider, a token the
   * verifier refuses, a missing, unissued, expired or spent nonce, a replayed token) is the same
   * 401. The nonce is spent and the identity found or created in one transaction; the session (or
   * second-factor ticket) then comes from SessionService.completePrimary like a password sign-in.
   */
  async signIn(input: ProviderInput, meta: RequestMeta): ReturnType<SessionService['completePrimary']> {
    const { sessions } = this.deps;
    const proof = await this.deps.providers.verify(input.provider, input.idToken);
    if (!proof) throw new Problem('identity.sign_in_refused');
    const now = this.deps.clock.now();
    const found = await this.deps.database.db.transaction().execute(async (trx) => {
      if (!(await spendNonce(trx, proof.nonceHash, now))) return undefined;
      let link = await findLiveLink(trx, proof.provider, proof.subject);
      if (!link) {
        const identityId = randomUUID();
        await insertIdentity(trx, { id: identityId, createdAt: now });
        const linkId = await insertLink(trx, { id: randomUUID(), identityId, ...proof, now });
        if (linkId) {
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
      if (link) await sessions.recordAttempt(link.identityId, 'provider', 'refused', meta);
      throw new Problem('identity.sign_in_refused');
    }
    return sessions.completePrimary(found.identityId, found.epoch, 'provider', meta);
  }

  /**
   * POST /step-ups/providers: the ID token must prove a subject linked to the caller's identity, and
   * an identity holding a verified second factor is refused (422 identity.step_up_unavailable): an
   * upstream account is one factor.
   * The nonce is spent and the elevation minted in one transaction. A nonce presented here is
   * burned even when the subject belongs to someone else, so one nonce never serves two acts.
   */
  async stepUp(principal: SessionPrincipal, input: ProviderInput): Promise<Elevation> {
    const refusal = () => new Problem('identity.step_up_confirmation_refused');
    const proof = await this.deps.providers.verify(input.provider, input.idToken);
    if (!proof) throw refusal();
    const now = this.deps.clock.now();
    const outcome = await this.deps.database.db.transaction().execute(async (trx) => {
      if (!(await spendNonce(trx, proof.nonceHash, now))) return undefined;
      const link = await findLiveLink(trx, proof.provider, proof.subject);
      if (!link || link.identityId !== principal.identityId) return undefined;
      // Asked before minting (which asks again) so the refusal commits the spent nonce with it.
      if (!(await stepUpProofAllowed(trx, principal.identityId, 'provider', true))) return 'unavailable';
      await touchLink(trx, link.id, now);
      return mintElevation(trx, this.deps, principal, 'provider');
    });
    if (outcome === 'unavailable') throw new Problem('identity.step_up_unavailable');
    if (!outcome) throw refusal();
    return outcome;
  }

  /**
   * The provider form of POST /sign-in-methods: the ID token proves the subject, so it is linked at
   * once. The nonce rules of sign-in apply. A subject already linked (to anyone) is 409
   * identity.identifier_taken; the nonce is spent either way.
   */
  async link(identityId: string, input: ProviderInput, refusalCode: ProblemCode): Promise<{ id: string }> {
    const proof = await this.deps.providers.verify(input.provider, input.idToken);
    if (!proof) throw new Problem(refusalCode);
    const now = this.deps.clock.now();
    const outcome = await this.deps.database.db.transaction().execute(async (trx) => {
      if (!(await spendNonce(trx, proof.nonceHash, now))) return { refused: true as const };
      const id = await insertLink(trx, { id: randomUUID(), identityId, ...proof, now });
      if (!id) return { taken: true as const };
      await this.deps.audit.appendOwn(trx, 'identity.sign_in_method.verified', identityId, {
        kind: 'provider',
        provider: proof.provider,
        methodId: id,
      });
      return { id };
    });
    if ('refused' in outcome) throw new Problem(refusalCode);
    if ('taken' in outcome) throw new Problem('identity.identifier_taken');
    return { id: outcome.id };
  }
}
