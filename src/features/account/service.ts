import { randomUUID } from 'node:crypto';
import type { AuditLog } from '../../platform/audit/audit.js';
import { type Clock, iso } from '../../platform/clock.js';
import type { Database } from '../../platform/db/database.js';
import { maskIdentifier } from '../../platform/notify/mask.js';
import { Problem } from '../../platform/problem.js';
import type { EventLog } from '../events/log.js';
import { identityChanged } from '../identities/events.js';
import { pictureUrl, processPicture } from '../identities/picture.js';
import { deletePicture, pictureById, replacePicture } from '../identities/picture-repository.js';
import { normaliseName, profileJson } from '../identities/profile.js';
import { setIdentityLocale, setIdentityNames } from '../identities/repository.js';
import { invitationsSentBy } from '../organizations/invitations/repository.js';
import { liveStatus } from '../recovery-codes/repository.js';
import { describeDevice } from '../sessions/devices.js';
import * as repo from './repository.js';
import type { AccountUpdate } from './schemas.js';

/** What the account export reads. */
export interface AccountServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  events: EventLog;
  /** The pictures' addresses are absolute, on PUBLIC_ORIGIN. */
  config: { publicOrigin: string };
}

/**
 * GET /account/export: everything the service holds about the caller (docs/api.md, "3. Export your
 * data").
 */
export class AccountService {
  constructor(private readonly deps: AccountServiceDeps) {}

  /**
   * GET /account: the owner's own account at a glance (docs/api.md, "Your account at a glance"):
   * identifiers unmasked, and how the account is protected. A read: not audited (the export, a
   * bulk copy of everything, is).
   */
  async overview(identityId: string) {
    return this.deps.database.db.transaction().execute(async (trx) => {
      const identity = await repo.identityFacts(trx, identityId);
      if (!identity) throw new Problem('identity.session_required');
      const [identifiers, secondFactors, passkeys, providers, recovery] = await Promise.all([
        repo.identifierFacts(trx, identityId),
        repo.secondFactorFacts(trx, identityId),
        repo.passkeyFacts(trx, identityId),
        repo.providerLinkFacts(trx, identityId),
        liveStatus(trx, identityId),
      ]);
      const newestPasskey = passkeys.reduce<Date | null>(
        (latest, k) => (latest === null || k.createdAt > latest ? k.createdAt : latest),
        null,
      );
      return {
        id: identity.id,
        createdAt: iso(identity.createdAt),
        locale: identity.locale,
        ...profileJson(identity),
        picture: this.#picture(identity.pictureId),
        identifiers: identifiers.map((i) => ({
          id: i.id,
          type: i.type,
          value: i.value,
          verifiedAt: iso(i.verifiedAt),
        })),
        password: { set: identity.hasPassword, changedAt: iso(identity.passwordChangedAt) },
        secondFactors: { active: secondFactors.length },
        passkeys: { count: passkeys.length, lastAddedAt: iso(newestPasskey) },
        recoveryCodes: { remaining: recovery.remaining, issuedAt: iso(recovery.issuedAt) },
        providerLinks: providers.map((l) => ({
          id: l.id,
          provider: l.provider,
          createdAt: iso(l.createdAt),
        })),
      };
    });
  }

