// The entry point. Tracing, when OTEL_EXPORTER_OTLP_ENDPOINT asks for it, must hook node:http and pg
// before anything loads them, so the service (src/serve.ts) is imported only once it has started.
import { ConfigError } from './config.js';
import { startTracing } from './platform/trace/tracing.js';

try {
  await startTracing(process.env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  // One line, no stack (as every configuration error).
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
}
await import('./serve.js');
