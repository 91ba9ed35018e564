import { randomUUID } from 'node:crypto';
import type { Config } from '../../../config.js';
import type { AuditLog } from '../../../platform/audit/audit.js';
import type { Clock } from '../../../platform/clock.js';
import { opaqueToken, safeEqual } from '../../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../../platform/db/database.js';
import type { Signals } from '../../../platform/metrics/signals.js';
import type { CursorCodec, CursorScope } from '../../../platform/pagination/cursor.js';
import { type KeysetWindow, keysetPage, type PageQuery } from '../../../platform/pagination/page.js';
import { Problem } from '../../../platform/problem.js';
import type { EventLog } from '../../events/log.js';
import { domainChanged, domainView } from '../events.js';
import { lockAnyOrganization, organizationDetail } from '../operators/repository.js';
import * as orgs from '../repository.js';
import { OrganizationRoles } from '../roles.js';
import { lockSsoDomains } from '../sso-requirement/repository.js';
import { SSO_REQUIRED_REASON, type SsoDomainSweep } from '../sso-requirement/sweep.js';
import { lookupTxt, normaliseDomain, type TxtAnswer, txtRecord } from './dns.js';
import * as repo from './repository.js';

/** What verified domains use. */
export interface DomainServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  cursors: CursorCodec;
  config: Pick<Config, 'organizations'>;
  events: EventLog;
  signals: Signals;
  /** Ends the sessions of the domain's people when the organization requires SSO (src/context.ts). */
  ssoDomainSweep: SsoDomainSweep;
}

/** The one TXT lookup a verification makes (a test may replace it; the default asks DNS_RESOLVERS). */
export type TxtLookup = (name: string) => Promise<TxtAnswer>;

export const DOMAINS_MANAGE = 'domains:manage';

const notFound = () => new Problem('organization.not_found');
const denied = () => new Problem('organization.permission_denied');
const unknownDomain = () => new Problem('organization.domain_not_found');
const taken = () => new Problem('organization.domain_taken');

/**
 * Verified domains (docs/organizations.md, "Domains"). A member with `domains:manage` claims a
 * domain, gets the TXT record to publish, and asks for a verification: the record is looked up
 * before any lock is taken (a slow DNS never holds the organization row), compared in constant
 * time, and the claim marked verified under the organization's row lock. At most one organization
 * verifies a domain: the partial unique index of migration 0031 refuses the second, so two
 * verifications at once give one 200 and one 409 organization.domain_taken. An operator verifies
 * without DNS (`verified_by` `operator`). Every write is audited and emits its event. A domain
 * verified while the organization requires SSO ends, in the same transaction, the sessions of every
 * identity holding a verified address in it (docs/sso.md, "Require SSO").
 */
export class DomainService {
  readonly #roles: OrganizationRoles;
  readonly #lookup: TxtLookup;

  constructor(
    private readonly deps: DomainServiceDeps,
    lookup?: TxtLookup,
  ) {
    this.#roles = new OrganizationRoles(deps.config);
    const { dnsResolvers, dnsTimeoutMs } = deps.config.organizations;
    this.#lookup = lookup ?? ((name) => lookupTxt(name, { servers: dnsResolvers, timeoutMs: dnsTimeoutMs }));
  }

  /** POST /organizations/{id}/domains (`domains:manage`): a new, unverified claim and its record. */
  async add(identityId: string, organizationId: string, input: string) {
    const domain = normaliseDomain(input);
    if (domain === null) throw new Problem('organization.domain_invalid');
    const id = randomUUID();
    const token = opaqueToken();
    return this.deps.database.db.transaction().execute(async (trx) => {
      await this.#mayManage(trx, organizationId, identityId);
      const now = this.deps.clock.now();
      if (!(await repo.insertDomain(trx, { id, organizationId, domain, token, now })))
        throw new Problem('organization.domain_exists');
      const row = await this.#row(trx, organizationId, id);
      await domainChanged(this.deps.events, trx, 'organization.domain.added', identityId, row);
      await this.#audit(trx, 'organization.domain.added', identityId, id, { organizationId, domain });
      return domainView(row);
    });
  }

  /** GET /organizations/{id}/domains (`domains:manage`), newest first. */
  async list(scope: CursorScope, query: PageQuery, identityId: string, organizationId: string) {
    const { db } = this.deps.database;
    this.#permitted((await orgs.memberView(db, organizationId, identityId))?.role);
    return this.#page(scope, query, organizationId);
  }