  /**
   * PATCH /account: the person's own settings, their language and name (docs/api.md, "Your
   * language", "Your name"). What the identity already has writes nothing (no audit record, no
   * event), so the hosted pages can say their language on every visit; a change is kept, audited
   * (the language by value, the name by which fields changed, never their text) and told once
   * (identity.updated), in one transaction.
   */
  async update(identityId: string, change: AccountUpdate) {
    const names = {
      ...(change.givenName !== undefined ? { givenName: normaliseName(change.givenName) } : {}),
      ...(change.familyName !== undefined ? { familyName: normaliseName(change.familyName) } : {}),
      ...(change.displayName !== undefined ? { displayName: normaliseName(change.displayName) } : {}),
    };
    const naming = Object.keys(names).length > 0;
    if (change.locale || naming) {
      await this.deps.database.db.transaction().execute(async (trx) => {
        // The names as they were, to audit which fields change: read only when some are sent (the
        // hosted pages send their language alone on every visit).
        const before = naming ? await repo.identityFacts(trx, identityId) : undefined;
        let changed = false;
        if (change.locale && (await setIdentityLocale(trx, identityId, change.locale))) {
          await this.deps.audit.appendOwn(trx, 'identity.locale.changed', identityId, {
            locale: change.locale,
          });
          changed = true;
        }
        if (before && (await setIdentityNames(trx, identityId, names))) {
          const fields = (Object.keys(names) as (keyof typeof names)[]).filter((k) => names[k] !== before[k]);
          await this.deps.audit.appendOwn(trx, 'identity.profile.changed', identityId, {
            fields: fields.join(' '),
          });
          changed = true;
        }
        if (changed) await identityChanged(this.deps.events, trx, 'identity.updated', identityId, identityId);
      });
    }
    return this.overview(identityId);
  }

  /**
   * PUT /account/picture (docs/api.md, "Your picture"): the upload decoded by its content and
   * re-encoded without metadata (identities/picture.ts) before anything is written, then kept in
   * place of any earlier picture under a new id (a new address), audited by field
   * (identity.profile.changed, `picture`) and told (identity.updated), in one transaction.
   */
  async setPicture(identityId: string, upload: Buffer) {
    const picture = await processPicture(upload);
    await this.deps.database.db.transaction().execute(async (trx) => {
      const kept = await replacePicture(trx, {
        identityId,
        id: randomUUID(),
        bytes: picture.bytes,
        contentType: picture.contentType,
        createdAt: this.deps.clock.now(),
      });
      if (!kept) throw new Problem('identity.session_required');
      await this.deps.audit.appendOwn(trx, 'identity.profile.changed', identityId, { fields: 'picture' });
      await identityChanged(this.deps.events, trx, 'identity.updated', identityId, identityId);
    });
    return this.overview(identityId);
  }

  /**
   * DELETE /account/picture: the picture goes (its address stops answering); none is not an error
   * and writes nothing (no audit record, no event).
   */
  async removePicture(identityId: string): Promise<void> {
    await this.deps.database.db.transaction().execute(async (trx) => {
      if (!(await deletePicture(trx, identityId))) return;
      await this.deps.audit.appendOwn(trx, 'identity.profile.changed', identityId, { fields: 'picture' });
      await identityChanged(this.deps.events, trx, 'identity.updated', identityId, identityId);
    });
  }

  /** GET /pictures/{pictureId}: the stored bytes, or 404 identity.picture_not_found. */
  async picture(pictureId: string) {
    const picture = await pictureById(this.deps.database.db, pictureId);
    if (!picture) throw new Problem('identity.picture_not_found');
    return picture;
  }

