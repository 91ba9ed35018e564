import { absoluteUrl, formatted, section } from './schema.js';

/** The stores: the database, and the shared rate-limit counters. */
export const database = section({
  variables: {
    DATABASE_URL: formatted('postgres-url', 'must be an absolute URL using postgres: or postgresql:', {
      description:
        '`postgres://…` for a PostgreSQL server (pooled, 20 connections); `memory://` for an in-memory embedded database',
      shown: 'embedded PGlite persisted in `DATA_DIR/pgdata`',
    }),
    REDIS_URL: formatted('redis-url', 'must be an absolute URL using redis: or rediss:', {
      description: '`redis://…`: rate-limit counters shared by every instance',
      shown: 'in-process counters',
    }),
  },
  formats: {
    'postgres-url': (v) => v === 'memory://' || absoluteUrl(v, ['postgres:', 'postgresql:']),
    'redis-url': (v) => absoluteUrl(v, ['redis:', 'rediss:']),
  },
  map: (e) => ({ databaseUrl: e.DATABASE_URL, redisUrl: e.REDIS_URL }),
});
