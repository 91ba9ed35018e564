import { isIP } from 'node:net';
import { checkedEntries, formatted, integer, oneOf, section } from '../../config/schema.js';

/** The organization roles every deployment has (docs/organizations.md, "Roles and permissions"). */
export const BUILT_IN_ORGANIZATION_ROLES = ['owner', 'admin', 'member'] as const;

/** An operator-defined organization role (ORGANIZATION_ROLES): a name and its permissions. */
export interface OrganizationRoleConfig {
  name: string;
  permissions: string[];
}

const ROLE_NAME = /^[a-z][a-z0-9_-]{1,31}$/;
const PERMISSION = /^[a-z0-9_:.-]{1,64}$/;

function organizationRolesFrom(value: string | undefined): OrganizationRoleConfig[] {
  return checkedEntries(
    'ORGANIZATION_ROLES',
    value,
    'name',
    (entry): OrganizationRoleConfig | string => {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return 'is not an object';
      const { name, permissions, ...rest } = entry as Record<string, unknown>;
      const extra = Object.keys(rest)[0];
      if (extra !== undefined) return `has an unknown member ${JSON.stringify(extra).slice(0, 40)}`;
      if (typeof name !== 'string' || !ROLE_NAME.test(name))
        return 'needs a name matching [a-z][a-z0-9_-]{1,31}';
      if ((BUILT_IN_ORGANIZATION_ROLES as readonly string[]).includes(name))
        return 'repeats a built-in role name';
      if (!Array.isArray(permissions) || permissions.length > 64)
        return 'needs permissions: an array of at most 64';
      if (!permissions.every((p) => typeof p === 'string' && PERMISSION.test(p)))
        return 'has a permission not matching [a-z0-9_:.-]{1,64}';
      if (new Set(permissions).size !== permissions.length) return 'repeats a permission';
      return { name, permissions: permissions as string[] };
    },
    (r) => r.name,
  );
}
/**
 * One DNS_RESOLVERS entry in the form node:dns `setServers` takes: `ip`, `ipv4:port` or
 * `[ipv6]:port`; null when it is none of these.
 */
export function resolverEntry(entry: string): string | null {
  const e = entry.trim();
  if (isIP(e)) return e;
  const v6 = /^\[([^\]]+)\]:(\d{1,5})$/.exec(e);
  const v4 = /^([^:]+):(\d{1,5})$/.exec(e);
  const m = v6 ?? v4;
  if (!m) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  if (v6 ? isIP(m[1]) !== 6 : isIP(m[1]) !== 4) return null;
  return e;
}

function resolversFrom(value: string | undefined): string[] {
  if (value === undefined || value.trim() === '') return [];
  return value.split(',').map((e) => resolverEntry(e) as string);
}

/** Who may create organizations, the operator-defined roles, and invitations (docs/organizations.md). */
export const organizationsSection = section({
  formats: {
    'dns-resolvers': (v) => v.split(',').every((e) => resolverEntry(e) !== null),
  },
  variables: {
    ORGANIZATION_CREATION: oneOf('anyone', ['anyone', 'operators'], {
      description:
        '`anyone` or `operators`: whether any signed-in identity with a verified identifier may create an organization (`POST /api/v1/organizations`), or only the operators (that route then answers `403 organization.creation_disabled`). See [organizations](organizations.md)',
    }),
    ORGANIZATION_ROLES: formatted('json-array', 'must be a JSON array of role objects', {
      description:
        'JSON array of operator-defined organization roles beside the built-in `owner`, `admin` and `member`: `[{"name":"billing","permissions":["billing:read","billing:write"]}]`. A `name` is `[a-z][a-z0-9_-]{1,31}` and not a built-in name; `permissions` is a list of 0 to 64 distinct `[a-z0-9_:.-]{1,64}`. An invalid entry stops start-up with a line naming it. See [organizations](organizations.md#roles-and-permissions)',
      shown: 'none (the built-in roles only)',
    }),
    ORGANIZATION_INVITATION_TTL_SECONDS: integer(604800, 3600, 30 * 86400, {
      description:
        'seconds an organization invitation stays acceptable (7 days by default); a new invitation to the same address replaces the pending one. See [organizations](organizations.md#invitations)',
    }),
    DNS_RESOLVERS: formatted(
      'dns-resolvers',
      'must be a comma-separated list of ip, ipv4:port or [ipv6]:port',
      {
        description:
          'the DNS servers a domain verification asks for its TXT record (`POST /api/v1/organizations/{id}/domains/{domainId}/verifications`), comma-separated `ip`, `ipv4:port` or `[ipv6]:port`, tried in order. See [organizations](organizations.md#domains)',
        shown: "none (the system's resolvers)",
      },
    ),
    DNS_TIMEOUT_MS: integer(3000, 100, 30000, {
      description:
        'milliseconds a domain verification waits for each DNS server before it gives up: the verification then answers `503 organization.domain_check_unavailable` and changes nothing. See [organizations](organizations.md#domains)',
    }),
  },
  map: (e) => ({
    /** Organizations: who may create them, and the operator-defined roles (ORGANIZATION_*). */
    organizations: {
      creation: e.ORGANIZATION_CREATION as 'anyone' | 'operators',
      roles: organizationRolesFrom(e.ORGANIZATION_ROLES),
      /** Seconds an invitation stays acceptable (ORGANIZATION_INVITATION_TTL_SECONDS). */
      invitationTtl: e.ORGANIZATION_INVITATION_TTL_SECONDS,
      /** The DNS servers of a domain verification; empty: the system's (DNS_RESOLVERS). */
      dnsResolvers: resolversFrom(e.DNS_RESOLVERS),
      /** Milliseconds per DNS server before a verification gives up (DNS_TIMEOUT_MS). */
      dnsTimeoutMs: e.DNS_TIMEOUT_MS,
    },
  }),
});
