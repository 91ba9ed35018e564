import { randomUUID } from 'node:crypto';
import { scimPatch } from 'scim-patch';
import { type Filter, parse } from 'scim2-parse-filter';
import type { Executor } from '../../platform/db/database.js';
import { membershipChanged } from '../organizations/events.js';
import * as orgs from '../organizations/repository.js';
import { invalidPath, noTarget, notFound, preconditionFailed, uniqueness } from './errors.js';
import { groupFilter } from './filter-repository.js';
import * as repo from './repository.js';
import { checkImmutableId, etagOf, groupResource, memberIds, project, readGroup } from './resource.js';
import {
  actorOf,
  type ListQuery,
  listAnswer,
  patchError,
  patchOperations,
  type ScimServiceDeps,
} from './service.js';
import type { ScimCaller } from './tokens.js';

const MEMBER_ROLE = 'member';
const OWNER_ROLE = 'owner';

const isUniqueViolation = (e: unknown) =>
  typeof e === 'object' && e !== null && (e as { code?: unknown }).code === '23505';

function versionOf(ifMatch: string | undefined): number | undefined {
  if (ifMatch === undefined || ifMatch.trim() === '*') return undefined;
  const m = /^(?:W\/)?"(\d{1,9})"$/.exec(ifMatch.trim());
  return m ? Number(m[1]) : -1;
}

/** The member ids a `members[value eq "…"]` path names (RFC 7644 §3.5.2.2), parsed by scim2-parse-filter. */
function memberPath(path: string): string[] | 'all' {
  const m = /^members(?:\[(.*)\])?$/is.exec(path.trim());
  if (!m) throw invalidPath('The path names no attribute of a group.');
  if (m[1] === undefined) return 'all';
  let f: Filter;
  try {
    f = parse(m[1]);
  } catch {
    throw invalidPath('The members filter is not valid.');
  }
  const ids: string[] = [];
  const walk = (x: Filter): void => {
    if (x.op === 'or') {
      for (const y of x.filters) walk(y);
      return;
    }
    if (x.op === 'eq' && x.attrPath.toLowerCase() === 'value' && typeof x.compValue === 'string') {
      ids.push(...memberIds([x.compValue], 'members filter'));
      return;
    }
    throw invalidPath('A members filter compares value with eq.');
  };
  walk(f);
  return ids;
}

interface MemberChange {
  add: string[];
  remove: string[] | 'all';
  names?: { displayName: string; externalId: string | null };
}

/**
 * SCIM Groups of one organization (docs/scim.md, "Groups"). Members are SCIM users of the
 * organization; adding or removing them is one statement however many (a directory pushes groups of
 * thousands). A group the organization maps to a role (its displayName or externalId, see
 * `scim_group_roles`) gives that role to its members; leaving every mapped group gives `member`
 * back. An owner's role is never changed by a group.
 */
export class ScimGroupService {
  constructor(private readonly deps: ScimServiceDeps) {}

  async get(caller: ScimCaller, id: string, base: string, query: ListQuery = {}) {
    const { db } = this.deps.database;
    const group = await repo.groupById(db, caller.organizationId, id);
    if (!group) throw notFound('Group');
    const [resource] = await this.#resources(db, caller.organizationId, [group], base);
    return {
      resource: project(resource, query.attributes, query.excludedAttributes),
      etag: etagOf(group.version),
    };
  }

