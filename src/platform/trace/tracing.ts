// OpenTelemetry traces, on only when OTEL_EXPORTER_OTLP_ENDPOINT is set. Off, nothing of the SDK
// is loaded and the service registers no hook for it: tracing costs nothing when unused.
//
// On, the HTTP and pg instrumentations patch `node:http` and `pg` when they are first required.
// The service is ESM and imports them through Node's ESM loader, which those hooks do not see, so
// src/main.ts starts tracing before it imports the service, and startTracing requires both modules
// itself once the hooks are in place: ESM imports of a CommonJS module later share that patched
// instance. Fastify's own spans come from @fastify/otel, which attaches through Fastify's
// `fastify.initialization` diagnostics channel rather than by patching the module.

import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type { Attributes, Span } from '@opentelemetry/api';
import type { tracing } from '@opentelemetry/sdk-node';
import { ConfigError, NOT_A_COLLECTOR } from '../config-error.js';

/** The HTTP server span of each incoming request, so the request id can go on it once Fastify has one. */
const serverSpans = new WeakMap<IncomingMessage, Span>();
let running: { shutdown(): Promise<void> } | undefined;

/** The attribute the request id goes on: the header the service answers with (x-request-id). */
const REQUEST_ID_ATTRIBUTE = 'http.response.header.x-request-id';

/** Attributes that hold a URL or its query; only the path may leave the process. */
const URL_ATTRIBUTES = new Set(['url.full', 'url.path', 'http.target', 'http.url', 'url.original']);
/**
 * Attributes that carry values a client sent or who the client is (its address and user agent are
 * personal data, kept only where the owner can see and erase them), never exported whatever an
 * instrumentation decides. Dropped rather than hashed: an IPv4 address's hash is reversed by trying
 * all 2^32 of them. The request id on the span leads to the access log when an operator needs more.
 */
const DROPPED_ATTRIBUTES = new Set([
  'url.query',
  'db.postgresql.values',
  'http.request.body',
  'client.address',
  'client.port',
  'network.peer.address',
  'network.peer.port',
  'net.peer.ip',
  'net.peer.name',
  'net.peer.port',
  'net.sock.peer.addr',
  'net.sock.peer.port',
  'http.client_ip',
  'user_agent.original',
  'http.user_agent',
]);
/** Header attributes of these names are dropped too, should an instrumentation record them. */
const DROPPED_HEADERS = /^http\.request\.header\.(user-agent|x-forwarded-for|forwarded|x-real-ip)$/;

/** Removes query strings (their values may be codes or tokens) and parameter values from a span. */
function scrubAttributes(attributes: Attributes): void {
  for (const key of Object.keys(attributes)) {
    const value = attributes[key];
    if (DROPPED_ATTRIBUTES.has(key) || DROPPED_HEADERS.test(key) || key.startsWith('db.query.parameter.')) {
      delete attributes[key];
    } else if (URL_ATTRIBUTES.has(key) && typeof value === 'string') {
      const cut = value.search(/[?#]/);
      if (cut >= 0) attributes[key] = value.slice(0, cut);
    }
  }
}

/** Runs before the exporting processor: each finished span is scrubbed before it is queued. */
class ScrubbingProcessor implements tracing.SpanProcessor {
  onStart(_span: tracing.Span): void {}
  onEnd(span: tracing.ReadableSpan): void {
    scrubAttributes(span.attributes as Attributes);
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

function endpointOf(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT', NOT_A_COLLECTOR);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT', NOT_A_COLLECTOR);
  }
  return raw;
}

/**
 * Starts the SDK when OTEL_EXPORTER_OTLP_ENDPOINT is set (throws ConfigError when it is not a URL).
 * Must run before anything imports node:http, pg or fastify.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (endpointOf(env) === undefined || running) return;
  const [{ NodeSDK, tracing }, { OTLPTraceExporter }, { HttpInstrumentation }, { PgInstrumentation }, otel] =
    await Promise.all([
      import('@opentelemetry/sdk-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/instrumentation-http'),
      import('@opentelemetry/instrumentation-pg'),
      import('@fastify/otel'),
    ]);
  const { FastifyOtelInstrumentation } = otel.default;
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || 'identity-service',
    // OTLP over HTTP (JSON bodies) to ${OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces, batched.
    spanProcessors: [new ScrubbingProcessor(), new tracing.BatchSpanProcessor(new OTLPTraceExporter())],
    // Metrics are Prometheus's (METRICS_PORT) and logs go to stdout: traces only here.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        // Probes and the metrics scrape would bury the traces worth reading.
        ignoreIncomingRequestHook: (req) => (req.url ?? '').startsWith('/health/'),
        requestHook: (span, req) => {
          if ('headers' in req && !('setHeader' in req)) serverSpans.set(req as IncomingMessage, span);
        },
        // Headers are not recorded (an Authorization header is a token).
        headersToSpanAttributes: {},
      }),
      // Statement text only (with $1 placeholders); the values bound to it are never recorded.
      new PgInstrumentation({ enhancedDatabaseReporting: false, requireParentSpan: true }),
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        ignorePaths: ({ url }) => url.startsWith('/health/'),
        // The request id (Fastify's, answered as x-request-id) on both the HTTP and Fastify spans.
        requestHook: (span, request) => {
          span.setAttribute(REQUEST_ID_ATTRIBUTE, [request.id]);
          serverSpans.get(request.raw)?.setAttribute(REQUEST_ID_ATTRIBUTE, [request.id]);
        },
      }),
    ],
  });
  sdk.start();
  // Load the CommonJS modules through the patched require (see the header of this file).
  const require = createRequire(import.meta.url);
  require('node:http');
  require('pg');
  running = sdk;
}

/** Exports the spans still buffered and stops the SDK (graceful shutdown). */
export async function stopTracing(): Promise<void> {
  const sdk = running;
  running = undefined;
  await sdk?.shutdown();
}
