import { oneOf, section } from './schema.js';

/** The log. */
export const logging = section({
  variables: {
    LOG_LEVEL: oneOf('info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      description:
        '`fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`. At `info`: one access line per request (request id, method, route pattern, status, duration in ms, client address; never headers, bodies or query values) plus errors; `debug` adds a line when each request arrives. Lines go to stdout through an asynchronous destination, flushed at shutdown and on a fatal error',
    }),
  },
  map: (e) => ({ logLevel: e.LOG_LEVEL as string }),
});
