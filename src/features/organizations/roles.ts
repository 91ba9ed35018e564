import type { Config } from '../../config.js';

/**
 * Organization roles (docs/organizations.md, "Roles and permissions"): the built-in `owner`,
 * `admin` and `member`, each a fixed set of permissions, and the operator-defined roles of
 * ORGANIZATION_ROLES. A role is only a name on the membership; its permissions are read from here
 * on every request and every token, so a configuration change reaches everyone at once.
 */
export type Permission = string;

const MEMBER: Permission[] = ['organization:read', 'members:read'];
const ADMIN: Permission[] = [
  'organization:read',
  'organization:update',
  'members:read',
  'members:manage',
  'members:invite',
  'domains:manage',
  'connections:manage',
];
// directory:manage (SCIM tokens, docs/scim.md): a token creates, suspends and erases members, so
// only an owner holds it (docs/decisions.md, "SCIM provisioning").
const OWNER: Permission[] = [...ADMIN, 'organization:delete', 'organization:transfer', 'directory:manage'];

export const OWNER_ROLE = 'owner';

/** One role as the pages offer it: its name, its display names by language, whether the caller may grant it. */
export interface RoleEntry {
  name: string;
  displayName: Record<string, string>;
  assignable: boolean;
}

/** The role catalogue of one deployment, built once from the configuration. */
export class OrganizationRoles {
  readonly #roles: Map<string, Permission[]>;
  readonly #displayNames: Map<string, Record<string, string>>;

  constructor(config: Pick<Config, 'organizations'>) {
    const custom = config.organizations.roles;
    this.#displayNames = new Map(custom.map((r) => [r.name, { ...r.displayName }]));
    // An owner may do everything, the operator-defined permissions included: so an owner can grant
    // every role (a role is granted only by someone holding all of its permissions).
    const everything = [...new Set([...OWNER, ...custom.flatMap((r) => r.permissions)])];
    this.#roles = new Map<string, Permission[]>([
      ['owner', everything],
      ['admin', ADMIN],
      ['member', MEMBER],
      // Belonging is reading: every role can read its organization, configured or not.
      ...custom.map((r): [string, Permission[]] => [
        r.name,
        [...new Set(['organization:read', ...r.permissions])],
      ]),
    ]);
  }

  /**
   * Every role of the deployment, built-in first, each with its configured display names (none for
   * the built-in ones: the pages name them in the person's language) and whether `actorRole` may
   * grant it (mayAssign).
   */
  catalogue(actorRole: string): RoleEntry[] {
    return [...this.#roles.keys()].map((name) => ({
      name,
      displayName: this.displayName(name),
      assignable: this.mayAssign(actorRole, name),
    }));
  }

  /** A role's configured display names by language; none for a built-in or unnamed role. */
  displayName(role: string): Record<string, string> {
    return { ...(this.#displayNames.get(role) ?? {}) };
  }

  known(role: string): boolean {
    return this.#roles.has(role);
  }

  /**
   * The permissions of a role, sorted. A stored role the configuration no longer defines has none:
   * its members can still read the organization they belong to, and nothing more.
   */
  permissions(role: string): Permission[] {
    return [...(this.#roles.get(role) ?? [])].sort();
  }

  can(role: string, permission: Permission): boolean {
    return this.#roles.get(role)?.includes(permission) ?? false;
  }

  /**
   * Whether an actor with `actorRole` may grant or take away `role`: only an owner touches
   * `owner`, and nobody hands out (or takes away) a role with a permission they do not hold
   * themselves, so `members:manage` never escalates.
   */
  mayAssign(actorRole: string, role: string): boolean {
    if (role === OWNER_ROLE) return actorRole === OWNER_ROLE;
    const mine = new Set(this.#roles.get(actorRole) ?? []);
    return this.permissions(role).every((p) => mine.has(p));
  }
}
