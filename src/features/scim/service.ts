import { randomUUID } from 'node:crypto';
import { scimPatch } from 'scim-patch';
import type { AuditLog } from '../../platform/audit/audit.js';
import type { Clock } from '../../platform/clock.js';
import type { Database, Executor } from '../../platform/db/database.js';
import { Problem } from '../../platform/problem.js';
import { AdminService, type AdminServiceDeps } from '../admin/service.js';
import type { EventLog } from '../events/log.js';
import { identityChanged } from '../identities/events.js';
import { normaliseEmail } from '../identities/identifier.js';
import { nameFromClaim } from '../identities/profile.js';
import {
  claimIdentifier,
  findIdentifier,
  insertIdentity,
  lockIdentity,
  removeIdentifier,
  setIdentityNames,
  verifiedIdentifiers,
} from '../identities/repository.js';
import { verifiedOwner } from '../organizations/domains/repository.js';
import { membershipChanged } from '../organizations/events.js';
import * as orgs from '../organizations/repository.js';
import { domainRequiresSso } from '../organizations/sso-requirement/repository.js';
import { emailDomain, SSO_REQUIRED_REASON } from '../organizations/sso-requirement/sweep.js';
import { endSessionsUnderSso } from '../sessions/sso-required.js';
import {
  invalidPath,
  invalidSyntax,
  invalidValue,
  mutability,
  noTarget,
  notFound,
  preconditionFailed,
  ScimError,
  type ScimType,
  uniqueness,
} from './errors.js';
import { userFilter } from './filter-repository.js';
import * as repo from './repository.js';
import {
  checkImmutableId,
  etagOf,
  LIST_SCHEMA,
  PATCH_SCHEMA,
  primaryEmail,
  project,
  readUser,
  type UserInput,
  userResource,
} from './resource.js';
import type { ScimCaller } from './tokens.js';

/** What provisioning uses: the operators' acts (disable, enable, erase) and the grant sweep. */
export interface ScimServiceDeps extends AdminServiceDeps {
  database: Database;
  clock: Clock;
  audit: AuditLog;
  events: EventLog;
  /** Ends the grants of ended sessions and sends their back-channel logouts (docs/oidc.md, "One revocation"). */
  oidc: { sweep(): Promise<unknown> };
}

/** SCIM's `count` bound (ServiceProviderConfig filter.maxResults). */
export const MAX_RESULTS = 200;
const MEMBER_ROLE = 'member';

export interface ListQuery {
  filter?: string;
  startIndex?: number;
  count?: number;
  attributes?: string;
  excludedAttributes?: string;
}

/** The audit and event actor of a token's writes: its name (docs/scim.md, "Audit"). */
/**
 * A list answer (RFC 7644 §3.4.2): reads the window `startIndex`/`count` name (1-based, at most
 * MAX_RESULTS) with `read`, and projects each resource as the query asks.
 */
export async function listAnswer<R extends Record<string, unknown>>(
  query: ListQuery,
  read: (offset: number, count: number) => Promise<{ resources: R[]; total: number }>,
) {
  const startIndex = Math.max(1, query.startIndex ?? 1);
  const count = Math.min(MAX_RESULTS, Math.max(0, query.count ?? MAX_RESULTS));
  const { resources, total } = await read(startIndex - 1, count);
  return {
    schemas: [LIST_SCHEMA],
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources.map((r) => project(r, query.attributes, query.excludedAttributes)),
  };
}

export const actorOf = (caller: ScimCaller) => `scim:${caller.tokenName}`;

const isUniqueViolation = (e: unknown) =>
  typeof e === 'object' && e !== null && (e as { code?: unknown }).code === '23505';

/** If-Match (RFC 7644 §3.14): `*`, or the version's ETag (weak or strong spelling). */
function versionOf(ifMatch: string | undefined): number | '*' | undefined {
  if (ifMatch === undefined) return undefined;
  const v = ifMatch.trim();
  if (v === '*') return '*';
  const m = /^(?:W\/)?"(\d{1,9})"$/.exec(v);
  // An ETag of no version of ours matches none: the precondition fails.
  return m ? Number(m[1]) : -1;
}

/** What a write did that must be finished after its commit (the one revocation path). */
interface After {
  disable?: string;
  enable?: string;
  erase?: string;
  /** Sessions "require SSO" ended in the write's transaction (their grants are swept after it). */
  ssoEnded?: number;
}

