import { context, propagation, trace } from '@opentelemetry/api'
import { enableQueryTracing } from '../db/tracing.js'

export { enableQueryTracing }

/** An OpenTelemetry span processor, such as the SDK's SimpleSpanProcessor: typed here, as the SDK is an optional peer. */
export interface SpanProcessorLike {
  onStart (...args: never[]): void
  onEnd (...args: never[]): void
  forceFlush (): Promise<void>
  shutdown (): Promise<void>
}

export interface TracingOptions {
  /** Where spans go instead of the OTLP exporter, such as an in-memory exporter in tests. */
  spanProcessors?: SpanProcessorLike[]
}

// The specs match package.json's optional peers; npm refuses a version outside them.
const PACKAGES = ['@opentelemetry/sdk-node@0.222', '@fastify/otel@0.21', '@opentelemetry/exporter-trace-otlp-proto@0.222']

async function loadSdk () {
  try {
    const [{ NodeSDK }, { FastifyOtelInstrumentation }, { OTLPTraceExporter }] = await Promise.all([
      import('@opentelemetry/sdk-node'), import('@fastify/otel'), import('@opentelemetry/exporter-trace-otlp-proto')
    ])
    return { NodeSDK, FastifyOtelInstrumentation, OTLPTraceExporter }
  } catch (err) {
    const missing = (err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' &&
      PACKAGES.some((spec) => String(err).includes(`'${spec.slice(0, spec.lastIndexOf('@'))}'`))
    if (!missing) throw err
    throw new Error(`tracing needs the OpenTelemetry SDK: run \`npm install ${PACKAGES.join(' ')}\``)
  }
}

/** Traces every Fastify instance created afterwards and every query, to OTLP per the OTEL_* variables; resolves to the shutdown. */
export async function startTracing (options: TracingOptions = {}): Promise<() => Promise<void>> {
  const { NodeSDK, FastifyOtelInstrumentation, OTLPTraceExporter } = await loadSdk()
  const instrumentation = new FastifyOtelInstrumentation({
    registerOnInitialization: true,
    requestHook: (span, request) => {
      span.updateName(`${request.method} ${request.routeOptions.url ?? ''}`.trim())
      // The path alone, as the semantic conventions have it: a query string may hold search text or a misplaced token.
      span.setAttribute('url.path', request.url.split('?', 1)[0]!)
    }
  })
  const named = process.env.OTEL_SERVICE_NAME || /(^|,)\s*service\.name\s*=/.test(process.env.OTEL_RESOURCE_ATTRIBUTES ?? '')
  const sdk = new NodeSDK({
    serviceName: named ? undefined : 'plinth',
    instrumentations: [instrumentation],
    // Traces only: plinth's metrics are Prometheus' (METRICS_PORT), and nothing here writes OTel metrics or logs.
    metricReaders: [],
    logRecordProcessors: [],
    ...(options.spanProcessors
      ? { spanProcessors: options.spanProcessors as never }
      : { traceExporter: new OTLPTraceExporter() })
  })
  sdk.start()
  enableQueryTracing()
  let stopped: Promise<void> | undefined
  return () => (stopped ??= (async () => {
    enableQueryTracing(false)
    instrumentation.disable()
    try {
      await sdk.shutdown()
    } finally {
      // Unregistered, so that tracing can start again in this process.
      trace.disable()
      context.disable()
      propagation.disable()
    }
  })())
}
