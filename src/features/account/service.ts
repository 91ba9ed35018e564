import type { AppContext } from '../../context.js';
import { Problem } from '../../platform/problem.js';
import { liveStatus } from '../recovery-codes/repository.js';
import { describeDevice } from '../sessions/devices.js';
import * as repo from './repository.js';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** GET /account/export: everything the service holds about the caller (issue 14 item 3). */
export class AccountService {
  constructor(private readonly ctx: AppContext) {}

  /**
   * One JSON document: the identity, its identifiers unmasked, its methods,
   * second factors and passkeys without secrets, its sessions and sign-in history with the
   * addresses and user agents recorded, and the audit records about it. Audited as an export.
   */
  async export(identityId: string) {
    const now = this.ctx.clock.now();
    return this.ctx.database.db.transaction().execute(async (trx) => {
      const identity = await repo.identityFacts(trx, identityId);
      if (!identity) throw new Problem('identity.session_required');
      const [identifiers, secondFactors, passkeys, providers, recovery, sessions, attempts, audit] =
        await Promise.all([
          repo.identifierFacts(trx, identityId),
          repo.secondFactorFacts(trx, identityId),
          repo.passkeyFacts(trx, identityId),
          repo.providerLinkFacts(trx, identityId),
          liveStatus(trx, identityId),
          repo.sessionFacts(trx, identityId),
          repo.attemptFacts(trx, identityId),
          repo.auditFacts(trx, identityId),
        ]);
      const document = {
        exportedAt: now.toISOString(),
        identity: {
          id: identity.id,
          createdAt: iso(identity.created_at),
          password: { set: identity.has_password, changedAt: iso(identity.password_changed_at) },
          lock: { failedAttempts: identity.failed_attempts, lockedUntil: iso(identity.locked_until) },
        },
        identifiers: identifiers.map((i) => ({
          id: i.id,
          type: i.type,
          value: i.value,
          createdAt: iso(i.created_at),
          verifiedAt: iso(i.verified_at),
          lastUsedAt: iso(i.last_used_at),
        })),
        providerLinks: providers.map((l) => ({
          id: l.id,
          provider: l.provider,
          subject: l.subject,
          createdAt: iso(l.created_at),
          lastUsedAt: iso(l.last_used_at),
        })),
        passkeys: passkeys.map((k) => ({
          id: k.id,
          label: k.label,
          aaguid: k.aaguid,
          backedUp: k.backed_up,
          transports: k.transports,
          createdAt: iso(k.created_at),
          lastUsedAt: iso(k.last_used_at),
        })),
        secondFactors: secondFactors.map((f) => ({
          id: f.id,
          label: f.label,
          algorithm: f.algorithm,
          digits: f.digits,
          period: f.period,
          createdAt: iso(f.created_at),
          verifiedAt: iso(f.verified_at),
          lastUsedAt: iso(f.last_used_at),
        })),
        recoveryCodes: { remaining: recovery.remaining, issuedAt: iso(recovery.issued_at) },
        sessions: sessions.map((s) => ({
          id: s.id,
          method: s.method,
          createdAt: iso(s.created_at),
          lastActiveAt: iso(s.renewed_at ?? s.created_at),
          sessionExpiresAt: iso(s.expires_at),
          endedAt: iso(s.revoked_at),
          endedBecause: s.revoked_reason,
          ipAddress: s.ip_address,
          userAgent: s.user_agent,
          device: describeDevice(s.user_agent),
        })),
        signInHistory: attempts.map((a) => ({
          id: a.id,
          occurredAt: iso(a.occurred_at),
          method: a.method,
          outcome: a.outcome,
          ipAddress: a.ip_address,
          userAgent: a.user_agent,
          sessionId: a.session_id,
          noticeSentAt: iso(a.notice_sent_at),
        })),
        auditRecords: audit.map((r) => ({
          seq: Number(r.seq),
          id: r.id,
          occurredAt: iso(r.occurred_at),
          name: r.name,
          actor: r.actor,
          target: r.target,
          outcome: r.outcome,
          details: typeof r.details === 'string' ? JSON.parse(r.details) : r.details,
        })),
      };
      // The export itself is on the record (and in the next export).
      await this.ctx.audit.appendOwn(trx, 'identity.account.exported', identityId);
      return document;
    });
  }
}