/**
 * SCIM Users of one organization (docs/scim.md, "Users"). The SCIM id is the identity id. Every
 * write locks the organization row first (as every membership change does), compares the version
 * with If-Match and sets it in one statement (repository `updateUser`), and is audited with the
 * token's name as actor. Suspension and deletion of an identity the organization manages go
 * through the operators' acts (admin/service.ts), then the grant sweep, before the answer.
 */
export class ScimUserService {
  readonly #admin: AdminService;

  constructor(private readonly deps: ScimServiceDeps) {
    this.#admin = new AdminService(deps);
  }

  async get(caller: ScimCaller, id: string, base: string, query: ListQuery = {}) {
    const { db } = this.deps.database;
    const user = await repo.userById(db, caller.organizationId, id);
    if (!user) throw notFound('User');
    const [resource] = await this.#resources(db, caller.organizationId, [user], base);
    return {
      resource: project(resource, query.attributes, query.excludedAttributes),
      etag: etagOf(user.version),
    };
  }

  async list(caller: ScimCaller, query: ListQuery, base: string) {
    const where = userFilter(query.filter);
    const { db } = this.deps.database;
    return listAnswer(query, async (offset, count) => {
      const { rows, total } = await repo.usersWindow(db, caller.organizationId, where, offset, count);
      return { resources: await this.#resources(db, caller.organizationId, rows, base), total };
    });
  }

  /**
   * POST /Users. An identity already holding the address, verified, becomes the member (no
   * duplicate); otherwise a new identity is created, its address verified only when the
   * organization verified its domain. A userName or externalId the organization already has: 409.
   */
  async create(caller: ScimCaller, body: unknown, base: string) {
    const input = readUser(body);
    const email = this.#email(input);
    const actor = actorOf(caller);
    const { organizationId } = caller;
    let created: { identityId: string; managed: boolean };
    try {
      created = await this.deps.database.db.transaction().execute(async (trx) => {
        if (!(await orgs.lockOrganization(trx, organizationId))) throw notFound('Resource');
        if (await repo.userByName(trx, organizationId, input.userName))
          throw uniqueness('userName is already in use in this organization.');
        const now = this.deps.clock.now();
        const domainVerified = await this.#inVerifiedDomain(trx, organizationId, email);
        const held = await findIdentifier(trx, { type: 'email', value: email });
        let identityId: string;
        let managed: boolean;
        if (held?.verifiedAt) {
          // The person already has an account with this verified address: it joins, unchanged.
          identityId = held.identityId;
          managed = false;
          const identity = await lockIdentity(trx, identityId);
          if (!identity || identity.erasedAt !== null)
            throw uniqueness('The address belongs to an erased account.');
        } else {
          if (held) {
            // A registration never confirmed: it yields only to an address the organization proved.
            if (!domainVerified) throw uniqueness('The address is held by an unconfirmed registration.');
            await removeIdentifier(trx, held.id, now, { pendingOnly: true });
          }
          identityId = randomUUID();
          managed = true;
          await insertIdentity(trx, { id: identityId, createdAt: now, names: namesOf(input) });
          const claimed = await claimIdentifier(trx, {
            id: randomUUID(),
            identityId,
            identifier: { type: 'email', value: email },
            now,
            verified: domainVerified,
          });
          if (!claimed) throw uniqueness('The address is already in use.');
          await identityChanged(this.deps.events, trx, 'identity.created', actor, identityId);
        }
        const role = (await orgs.roleOf(trx, organizationId, identityId)) ?? MEMBER_ROLE;
        const inserted = await repo.insertUser(trx, {
          organizationId,
          identityId,
          userName: input.userName,
          externalId: input.externalId,
          active: input.active,
          managed,
          role,
          attributes: input.attributes as Record<string, unknown>,
          now,
        });
        if (!inserted) throw uniqueness('The user is already provisioned in this organization.');
        if (input.active) await this.#join(trx, organizationId, identityId, role, actor, now);
        else await this.#leave(trx, organizationId, identityId, actor);
        await this.deps.audit.append(trx, {
          name: 'organization.scim.user.created',
          actor,
          target: identityId,
          outcome: 'success',
          details: { organizationId, adopted: !managed, addressVerified: managed ? domainVerified : true },
        });
        return { identityId, managed };
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw uniqueness('userName or externalId is already in use.');
      throw error;
    }
    if (!input.active && created.managed && (await this.#manages(organizationId, email)))
      await this.#finish(actor, { disable: created.identityId });
    return this.get(caller, created.identityId, base);
  }

  /** PUT /Users/{id}: the body replaces the resource (id and meta are read-only). */
  replace(caller: ScimCaller, id: string, body: unknown, ifMatch: string | undefined, base: string) {
    checkImmutableId(body, id);
    const input = readUser(body);
    return this.#update(caller, id, ifMatch, base, () => input);
  }

  /**
   * PATCH /Users/{id} (RFC 7644 §3.5.2) through scim-patch, on the resource as it is: operation
   * names in any case, path-less value objects (their dotted and URN keys too), `active` as a
   * string. The document it gives is then read as a PUT body is.
   */
  patch(caller: ScimCaller, id: string, body: unknown, ifMatch: string | undefined, base: string) {
    const operations = patchOperations(body);
    return this.#update(caller, id, ifMatch, base, (current) => {
      const { meta: _meta, groups: _groups, ...document } = current;
      let patched: Record<string, unknown>;
      try {
        patched = scimPatch(
          { ...document, meta: { created: new Date(0), lastModified: new Date(0) } } as never,
          operations as never,
          { mutateDocument: false },
        ) as unknown as Record<string, unknown>;
      } catch (error) {
        throw patchError(error);
      }
      checkImmutableId(patched, id);
      return readUser(patched);
    });
  }

  /** DELETE /Users/{id}: the membership ends; an identity the organization manages is erased. */
  async remove(caller: ScimCaller, id: string, ifMatch: string | undefined): Promise<void> {
    const { organizationId } = caller;
    const actor = actorOf(caller);
    const { db } = this.deps.database;
    const user = await repo.userById(db, organizationId, id);
    if (!user) throw notFound('User');
    const expected = versionOf(ifMatch);
    if (typeof expected === 'number' && expected !== user.version) throw preconditionFailed();
    const email = this.#emailOfStored(user);
    const erase = user.managed && email !== null && (await this.#manages(organizationId, email));
    if (erase) {
      // Erasure first: refused (the last owner of an organization others belong to), nothing changes.
      try {
        await this.#admin.erase(id, actor);
      } catch (error) {
        if (error instanceof Problem && error.code === 'organization.last_owner_erasure')
          throw mutability('The user is the last owner of an organization with other members.');
        if (!(error instanceof Problem && error.code === 'admin.identity_erased')) throw error;
      }
      await this.deps.oidc.sweep();
    }
    await db.transaction().execute(async (trx) => {
      if (!(await orgs.lockOrganization(trx, organizationId))) throw notFound('User');
      const current = await repo.userById(trx, organizationId, id);
      // The erasure above already forgot the user (with its membership): only the record is left.
      if (!current && !erase) throw notFound('User');
      if (current && typeof expected === 'number' && expected !== current.version) throw preconditionFailed();
      await this.#leave(trx, organizationId, id, actor);
      await repo.deleteUser(trx, organizationId, id);
      await this.deps.audit.append(trx, {
        name: 'organization.scim.user.deleted',
        actor,
        target: id,
        outcome: 'success',
        details: { organizationId, erased: erase },
      });
    });
  }

  async #update(
    caller: ScimCaller,
    id: string,
    ifMatch: string | undefined,
    base: string,
    next: (current: Record<string, unknown>) => UserInput,
  ) {
    const { organizationId } = caller;
    const actor = actorOf(caller);
    const expected = versionOf(ifMatch);
    let after: After = {};
    try {
      after = await this.deps.database.db.transaction().execute(async (trx) => {
        if (!(await orgs.lockOrganization(trx, organizationId))) throw notFound('User');
        const user = await repo.userById(trx, organizationId, id);
        if (!user) throw notFound('User');
        if (typeof expected === 'number' && expected !== user.version) throw preconditionFailed();
        const [current] = await this.#resources(trx, organizationId, [user], base);
        const input = next(current);
        const email = this.#email(input);
        const now = this.deps.clock.now();
        // The compare-and-set: a write that committed since the read above moved the version.
        const row = await repo.updateUser(trx, organizationId, id, user.version, {
          userName: input.userName,
          externalId: input.externalId,
          active: input.active,
          attributes: input.attributes as Record<string, unknown>,
          now,
        });
        if (!row) throw preconditionFailed();
        const managed = user.managed && (await this.#inVerifiedDomain(trx, organizationId, email));
        const ssoEnded = user.managed
          ? await this.#syncIdentity(trx, id, input, email, organizationId, actor, now)
          : 0;
        const result: After = ssoEnded > 0 ? { ssoEnded } : {};
        if (user.active && !input.active) {
          await this.#leave(trx, organizationId, id, actor);
          if (managed) result.disable = id;
        } else if (!user.active && input.active) {
          await this.#join(trx, organizationId, id, user.role, actor, now);
          if (managed) result.enable = id;
        }
        await this.deps.audit.append(trx, {
          name: 'organization.scim.user.updated',
          actor,
          target: id,
          outcome: 'success',
          details: {
            organizationId,
            active: input.active,
            activeChanged: user.active !== input.active,
            ...(ssoEnded > 0 ? { ssoRequired: true, sessionsEnded: ssoEnded } : {}),
          },
        });
        return result;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw uniqueness('userName or externalId is already in use.');
      throw error;
    }
    await this.#finish(actor, after);
    return this.get(caller, id, base);
  }

  /**
   * The one revocation path, after the SCIM write committed and before the answer: the operators'
   * disablement (every session ends, the epoch moves, audited and evented), then the grant sweep
   * (grants end, back-channel logouts are sent).
   */
  async #finish(actor: string, after: After): Promise<void> {
    if (after.ssoEnded) {
      this.deps.signals.sessionsRevoked(SSO_REQUIRED_REASON, after.ssoEnded);
      if (!after.disable) await this.deps.oidc.sweep();
    }
    if (after.disable) {
      await this.#admin.disable(after.disable, actor);
      await this.deps.oidc.sweep();
    }
    if (after.enable) {
      try {
        await this.#admin.enable(after.enable, actor);
      } catch (error) {
        if (!(error instanceof Problem && error.code === 'admin.identity_erased')) throw error;
      }
    }
  }

  /**
   * A managed identity follows the directory: its name, and its address when that changed. A new
   * address verified (in a domain the organization verified) while the organization requires SSO
   * ends the identity's sessions through the one revocation (docs/sso.md, "Require SSO"): the
   * organization's row lock, held since the write began, orders it with the requirement turned on
   * and with the domain's verification. Returns how many sessions ended.
   */
  async #syncIdentity(
    trx: Executor,
    identityId: string,
    input: UserInput,
    email: string,
    organizationId: string,
    actor: string,
    now: Date,
  ): Promise<number> {
    let changed = await setIdentityNames(trx, identityId, namesOf(input));
    const identity = await lockIdentity(trx, identityId);
    if (!identity || identity.erasedAt !== null) return 0;
    let ended = 0;
    const held = await findIdentifier(trx, { type: 'email', value: email });
    if (held?.identityId !== identityId) {
      if (held) throw uniqueness('The address is already in use.');
      const verified = await this.#inVerifiedDomain(trx, organizationId, email);
      const claimed = await claimIdentifier(trx, {
        id: randomUUID(),
        identityId,
        identifier: { type: 'email', value: email },
        now,
        verified,
      });
      if (!claimed) throw uniqueness('The address is already in use.');
      for (const old of await verifiedIdentifiers(trx, identityId)) {
        if (old.type === 'email' && old.value !== email)
          await removeIdentifier(trx, old.id, now, { identityId });
      }
      changed = true;
      if (verified && (await domainRequiresSso(trx, emailDomain(email))))
        ended = (await endSessionsUnderSso(trx, this.deps.events, actor, [identityId], now)).sessions;
    }
    if (changed) await identityChanged(this.deps.events, trx, 'identity.updated', actor, identityId);
    return ended;
  }

  /** The membership, when there is none (creation, reactivation), with its event. */
  async #join(
    trx: Executor,
    organizationId: string,
    identityId: string,
    role: string,
    actor: string,
    now: Date,
  ) {
    if ((await orgs.roleOf(trx, organizationId, identityId)) !== undefined) return;
    await orgs.insertMembership(trx, { organizationId, identityId, role, now });
    await membershipChanged(this.deps.events, trx, 'organization.membership.created', actor, {
      organizationId,
      identityId,
      role,
    });
  }

  /**
   * Suspension or deletion: the membership goes (sessions acting in the organization lose it in
   * the same statement); its role is kept on the SCIM user for a reactivation. The last owner of
   * an organization with other members is never removed this way (409 mutability).
   */
  async #leave(trx: Executor, organizationId: string, identityId: string, actor: string) {
    const role = await orgs.roleOf(trx, organizationId, identityId);
    if (role === undefined) return;
    if (role === 'owner' && (await orgs.ownerCount(trx, organizationId)) === 1)
      throw mutability('The user is the last owner of the organization.');
    await repo.setUserRole(trx, organizationId, [identityId], role);
    await orgs.deleteMembership(trx, organizationId, identityId);
    await membershipChanged(this.deps.events, trx, 'organization.membership.deleted', actor, {
      organizationId,
      identityId,
      role,
    });
  }

  #email(input: UserInput): string {
    const email = normaliseEmail(primaryEmail(input));
    if (email === null) throw invalidValue('userName or emails must hold a usable email address.');
    return email;
  }

  #emailOfStored(user: repo.ScimUserRow): string | null {
    try {
      return this.#email({ ...user, attributes: user.attributes as UserInput['attributes'] });
    } catch {
      return null;
    }
  }

