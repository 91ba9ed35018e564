import { isIP } from 'node:net';
import { checkedEntries, formatted, integer, oneOf, section } from '../../config/schema.js';

/** The organization roles every deployment has (docs/organizations.md, "Roles and permissions"). */
export const BUILT_IN_ORGANIZATION_ROLES = ['owner', 'admin', 'member'] as const;

/**
 * An operator-defined organization role (ORGANIZATION_ROLES): a name, its permissions, and how the
 * hosted pages call it, per language (`displayName`: one string for every language, or one per
 * language; none: the pages show the name).
 */
export interface OrganizationRoleConfig {
  name: string;
  permissions: string[];
  displayName: Partial<Record<Locale, string>>;
}

const DISPLAY_NAME_MAX = 50;

// The languages of src/shared/locales.ts (the hosted pages'); a config section imports nothing
// outside src/config and the platform (scripts/layers.ts), as DEFAULT_LOCALE does.
type Locale = 'en' | 'fr';
const isLocale = (value: string): value is Locale => value === 'en' || value === 'fr';

/** A display name's text: 1 to 50 characters, not only spaces, no control character. */
function displayText(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (text === '' || [...text].length > DISPLAY_NAME_MAX || /[\u0000-\u001f\u007f-\u009f]/u.test(text))
    return undefined;
  return text;
}

/** `displayName` as configured: a string for every language, or an object per language. */
function displayNameOf(value: unknown): Partial<Record<Locale, string>> | string {
  const bad = `needs a displayName of 1 to ${DISPLAY_NAME_MAX} characters, or an object of them by language (en, fr)`;
  if (value === undefined) return {};
  const one = displayText(value);
  if (one !== undefined) return { en: one, fr: one };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return bad;
  const names: Partial<Record<Locale, string>> = {};
  for (const [language, text] of entries) {
    const checked = displayText(text);
    if (!isLocale(language) || checked === undefined) return bad;
    names[language] = checked;
  }
  return names;
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
      const { name, permissions, displayName, ...rest } = entry as Record<string, unknown>;
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
      const names = displayNameOf(displayName);
      if (typeof names === 'string') return names;
      return { name, permissions: permissions as string[], displayName: names };
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
        'JSON array of operator-defined organization roles beside the built-in `owner`, `admin` and `member`: `[{"name":"billing","permissions":["billing:read","billing:write"]}]`. A `name` is `[a-z][a-z0-9_-]{1,31}` and not a built-in name; `permissions` is a list of 0 to 64 distinct `[a-z0-9_:.-]{1,64}`; an optional `displayName` (1 to 50 characters, or an object by language: `{"en":"Billing","fr":"Facturation"}`) is how the hosted pages name the role (without one, they show `name`). An invalid entry stops start-up with a line naming it. See [organizations](organizations.md#roles-and-permissions)',
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
    SSO_CLOCK_SKEW_SECONDS: integer(60, 0, 300, {
      description:
        "seconds a SAML assertion's NotBefore and NotOnOrAfter (and its SubjectConfirmationData's) are stretched by, for the clocks of an IdP and this service that disagree a little. See [sso](sso.md#checks)",
    }),
    SSO_METADATA_TIMEOUT_MS: integer(5000, 100, 30000, {
      description:
        "milliseconds a connection's IdP metadata URL may take to answer its document (at most 1 MiB); past it the change answers `503 organization.connection_metadata_unavailable` and changes nothing. See [sso](sso.md#connections)",
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
      /** Seconds of clock skew a SAML assertion's validity window is stretched by (SSO_CLOCK_SKEW_SECONDS). */
      ssoClockSkew: e.SSO_CLOCK_SKEW_SECONDS,
      /** Milliseconds an IdP metadata URL may take (SSO_METADATA_TIMEOUT_MS). */
      ssoMetadataTimeoutMs: e.SSO_METADATA_TIMEOUT_MS,
    },
  }),
});
