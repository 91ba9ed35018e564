import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Clock } from './clock.js';
import type { Database } from './db/database.js';

/** What every feature plugin is handed: built once in app.ts, shared by all routes. */
export interface AppContext {
  config: Config;
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
}
