/**
 * A configuration error names the variable; start-up prints its message alone and exits 1. It sits
 * in the platform, a leaf importing nothing, because both sides throw it: the configuration's
 * schema (src/config/) when a variable is refused, and the platform when a start-up check refuses
 * one (the key check, tracing, which reads its variable before the configuration is loaded).
 */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`invalid configuration: ${variable} ${reason}`);
  }
}

/** The refusal of OTEL_EXPORTER_OTLP_ENDPOINT: tracing gives it before the configuration is read. */
export const NOT_A_COLLECTOR = 'must be the http:// or https:// URL of an OTLP/HTTP collector';
