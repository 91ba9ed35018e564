import type { Config } from '../../config.js';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Database, Executor } from '../../platform/db/database.js';
import type { OperatorIdentity } from '../../platform/http/admin-auth.js';
import { Problem } from '../../platform/problem.js';
import { firstVerifiedIdentifiersOf, lockIdentity, verifiedIdentifiers } from '../identities/repository.js';
import type { OperatorRole } from './permissions.js';
import { deleteOperatorRole, findOperatorRole, operatorRoles, upsertOperatorRole } from './repository.js';

/** The ways into a session that count as a second factor for an operator (sessions.method). */
const SECOND_FACTOR_METHODS: ReadonlySet<string> = new Set(['passkey', 'second_factor']);

/** At most this many granted roles are listed: operators are the few people who run the service. */
const LIST_CAP = 500;

/** A console access token's facts (OidcService.consoleToken). */
export interface ConsoleToken {
  identityId: string;
  method: string;
  signedInAt: Date;
}

export interface OperatorServiceDeps {
  config: Pick<Config, 'admin'>;
  database: Database;
  clock: Clock;
  audit: AuditLog;
  /** The live console access token of this value, with how its session was opened. */
  consoleToken(value: string): Promise<ConsoleToken | undefined>;
}

/** An operator as GET /admin/v1/operators lists it. */
export interface OperatorView {
  identityId: string | null;
  /** Only for a CONSOLE_OPERATORS entry naming an address. */
  email: string | null;
  /** The identity's first verified identifier, unmasked (the list names each person); else null. */
  identifier?: { type: 'email' | 'phone'; value: string } | null;
  role: OperatorRole;
  source: 'setting' | 'api';
  grantedBy: string | null;
  grantedAt: string | null;
}

/**
 * Operators who sign in with their identity (docs/admin.md, "Operators"; docs/decisions.md,
 * "Operators with a role"): their role comes from CONSOLE_OPERATORS first, then from the roles the
 * admin API granted (operator_roles). A console token counts only from a session opened with a
 * second factor (a passkey, or a password and an authenticator code).
 */
export class OperatorService {
  constructor(private readonly deps: OperatorServiceDeps) {}

  /** The operator a console access token stands for now; undefined for anything else. */
  async authenticate(token: string): Promise<OperatorIdentity | undefined> {
    const found = await this.deps.consoleToken(token);
    if (!found || !SECOND_FACTOR_METHODS.has(found.method)) return undefined;
    const role = await this.roleOf(this.deps.database.db, found.identityId);
    return role ? { identityId: found.identityId, role, signedInAt: found.signedInAt } : undefined;
  }

  /** The role CONSOLE_OPERATORS gives an identity (by id, or by one of its verified addresses). */
  async #configuredRole(db: Executor, identityId: string): Promise<OperatorRole | undefined> {
    const configured = this.deps.config.admin.console.operators;
    const byId = configured.find((o) => o.identityId === identityId);
    if (byId) return byId.role;
    if (!configured.some((o) => o.email)) return undefined;
    const addresses = (await verifiedIdentifiers(db, identityId))
      .filter((i) => i.type === 'email')
      .map((i) => i.value.toLowerCase());
    return configured.find((o) => o.email && addresses.includes(o.email))?.role;
  }

  async roleOf(db: Executor, identityId: string): Promise<OperatorRole | undefined> {
    return (await this.#configuredRole(db, identityId)) ?? (await findOperatorRole(db, identityId))?.role;
  }

  /**
   * The configured operators first (as configured), then the granted roles, newest first, each
   * named by its identity's first verified identifier. Showing those is a read of personal data:
   * one `admin.identity.read` record per identity named (`{"view":"operators"}`), written before
   * the list is answered, as the identity search does (docs/admin.md, "Reads are audited too").
   */
  async list(actor: string): Promise<OperatorView[]> {
    const { db } = this.deps.database;
    const settings = this.deps.config.admin.console.operators;
    const firsts = await firstVerifiedIdentifiersOf(
      db,
      settings.flatMap((o) => (o.identityId ? [o.identityId] : [])),
    );
    const configured: OperatorView[] = settings.map((o) => ({
      identityId: o.identityId ?? null,
      email: o.email ?? null,
      identifier: (o.identityId && firsts.get(o.identityId)) || null,
      role: o.role,
      source: 'setting',
      grantedBy: null,
      grantedAt: null,
    }));
    const granted = await operatorRoles(db, LIST_CAP);
    const views: OperatorView[] = [
      ...configured,
      ...granted.map((r) => ({
        identityId: r.identityId,
        email: null,
        identifier: r.identifier,
        role: r.role,
        source: 'api' as const,
        grantedBy: r.grantedBy,
        grantedAt: r.grantedAt.toISOString(),
      })),
    ];
    const named = views.filter((v) => v.identityId !== null && v.identifier);
    if (named.length > 0)
      await db.transaction().execute(async (trx) => {
        for (const v of named)
          await this.deps.audit.append(trx, {
            name: 'admin.identity.read',
            actor,
            target: v.identityId,
            outcome: 'success',
            details: { view: 'operators' },
          });
      });
    return views;
  }

  /**
   * Grants `role` to an identity, or changes it: never the caller's own (an operator cannot raise,
   * or lower, themselves), never one CONSOLE_OPERATORS names (configuration decides there). The
   * identity row is locked first, so an erasure and a grant serialise: a role is never granted to
   * an erased identity. Audited in the same transaction.
   */
  async grant(identityId: string, role: OperatorRole, actor: string, self?: string): Promise<OperatorView> {
    if (self === identityId) throw new Problem('admin.operator_own_role');
    const now = this.deps.clock.now();
    await this.deps.database.db.transaction().execute(async (trx) => {
      const identity = await lockIdentity(trx, identityId);
      if (!identity) throw new Problem('admin.identity_not_found');
      if (identity.erasedAt !== null) throw new Problem('admin.identity_erased');
      if (await this.#configuredRole(trx, identityId)) throw new Problem('admin.operator_configured');
      const before = await findOperatorRole(trx, identityId);
      await upsertOperatorRole(trx, { identityId, role, grantedBy: actor, grantedAt: now });
      await this.deps.audit.append(trx, {
        name: 'operator.role_granted',
        actor,
        target: identityId,
        outcome: 'success',
        details: { role, previous: before?.role ?? null },
      });
    });
    return {
      identityId,
      email: null,
      role,
      source: 'api',
      grantedBy: actor,
      grantedAt: now.toISOString(),
    };
  }

  /** Takes a granted role away (not the caller's own, not a configured one); audited. */
  async revoke(identityId: string, actor: string, self?: string): Promise<void> {
    if (self === identityId) throw new Problem('admin.operator_own_role');
    await this.deps.database.db.transaction().execute(async (trx) => {
      if (await this.#configuredRole(trx, identityId)) throw new Problem('admin.operator_configured');
      const removed = await deleteOperatorRole(trx, identityId);
      if (!removed) throw new Problem('admin.operator_not_found');
      await this.deps.audit.append(trx, {
        name: 'operator.role_revoked',
        actor,
        target: identityId,
        outcome: 'success',
        details: { role: removed },
      });
    });
  }
}
