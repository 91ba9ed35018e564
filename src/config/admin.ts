import { ConfigError, formatted, integer, parseOrigin, section, text } from './schema.js';

/** An operator's API key as configured: its name (the audit actor) and the SHA-256 of the key. */
interface AdminKey {
  name: string;
  /** 32 bytes: SHA-256 of the raw key; the raw key never sits in configuration. */
  hash: Buffer;
}

/** An operator key's name (ADMIN_API_KEYS, npm run admin:key): the audit actor after `admin:`. */
export const ADMIN_KEY_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** ADMIN_API_KEYS: `name:sha256-hex` entries, names distinct; null when any entry is not one. */
function adminKeys(value: string): AdminKey[] | null {
  if (value === '') return [];
  const keys: AdminKey[] = [];
  for (const entry of value.split(',').map((e) => e.trim())) {
    const colon = entry.indexOf(':');
    const name = entry.slice(0, colon);
    const hex = entry.slice(colon + 1);
    if (colon < 0 || !ADMIN_KEY_NAME.test(name) || !/^[0-9a-fA-F]{64}$/.test(hex)) return null;
    if (keys.some((k) => k.name === name)) return null;
    keys.push({ name, hash: Buffer.from(hex, 'hex') });
  }
  return keys;
}

/** The roles of the operators' console (docs/admin.md, "The console"). */
export const OPERATOR_ROLES = ['owner', 'support', 'auditor'] as const;
type OperatorRole = (typeof OPERATOR_ROLES)[number];

/** One CONSOLE_OPERATORS entry: a role and the identity it names, by id or by verified address. */
interface ConfiguredOperator {
  role: OperatorRole;
  /** An identity id (lower case) or an e-mail address (lower case), as the entry names it. */
  identityId?: string;
  email?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** CONSOLE_OPERATORS: `role:<identity id or e-mail>` entries, each identity once; null when any is not one. */
function consoleOperators(value: string): ConfiguredOperator[] | null {
  if (value.trim() === '') return [];
  const operators: ConfiguredOperator[] = [];
  const seen = new Set<string>();
  for (const entry of value.split(',').map((e) => e.trim())) {
    const colon = entry.indexOf(':');
    const role = entry.slice(0, colon) as OperatorRole;
    const who = entry
      .slice(colon + 1)
      .trim()
      .toLowerCase();
    if (colon < 0 || !OPERATOR_ROLES.includes(role) || who.length === 0 || who.length > 320) return null;
    if (seen.has(who)) return null;
    seen.add(who);
    if (UUID.test(who)) operators.push({ role, identityId: who });
    else if (/^[^@\s]+@[^@\s]+$/.test(who)) operators.push({ role, email: who });
    else return null;
  }
  return operators;
}

interface Listeners {
  port: number;
  metrics: { port: number };
  admin: { port: number; keys: AdminKey[] };
  oidc: { clients: Array<{ clientId: string }> };
}

/** The operators' listener (/admin/v1) and the keys it accepts. */
export const admin = section({
  variables: {
    ADMIN_PORT: integer(0, 0, 65535, {
      description:
        "port of the operators' listener serving `/admin/v1` only (see [admin](admin.md)); never the public port; must differ from `PORT` and `METRICS_PORT`; `0` off",
      shown: '`0` (off)',
    }),
    ADMIN_HOST: text('127.0.0.1', { description: "address the operators' listener binds; keep it private" }),
    ADMIN_API_KEYS: formatted(
      'admin-keys',
      'must be a comma-separated list of name:sha256-hex (64 hex digits) with distinct names of a-z 0-9 . _ -',
      {
        description:
          'comma-separated `name:sha256-hex` (64 hex digits) entries, names distinct (`[a-z0-9][a-z0-9._-]{0,62}`), made by `npm run admin:key -- NAME`; the name is the audit actor (`admin:NAME`); removing an entry revokes its key. Required when `ADMIN_PORT` is set',
      },
    ),
    CONSOLE_OPERATORS: formatted(
      'console-operators',
      'must be a comma-separated list of role:identity entries (role owner, support or auditor; identity an id or an e-mail address), each identity once',
      {
        description:
          'comma-separated `role:identity` entries naming the operators of the console and the admin API by their identity in this service: `role` is `owner` (everything), `support` (read, unlock, end sessions) or `auditor` (the audit trail only); `identity` is an identity id or a verified e-mail address. An identity named here takes this role whatever the admin API granted it (see [admin](admin.md#operators))',
        shown: 'none (roles can also be granted through the admin API)',
      },
    ),
    CONSOLE_IDLE_TIMEOUT: integer(900, 60, 28800, {
      description:
        "seconds an operator's console session lasts without a request to `/console/session`; its end, or the end of the operator's account session, signs the console out (see [admin](admin.md#the-consoles-session))",
    }),
    CONSOLE_ORIGIN: formatted('origin', 'must be an absolute origin', {
      description:
        "the origin at which operators' browsers reach the operators' listener: the console's OpenID redirect URI is `CONSOLE_ORIGIN/console/callback` (see [admin](admin.md#operators))",
      shown: '`http://ADMIN_HOST:ADMIN_PORT`',
    }),
  },
  formats: {
    'admin-keys': (v) => adminKeys(v) !== null,
    'console-operators': (v) => consoleOperators(v) !== null,
  },
  map: (e) => ({
    /** The operators' listener (/admin/v1), apart from the public port; port 0: off. */
    admin: {
      host: e.ADMIN_HOST,
      port: e.ADMIN_PORT,
      keys: adminKeys(e.ADMIN_API_KEYS ?? '') ?? [],
      /** The operators who sign in with their identity (docs/admin.md, "Operators"). */
      console: {
        origin: e.CONSOLE_ORIGIN
          ? (parseOrigin(e.CONSOLE_ORIGIN) as string)
          : `http://${e.ADMIN_HOST}:${e.ADMIN_PORT}`,
        operators: consoleOperators(e.CONSOLE_OPERATORS ?? '') ?? [],
        idleTimeout: e.CONSOLE_IDLE_TIMEOUT,
      },
    },
  }),
  /** The operators' listener never shares a port with the public API or the metrics, and needs keys. */
  check: (config: Listeners) => {
    const { admin } = config;
    if (admin.port === 0) return;
    if (admin.keys.length === 0)
      throw new ConfigError('ADMIN_API_KEYS', 'is required when ADMIN_PORT is set');
    if (admin.port === config.port) throw new ConfigError('ADMIN_PORT', 'must differ from PORT');
    if (admin.port === config.metrics.port)
      throw new ConfigError('ADMIN_PORT', 'must differ from METRICS_PORT');
    // The operators' console's built-in client (docs/admin.md, "Operators") owns this id.
    if (config.oidc.clients.some((c) => c.clientId === 'console'))
      throw new ConfigError('OIDC_CLIENTS', 'must not use the client id console while ADMIN_PORT is set');
  },
});
