import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import { type Clock, iso } from '../../platform/clock.js';
import { opaqueToken, sha256Hex } from '../../platform/crypto/tokens.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { CursorCodec, CursorScope } from '../../platform/pagination/cursor.js';
import { type KeysetWindow, keysetPage, type PageQuery } from '../../platform/pagination/page.js';
import { Problem } from '../../platform/problem.js';
import { lockAnyOrganization, organizationDetail } from '../organizations/operators/repository.js';
import * as orgs from '../organizations/repository.js';
import { OrganizationRoles, OWNER_ROLE } from '../organizations/roles.js';
import * as repo from './repository.js';

/** The permission to create and revoke an organization's SCIM tokens (owners only by default). */
export const DIRECTORY_MANAGE = 'directory:manage';

/** A SCIM token's visible prefix: tells a leaked secret's kind to a scanner and to a person. */
const PREFIX = 'scim_';

export interface ScimTokenDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  cursors: CursorCodec;
  config: Pick<Config, 'organizations'>;
}

/** The organization a token stands for, and its name (the audit actor of its writes). */
export interface ScimCaller {
  organizationId: string;
  tokenId: string;
  tokenName: string;
}

export function tokenView(t: repo.TokenRow) {
  return {
    id: t.id,
    organizationId: t.organizationId,
    name: t.name,
    createdBy: t.createdBy,
    createdAt: t.createdAt.toISOString(),
    revokedAt: iso(t.revokedAt),
    lastUsedAt: iso(t.lastUsedAt),
  };
}

const notFound = () => new Problem('organization.not_found');
const unknownToken = () => new Problem('organization.scim_token_not_found');

/**
 * SCIM tokens (docs/scim.md, "Tokens"): an owner (`directory:manage`) or an operator creates one
 * for an organization; it is shown once and only its SHA-256 is kept; it is revoked by id; each
 * use records `lastUsedAt` (at most once a minute). Every write is audited.
 */
export class ScimTokenService {
  readonly #roles: OrganizationRoles;

  constructor(private readonly deps: ScimTokenDeps) {
    this.#roles = new OrganizationRoles(deps.config);
  }

  /** POST /organizations/{id}/scim-tokens (directory:manage) or the operators' route. */
  async create(actor: { identityId: string } | { operator: string }, organizationId: string, name: string) {
    const secret = `${PREFIX}${opaqueToken()}`;
    const id = randomUUID();
    const createdBy = 'operator' in actor ? actor.operator : actor.identityId;
    return this.deps.database.db.transaction().execute(async (trx) => {
      if ('operator' in actor) {
        if (!(await lockAnyOrganization(trx, organizationId)))
          throw new Problem('admin.organization_not_found');
      } else {
        await this.#mayManage(trx, organizationId, actor.identityId);
      }
      const now = this.deps.clock.now();
      await repo.insertToken(trx, { id, organizationId, name, hash: sha256Hex(secret), createdBy, now });
      await this.deps.audit.append(trx, {
        name: 'organization.scim_token.created',
        actor: createdBy,
        target: id,
        outcome: 'success',
        details: { organizationId, name },
      });
      const row = await repo.tokenById(trx, organizationId, id);
      // The secret is in this answer and nowhere else, ever.
      return { ...tokenView(row as repo.TokenRow), token: secret };
    });
  }

  async list(scope: CursorScope, query: PageQuery, identityId: string, organizationId: string) {
    const { db } = this.deps.database;
    this.#permitted((await orgs.memberView(db, organizationId, identityId))?.role);
    return this.#page(scope, query, organizationId);
  }

  async operatorList(scope: CursorScope, query: PageQuery, organizationId: string) {
    if (!(await organizationDetail(this.deps.database.db, organizationId)))
      throw new Problem('admin.organization_not_found');
    return this.#page(scope, query, organizationId);
  }

  /** DELETE .../scim-tokens/{tokenId}: the token stops working at once; a revoked one answers 404. */
  async revoke(
    actor: { identityId: string } | { operator: string },
    organizationId: string,
    tokenId: string,
  ) {
    const by = 'operator' in actor ? actor.operator : actor.identityId;
    await this.deps.database.db.transaction().execute(async (trx) => {
      if ('operator' in actor) {
        if (!(await lockAnyOrganization(trx, organizationId)))
          throw new Problem('admin.organization_not_found');
      } else {
        await this.#mayManage(trx, organizationId, actor.identityId);
      }
      if (!(await repo.revokeToken(trx, organizationId, tokenId, this.deps.clock.now())))
        throw unknownToken();
      await this.deps.audit.append(trx, {
        name: 'organization.scim_token.revoked',
        actor: by,
        target: tokenId,
        outcome: 'success',
        details: { organizationId },
      });
    });
  }

  /** GET /organizations/{id}/scim-group-roles (directory:manage): group displayName or externalId → role. */
  async groupRoles(identityId: string, organizationId: string) {
    const { db } = this.deps.database;
    this.#permitted((await orgs.memberView(db, organizationId, identityId))?.role);
    return repo.groupRoles(db, organizationId);
  }

  /**
   * PUT /organizations/{id}/scim-group-roles (directory:manage): the role a group's members get
   * (null removes the mapping). Never `owner`: a directory does not hand out ownership. It applies
   * to memberships as the directory next changes the group (docs/scim.md, "Groups and roles").
   */
  async setGroupRole(identityId: string, organizationId: string, groupKey: string, role: string | null) {
    if (role !== null && (role === OWNER_ROLE || !this.#roles.known(role)))
      throw new Problem('organization.role_unknown');
    await this.deps.database.db.transaction().execute(async (trx) => {
      await this.#mayManage(trx, organizationId, identityId);
      await repo.setGroupRole(trx, organizationId, groupKey, role);
      await this.deps.audit.append(trx, {
        name: 'organization.scim.group_role.set',
        actor: identityId,
        target: organizationId,
        outcome: 'success',
        details: { groupKey, role },
      });
    });
    return repo.groupRoles(this.deps.database.db, organizationId);
  }

  /** The caller of a SCIM request, by its bearer token; undefined for anything else. */
  async authenticate(secret: string | undefined): Promise<ScimCaller | undefined> {
    if (!secret?.startsWith(PREFIX) || secret.length > 200) return undefined;
    const { db } = this.deps.database;
    const row = await repo.liveToken(db, sha256Hex(secret));
    if (!row) return undefined;
    const now = this.deps.clock.now();
    if (row.lastUsedAt === null || now.getTime() - new Date(row.lastUsedAt).getTime() >= 60_000)
      await repo.touchToken(db, row.id, now);
    return { organizationId: row.organizationId, tokenId: row.id, tokenName: row.name };
  }

  async #page(scope: CursorScope, query: PageQuery, organizationId: string) {
    const fetch = (window: KeysetWindow) => repo.tokensPage(this.deps.database.db, organizationId, window);
    const { items, pageInfo } = await keysetPage(this.deps.cursors, scope, query, fetch, (r) => r.createdAt);
    return { items: items.map(tokenView), pageInfo };
  }

  async #mayManage(trx: Executor, organizationId: string, identityId: string): Promise<void> {
    if (!(await orgs.lockOrganization(trx, organizationId))) throw notFound();
    this.#permitted(await orgs.roleOf(trx, organizationId, identityId));
  }

  #permitted(role: string | undefined): void {
    if (role === undefined) throw notFound();
    if (!this.#roles.can(role, DIRECTORY_MANAGE)) throw new Problem('organization.permission_denied');
  }
}
