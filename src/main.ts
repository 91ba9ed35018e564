// The entry point. Tracing, when OTEL_EXPORTER_OTLP_ENDPOINT asks for it, must hook node:http and pg
// before anything loads them, so the service (src/serve.ts) is imported only once it has started.
import { setFlagsFromString } from 'node:v8';
import { exitOnConfigError } from './entry.js';
import { startTracing } from './platform/trace/tracing.js';

// V8's allocation-site pretenuring off, before the service loads. Under load V8 can decide, from
// the objects that happened to be alive at one young collection (a burst of requests in flight),
// that an object made on every request is long-lived, and allocate it in the old generation from
// then on; each request's young objects, referenced from it, then survive every young collection
// and are copied and promoted until the next full one. In 7 of 12 service processes measured, that
// decision was taken and kept: young collections took 18 to 21 ms instead of 2, and the process
// served about a third fewer answers (docs/performance.md, "Eighth round"). An identity
// service's per-request objects are short-lived; its long-lived state is made at start-up.
setFlagsFromString('--no-allocation-site-pretenuring');

// A refused tracing setting is one line, no stack (as every configuration error).
await exitOnConfigError(() => startTracing(process.env));
await import('./serve.js');
