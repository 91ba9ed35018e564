import { ConfigError, formatted, integer, section, text } from './schema.js';

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

interface Listeners {
  port: number;
  metrics: { port: number };
  admin: { port: number; keys: AdminKey[] };
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
  },
  formats: { 'admin-keys': (v) => adminKeys(v) !== null },
  map: (e) => ({
    /** The operators' listener (/admin/v1), apart from the public port; port 0: off. */
    admin: { host: e.ADMIN_HOST, port: e.ADMIN_PORT, keys: adminKeys(e.ADMIN_API_KEYS ?? '') ?? [] },
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
  },
});