  /**
   * POST /organizations/{id}/domains/{domainId}/verifications (`domains:manage`). An already
   * verified claim answers as it is. A domain another organization verified answers 409 before any
   * lookup. No record with the expected value: 422 organization.domain_unverified naming the record,
   * the claim unverified (only its `lastCheckedAt` moves). No usable answer from the DNS (timeout,
   * server failure): 503 organization.domain_check_unavailable, nothing written.
   */
  async verify(identityId: string, organizationId: string, domainId: string) {
    const { db } = this.deps.database;
    this.#permitted((await orgs.memberView(db, organizationId, identityId))?.role);
    const claim = await repo.domainById(db, organizationId, domainId);
    if (!claim) throw unknownDomain();
    if (claim.verifiedAt !== null) return domainView(claim);
    const owner = await repo.verifiedOwner(db, claim.domain);
    if (owner !== undefined && owner !== organizationId) throw taken();

    const expected = txtRecord(claim.domain, claim.token);
    const answer = await this.#lookup(expected.name);
    if (answer.kind === 'unavailable') throw new Problem('organization.domain_check_unavailable');
    const found = answer.kind === 'records' && answer.values.some((v) => safeEqual(v.trim(), expected.value));
    if (!found) {
      await db.transaction().execute(async (trx) => {
        await repo.markChecked(trx, claim.id, this.deps.clock.now());
        await this.deps.audit.append(trx, {
          name: 'organization.domain.verification_failed',
          actor: identityId,
          target: claim.id,
          outcome: 'failure',
          details: {
            organizationId,
            domain: claim.domain,
            records: answer.kind === 'records' ? answer.values.length : 0,
          },
        });
      });
      throw new Problem('organization.domain_unverified', { txtRecord: expected });
    }
    return this.#markVerified(organizationId, domainId, 'dns', identityId, async (trx) => {
      this.#permitted(await orgs.roleOf(trx, organizationId, identityId));
    });
  }

  /** DELETE /organizations/{id}/domains/{domainId} (`domains:manage`): the claim, verified or not. */
  async remove(identityId: string, organizationId: string, domainId: string): Promise<void> {
    await this.deps.database.db.transaction().execute(async (trx) => {
      await this.#mayManage(trx, organizationId, identityId);
      const row = await repo.domainById(trx, organizationId, domainId);
      if (!row || !(await repo.deleteDomain(trx, organizationId, domainId))) throw unknownDomain();
      await domainChanged(this.deps.events, trx, 'organization.domain.removed', identityId, row);
      await this.#audit(trx, 'organization.domain.removed', identityId, domainId, {
        organizationId,
        domain: row.domain,
        wasVerified: row.verifiedAt !== null,
      });
    });
  }

  /** GET /admin/v1/organizations/{id}/domains: every claim, disabled organizations included. */
  async operatorList(scope: CursorScope, query: PageQuery, organizationId: string) {
    if (!(await organizationDetail(this.deps.database.db, organizationId)))
      throw new Problem('admin.organization_not_found');
    return this.#page(scope, query, organizationId);
  }

  /** POST /admin/v1/organizations/{id}/domains/{domainId}/verifications: verified without DNS. */
  async operatorVerify(operator: string, organizationId: string, domainId: string) {
    return this.#markVerified(organizationId, domainId, 'operator', operator, async () => {});
  }

  async #page(scope: CursorScope, query: PageQuery, organizationId: string) {
    const fetch = (window: KeysetWindow) => repo.domainsPage(this.deps.database.db, organizationId, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return { items: items.map(domainView), pageInfo };
  }

  /**
   * Marks the claim verified under the organization's row lock (`check` re-reads the caller's right
   * after the lock), with its event and audit record. A unique violation (another organization's
   * verification of the domain committed first) rolls everything back and answers 409.
   */
  async #markVerified(
    organizationId: string,
    domainId: string,
    by: repo.VerifiedBy,
    actor: string,
    check: (trx: Executor) => Promise<void>,
  ) {
    let ended = 0;
    try {
      const view = await this.deps.database.db.transaction().execute(async (trx) => {
        const org = await lockAnyOrganization(trx, organizationId);
        if (!org) throw by === 'operator' ? new Problem('admin.organization_not_found') : notFound();
        if (by === 'dns' && org.disabledAt !== null) throw notFound();
        await check(trx);
        const before = await repo.domainById(trx, organizationId, domainId);
        if (!before) throw unknownDomain();
        if (before.verifiedAt !== null) return domainView(before);
        const owner = await repo.verifiedOwner(trx, before.domain);
        if (owner !== undefined) throw taken();
        // The domain's lock before the read of who holds an address in it: an address of the
        // domain confirmed at this moment is read here, or sees the domain verified and sweeps
        // its own identity (../sso-requirement/repository.ts, lockSsoDomains).
        await lockSsoDomains(trx, [before.domain]);
        const now = this.deps.clock.now();
        await repo.markVerified(trx, { organizationId, domainId, by, now });
        const row = await this.#row(trx, organizationId, domainId);
        // "Require SSO" in force for the organization (read under its row lock): the domain's
        // people are swept now, as turning the requirement on would have.
        const swept = await this.deps.ssoDomainSweep(trx, { domain: row.domain, actor, now });
        ended = swept.sessions;
        await domainChanged(this.deps.events, trx, 'organization.domain.verified', actor, row);
        await this.#audit(trx, 'organization.domain.verified', actor, domainId, {
          organizationId,
          domain: row.domain,
          by,
          identitiesSignedOut: swept.identities,
          sessionsEnded: swept.sessions,
        });
        return domainView(row);
      });
      if (ended > 0) this.deps.signals.sessionsRevoked(SSO_REQUIRED_REASON, ended);
      return view;
    } catch (error) {
      if (repo.isUniqueViolation(error)) throw taken();
      throw error;
    }
  }

  async #mayManage(trx: Executor, organizationId: string, identityId: string): Promise<void> {
    const organization = await orgs.lockOrganization(trx, organizationId);
    if (!organization) throw notFound();
    this.#permitted(await orgs.roleOf(trx, organizationId, identityId));
  }

  /** A caller who is not a member: 404 (nothing is told); a role without `domains:manage`: 403. */
  #permitted(role: string | undefined): void {
    if (role === undefined) throw notFound();
    if (!this.#roles.can(role, DOMAINS_MANAGE)) throw denied();
  }

  async #row(trx: Executor, organizationId: string, domainId: string): Promise<repo.DomainRow> {
    const row = await repo.domainById(trx, organizationId, domainId);
    if (!row) throw unknownDomain();
    return row;
  }

  #audit(
    trx: Executor,
    name: string,
    actor: string,
    target: string,
    details: Record<string, string | number | boolean | null>,
  ) {
    return this.deps.audit.append(trx, { name, actor, target, outcome: 'success', details });
  }
}