  async #inVerifiedDomain(trx: Executor, organizationId: string, email: string): Promise<boolean> {
    const domain = email.slice(email.lastIndexOf('@') + 1);
    return (await verifiedOwner(trx, domain)) === organizationId;
  }

  /** With `managed` (its provisioning created the identity): the address is in a domain it verified. */
  #manages(organizationId: string, email: string) {
    return this.#inVerifiedDomain(this.deps.database.db, organizationId, email);
  }

  async #resources(trx: Executor, organizationId: string, users: repo.ScimUserRow[], base: string) {
    const groups = await repo.groupsOfUsers(
      trx,
      organizationId,
      users.map((u) => u.identityId),
    );
    return users.map((u) =>
      userResource(
        {
          ...u,
          attributes: u.attributes as UserInput['attributes'],
          groups: groups.filter((g) => g.identityId === u.identityId),
        },
        base,
      ),
    );
  }
}

/** The identity's name columns from a SCIM user (names a directory sends are cleaned as claims are). */
function namesOf(input: UserInput) {
  return {
    givenName: nameFromClaim(input.attributes.name?.givenName),
    familyName: nameFromClaim(input.attributes.name?.familyName),
    displayName: nameFromClaim(input.attributes.displayName),
  };
}

const OPS = new Set(['add', 'remove', 'replace']);