  async list(caller: ScimCaller, query: ListQuery, base: string) {
    const where = groupFilter(query.filter);
    const { db } = this.deps.database;
    return listAnswer(query, async (offset, count) => {
      const { rows, total } = await repo.groupsWindow(db, caller.organizationId, where, offset, count);
      return { resources: await this.#resources(db, caller.organizationId, rows, base), total };
    });
  }

  async create(caller: ScimCaller, body: unknown, base: string) {
    const input = readGroup(body);
    const { organizationId } = caller;
    const actor = actorOf(caller);
    const id = randomUUID();
    await this.#transaction(async (trx) => {
      if (!(await orgs.lockOrganization(trx, organizationId))) throw notFound('Group');
      const now = this.deps.clock.now();
      if (
        !(await repo.insertGroup(trx, {
          id,
          organizationId,
          displayName: input.displayName,
          externalId: input.externalId,
          now,
        }))
      )
        throw uniqueness('displayName is already in use in this organization.');
      const members = await this.#members(trx, organizationId, input.members ?? []);
      await repo.addGroupMembers(trx, organizationId, id, members);
      await this.#mapRoles(trx, organizationId, members, actor, now);
      await this.#audit(trx, 'organization.scim.group.created', actor, id, organizationId, members.length, 0);
    });
    return this.get(caller, id, base);
  }

  replace(caller: ScimCaller, id: string, body: unknown, ifMatch: string | undefined, base: string) {
    checkImmutableId(body, id);
    const input = readGroup(body);
    return this.#change(caller, id, ifMatch, base, async () => ({
      add: input.members ?? [],
      remove: 'all',
      names: { displayName: input.displayName, externalId: input.externalId },
    }));
  }

  /**
   * PATCH: `members` added, removed (by path filter, or Entra ID's `remove` with a value list) or
   * replaced in batches; `displayName` and `externalId` through scim-patch, with or without a path.
   */
  patch(caller: ScimCaller, id: string, body: unknown, ifMatch: string | undefined, base: string) {
    const operations = patchOperations(body);
    return this.#change(caller, id, ifMatch, base, async (group) => {
      const add = new Set<string>();
      let remove: Set<string> | 'all' = new Set<string>();
      let names = { displayName: group.displayName, externalId: group.externalId } as Record<string, unknown>;
      let named = false;
      for (const op of operations) {
        const onMembers = op.path !== undefined && /^members(\[|$)/i.test(op.path.trim());
        const value = op.value as Record<string, unknown> | undefined;
        // A path-less value may carry members beside the names (Okta's group push does).
        const pathlessMembers =
          op.path === undefined && value && typeof value === 'object'
            ? Object.entries(value).find(([k]) => k.toLowerCase() === 'members')?.[1]
            : undefined;
        if (onMembers || pathlessMembers !== undefined) {
          const target = onMembers ? memberPath(op.path as string) : 'all';
          const listed = onMembers ? op.value : pathlessMembers;
          if (op.op === 'remove') {
            const ids = target === 'all' ? (listed === undefined ? 'all' : memberIds(listed)) : target;
            if (ids === 'all') {
              remove = 'all';
              add.clear();
            } else {
              for (const i of ids) {
                add.delete(i);
                if (remove !== 'all') remove.add(i);
              }
            }
          } else {
            if (target !== 'all') throw invalidPath('Members are added by the path members.');
            const ids = memberIds(listed);
            if (op.op === 'replace') {
              remove = 'all';
              add.clear();
            }
            for (const i of ids) {
              add.add(i);
              if (remove !== 'all') remove.delete(i);
            }
          }
          if (!onMembers) {
            const { members: _m, Members: _M, ...rest } = value as Record<string, unknown>;
            if (Object.keys(rest).length === 0) continue;
            names = this.#patchNames(names, { op: op.op, value: rest });
            named = true;
          }
          continue;
        }
        names = this.#patchNames(names, op);
        named = true;
      }
      const input = readGroup({ ...names, members: undefined });
      return {
        add: [...add],
        remove: remove === 'all' ? 'all' : [...remove],
        ...(named ? { names: { displayName: input.displayName, externalId: input.externalId } } : {}),
      };
    });
  }

  async remove(caller: ScimCaller, id: string, ifMatch: string | undefined): Promise<void> {
    const { organizationId } = caller;
    const actor = actorOf(caller);
    const expected = versionOf(ifMatch);
    await this.#transaction(async (trx) => {
      if (!(await orgs.lockOrganization(trx, organizationId))) throw notFound('Group');
      const group = await repo.groupById(trx, organizationId, id);
      if (!group) throw notFound('Group');
      if (expected !== undefined && expected !== group.version) throw preconditionFailed();
      const members = (await repo.groupMembers(trx, organizationId, [id])).map((m) => m.identityId);
      await repo.deleteGroup(trx, organizationId, id);
      await this.#mapRoles(trx, organizationId, members, actor, this.deps.clock.now());
      await this.#audit(trx, 'organization.scim.group.deleted', actor, id, organizationId, 0, members.length);
    });
  }

  #patchNames(names: Record<string, unknown>, op: { op: string; path?: string; value?: unknown }) {
    try {
      const doc = { schemas: [], ...names, meta: { created: new Date(0), lastModified: new Date(0) } };
      const {
        meta: _meta,
        schemas: _s,
        ...out
      } = scimPatch(doc as never, [op] as never, {
        mutateDocument: false,
      }) as unknown as Record<string, unknown>;
      return out;
    } catch (error) {
      throw patchError(error);
    }
  }

  async #change(
    caller: ScimCaller,
    id: string,
    ifMatch: string | undefined,
    base: string,
    plan: (group: repo.GroupRow) => Promise<MemberChange>,
  ) {
    const { organizationId } = caller;
    const actor = actorOf(caller);
    const expected = versionOf(ifMatch);
    await this.#transaction(async (trx) => {
      if (!(await orgs.lockOrganization(trx, organizationId))) throw notFound('Group');
      const group = await repo.groupById(trx, organizationId, id);
      if (!group) throw notFound('Group');
      if (expected !== undefined && expected !== group.version) throw preconditionFailed();
      const change = await plan(group);
      const now = this.deps.clock.now();
      const names = change.names ?? { displayName: group.displayName, externalId: group.externalId };
      // The compare-and-set of If-Match: the version read above, or 412.
      if (!(await repo.updateGroup(trx, organizationId, id, group.version, { ...names, now })))
        throw preconditionFailed();
      const before = (await repo.groupMembers(trx, organizationId, [id])).map((m) => m.identityId);
      const add = await this.#members(trx, organizationId, change.add);
      await repo.removeGroupMembers(trx, id, change.remove);
      await repo.addGroupMembers(trx, organizationId, id, add);
      const touched = [
        ...new Set([...before.filter((m) => change.remove === 'all' || change.remove.includes(m)), ...add]),
      ];
      const renamed = names.displayName !== group.displayName || names.externalId !== group.externalId;
      await this.#mapRoles(
        trx,
        organizationId,
        renamed ? [...new Set([...before, ...add])] : touched,
        actor,
        now,
      );
      const removed = change.remove === 'all' ? before.length : change.remove.length;
      await this.#audit(
        trx,
        'organization.scim.group.updated',
        actor,
        id,
        organizationId,
        add.length,
        removed,
      );
    });
    return this.get(caller, id, base);
  }

  /** The ids, each a user of this organization; any other is invalidValue (nothing written). */
  async #members(trx: Executor, organizationId: string, ids: string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    const known = new Set(await repo.existingUsers(trx, organizationId, unique));
    if (known.size !== unique.length) throw noTarget('A member is no user of this organization.');
    return unique;
  }

  /**
   * The role each of these users gets from its mapped groups (the first mapped group by name),
   * else `member`; applied to their memberships in one statement per role, each change evented.
   */
  async #mapRoles(trx: Executor, organizationId: string, ids: string[], actor: string, now: Date) {
    if (ids.length === 0) return;
    const mappings = await repo.groupRoles(trx, organizationId);
    if (mappings.length === 0) return;
    const roleOf = new Map(mappings.map((m) => [m.groupKey.toLowerCase(), m.role]));
    const groups = await repo.groupsOfUsers(trx, organizationId, ids);
    const wanted = new Map<string, string>();
    for (const id of ids) wanted.set(id, MEMBER_ROLE);
    for (const id of ids) {
      const mapped = groups
        .filter((g) => g.identityId === id)
        .map(
          (g) =>
            roleOf.get(g.displayName.toLowerCase()) ??
            (g.externalId ? roleOf.get(g.externalId.toLowerCase()) : undefined),
        )
        .find((r) => r !== undefined);
      if (mapped) wanted.set(id, mapped);
    }
    const current = await orgs.rolesOf(trx, organizationId, ids);
    const byRole = new Map<string, string[]>();
    for (const [id, role] of wanted) {
      const now_ = current.get(id);
      if (now_ === undefined || now_ === role || now_ === OWNER_ROLE) continue;
      byRole.set(role, [...(byRole.get(role) ?? []), id]);
    }
    for (const [role, members] of byRole) {
      await orgs.setRoles(trx, organizationId, members, role, now);
      await repo.setUserRole(trx, organizationId, members, role);
      for (const identityId of members)
        await membershipChanged(this.deps.events, trx, 'organization.membership.updated', actor, {
          organizationId,
          identityId,
          role,
        });
    }
  }

  #audit(
    trx: Executor,
    name: string,
    actor: string,
    target: string,
    organizationId: string,
    added: number,
    removed: number,
  ) {
    return this.deps.audit.append(trx, {
      name,
      actor,
      target,
      outcome: 'success',
      details: { organizationId, membersAdded: added, membersRemoved: removed },
    });
  }

  async #transaction(work: (trx: Executor) => Promise<void>): Promise<void> {
    try {
      await this.deps.database.db.transaction().execute(work);
    } catch (error) {
      if (isUniqueViolation(error)) throw uniqueness('displayName is already in use in this organization.');
      throw error;
    }
  }

  async #resources(trx: Executor, organizationId: string, groups: repo.GroupRow[], base: string) {
    const members = await repo.groupMembers(
      trx,
      organizationId,
      groups.map((g) => g.id),
    );
    return groups.map((g) =>
      groupResource(
        g,
        members.filter((m) => m.groupId === g.id),
        base,
      ),
    );
  }
}
