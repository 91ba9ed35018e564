import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database } from '../../platform/db/database.js';
import type { SessionPrincipal } from '../../platform/http/auth.js';
import { Problem, type ProblemCode } from '../../platform/problem.js';
import type { EventLog } from '../events/log.js';
import { identityChanged } from '../identities/events.js';
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
  config: Pick<Config, 'lifetimes'>;
  /** identity.updated when a provider is linked (docs/events.md). */
  events: EventLog;
}

/** Provider nonces, and ID tokens as a step-up and a sign-in method (the sign-in: sign-in/strategies/provider-token.ts). */
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
      await identityChanged(this.deps.events, trx, 'identity.updated', identityId, identityId);
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
