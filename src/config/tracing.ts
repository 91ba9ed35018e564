import { NOT_A_COLLECTOR } from '../platform/config-error.js';
import { formatted, section, text } from './schema.js';

/** Traces: read by the platform's tracing before the rest, declared here to be checked and documented. */
export const tracing = section({
  variables: {
    // Read by src/platform/trace/tracing.ts before anything else loads (it must hook node:http and
    // pg first); declared here too, so they are checked and documented with the rest.
    OTEL_EXPORTER_OTLP_ENDPOINT: formatted('http-url', NOT_A_COLLECTOR, {
      description:
        'OpenTelemetry collector, OTLP over HTTP (`http://` or `https://` base URL; spans go to `/v1/traces`). Set, each request is traced (see [operations](operations.md#traces)); unset, no tracing code is loaded',
      shown: 'unset (off)',
    }),
    OTEL_SERVICE_NAME: text('identity-service', { description: '`service.name` on the spans' }),
  },
  map: () => ({}),
});
