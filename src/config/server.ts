import { integer, section, text } from './schema.js';

/** The process: which environment it runs in, where it listens, where it keeps its files. */
export const server = section({
  variables: {
    NODE_ENV: text('development', {
      description:
        '`production` turns off the development outbox and requires `SECRETS_KEY` and `PUBLIC_ORIGIN`',
    }),
    HOST: text('127.0.0.1', { description: 'address the API listens on' }),
    PORT: integer(3000, 0, 65535, { description: 'port the API listens on' }),
    DATA_DIR: text('./data', {
      description: 'embedded database, development outbox (`outbox.jsonl`), generated development key',
    }),
  },
  map: (e, shared) => ({
    nodeEnv: e.NODE_ENV as string,
    production: shared.production,
    host: e.HOST,
    port: e.PORT,
    dataDir: shared.dataDir,
  }),
});
