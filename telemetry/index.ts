/** `plinth/telemetry`: OpenTelemetry tracing, started by the host before it creates its Fastify instance. */
export { enableQueryTracing, startTracing, type SpanProcessorLike, type TracingOptions } from './tracing.js'