/** A PatchOp body's operations, op names lower-cased (Entra ID sends "Replace"), checked for shape. */
export function patchOperations(body: unknown): { op: string; path?: string; value?: unknown }[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalidSyntax('The body must be a JSON object.');
  const b = body as Record<string, unknown>;
  const schemas = b.schemas;
  if (!Array.isArray(schemas) || !schemas.includes(PATCH_SCHEMA))
    throw invalidSyntax(`schemas must hold ${PATCH_SCHEMA}.`);
  const ops = b.Operations ?? b.operations;
  if (!Array.isArray(ops) || ops.length === 0) throw invalidSyntax('Operations must be a non-empty array.');
  if (ops.length > 1000) throw invalidValue('Operations holds more than 1000 operations.');
  return ops.map((o, i) => {
    if (typeof o !== 'object' || o === null || Array.isArray(o))
      throw invalidSyntax(`Operations[${i}] must be an object.`);
    const { op, path, value } = o as Record<string, unknown>;
    if (typeof op !== 'string' || !OPS.has(op.toLowerCase()))
      throw invalidSyntax(`Operations[${i}].op must be add, remove or replace.`);
    if (path !== undefined && (typeof path !== 'string' || path.length > 1024))
      throw invalidPath(`Operations[${i}].path must be a string.`);
    const lower = op.toLowerCase();
    if (lower === 'remove' && (path === undefined || path === ''))
      throw noTarget(`Operations[${i}] names no path.`);
    if (lower !== 'remove' && value === undefined) throw invalidValue(`Operations[${i}] has no value.`);
    if (
      lower !== 'remove' &&
      path === undefined &&
      (typeof value !== 'object' || value === null || Array.isArray(value))
    )
      throw invalidValue(`Operations[${i}] without a path needs an object value.`);
    return {
      op: lower,
      ...(path !== undefined ? { path: path as string } : {}),
      ...(value !== undefined ? { value } : {}),
    };
  });
}

/** scim-patch's refusals as SCIM errors; anything else it throws on a strange document is invalidValue. */
export function patchError(error: unknown): ScimError {
  if (error instanceof ScimError) return error;
  const e = error as { scimType?: unknown; scimCode?: unknown; constructor?: { name?: string } };
  const type = (typeof e.scimType === 'string' ? e.scimType : e.scimCode) as ScimType | undefined;
  const kind = e.constructor?.name ?? '';
  if (type === 'noTarget') return noTarget('The operation matched no value.');
  // InvalidScimPatchOp: the path names nothing this resource can hold.
  if (type === 'invalidPath' || kind === 'InvalidScimPatchOp' || kind === 'FilterArrayTargetNotFound')
    return invalidPath('The operation path is not valid.');
  if (type === 'invalidSyntax') return invalidSyntax('The operation is not valid.');
  return invalidValue('The operation cannot be applied.');
}