  /** The picture's absolute address, or null. */
  #picture(pictureId: string | null): string | null {
    return pictureId === null ? null : pictureUrl(this.deps.config.publicOrigin, pictureId);
  }

  /**
   * One JSON document: the identity, its identifiers unmasked, its methods,
   * second factors and passkeys without secrets, its sessions and sign-in history with the
   * addresses and user agents recorded, and the audit records about it. Audited as an export.
   */
  async export(identityId: string) {
    const now = this.deps.clock.now();
    return this.deps.database.db.transaction().execute(async (trx) => {
      const identity = await repo.identityFacts(trx, identityId);
      if (!identity) throw new Problem('identity.session_required');
      const [
        identifiers,
        secondFactors,
        passkeys,
        providers,
        recovery,
        sessions,
        attempts,
        audit,
        memberships,
        invitations,
      ] = await Promise.all([
        repo.identifierFacts(trx, identityId),
        repo.secondFactorFacts(trx, identityId),
        repo.passkeyFacts(trx, identityId),
        repo.providerLinkFacts(trx, identityId),
        liveStatus(trx, identityId),
        repo.sessionFacts(trx, identityId),
        repo.attemptFacts(trx, identityId),
        repo.auditFacts(trx, identityId),
        repo.membershipFacts(trx, identityId),
        invitationsSentBy(trx, identityId),
      ]);
      const document = {
        exportedAt: now.toISOString(),
        identity: {
          id: identity.id,
          createdAt: iso(identity.createdAt),
          locale: identity.locale,
          ...profileJson(identity),
          picture: this.#picture(identity.pictureId),
          password: { set: identity.hasPassword, changedAt: iso(identity.passwordChangedAt) },
          lock: { failedAttempts: identity.failedAttempts, lockedUntil: iso(identity.lockedUntil) },
        },
        identifiers: identifiers.map((i) => ({
          id: i.id,
          type: i.type,
          value: i.value,
          createdAt: iso(i.createdAt),
          verifiedAt: iso(i.verifiedAt),
          lastUsedAt: iso(i.lastUsedAt),
        })),
        providerLinks: providers.map((l) => ({
          id: l.id,
          provider: l.provider,
          subject: l.subject,
          createdAt: iso(l.createdAt),
          lastUsedAt: iso(l.lastUsedAt),
        })),
        passkeys: passkeys.map((k) => ({
          id: k.id,
          label: k.label,
          aaguid: k.aaguid,
          backedUp: k.backedUp,
          transports: k.transports,
          createdAt: iso(k.createdAt),
          lastUsedAt: iso(k.lastUsedAt),
        })),
        secondFactors: secondFactors.map((f) => ({
          id: f.id,
          label: f.label,
          algorithm: f.algorithm,
          digits: f.digits,
          period: f.period,
          createdAt: iso(f.createdAt),
          verifiedAt: iso(f.verifiedAt),
          lastUsedAt: iso(f.lastUsedAt),
        })),
        recoveryCodes: { remaining: recovery.remaining, issuedAt: iso(recovery.issuedAt) },
        organizations: memberships.map((m) => ({
          id: m.organizationId,
          name: m.name,
          slug: m.slug,
          role: m.role,
          joinedAt: iso(m.joinedAt),
          roleChangedAt: iso(m.roleChangedAt),
        })),
        // Never the token nor its hash; the invitee's address masked.
        invitationsSent: invitations.map((i) => ({
          id: i.id,
          organizationId: i.organizationId,
          identifierType: i.identifierType,
          identifier: maskIdentifier(i.identifierType, i.identifier),
          role: i.role,
          state:
            i.acceptedAt !== null
              ? ('accepted' as const)
              : i.revokedAt !== null
                ? ('revoked' as const)
                : new Date(i.expiresAt).getTime() <= now.getTime()
                  ? ('expired' as const)
                  : ('pending' as const),
          createdAt: iso(i.createdAt),
          expiresAt: iso(i.expiresAt),
          acceptedAt: iso(i.acceptedAt),
          revokedAt: iso(i.revokedAt),
        })),
        sessions: sessions.map((s) => ({
          id: s.id,
          method: s.method,
          createdAt: iso(s.createdAt),
          lastActiveAt: iso(s.renewedAt ?? s.createdAt),
          sessionExpiresAt: iso(s.expiresAt),
          endedAt: iso(s.revokedAt),
          endedBecause: s.revokedReason,
          ipAddress: s.ipAddress,
          userAgent: s.userAgent,
          device: describeDevice(s.userAgent),
        })),
        signInHistory: attempts.map((a) => ({
          id: a.id,
          occurredAt: iso(a.occurredAt),
          method: a.method,
          outcome: a.outcome,
          ipAddress: a.ipAddress,
          userAgent: a.userAgent,
          sessionId: a.sessionId,
          noticeSentAt: iso(a.noticeSentAt),
        })),
        auditRecords: audit.map((r) => ({
          seq: Number(r.seq),
          id: r.id,
          occurredAt: iso(r.occurredAt),
          name: r.name,
          actor: r.actor,
          target: r.target,
          outcome: r.outcome,
          details: typeof r.details === 'string' ? JSON.parse(r.details) : r.details,
        })),
      };
      // The export itself is on the record (and in the next export).
      await this.deps.audit.appendOwn(trx, 'identity.account.exported', identityId);
      return document;
    });
  }
}
