import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { queryTracing, tracedQuery } from '../../db/tracing.js'
import { startTracing } from '../../telemetry/tracing.js'
import { build, login, register } from '../support/app.js'

const NEEDLE = 'needle-6f2c'
const EMAIL = 'traced-7d41@example.com'
const PASSWORD = 'traced password 93b1'

/** A module whose import fails as Node fails an import of a package that is not installed. */
const notInstalled = (name: string) => ({
  get FastifyOtelInstrumentation () {
    throw Object.assign(new Error(`Cannot find package '${name}' imported from /app/plugins/tracing.js`), { code: 'ERR_MODULE_NOT_FOUND' })
  }
})

/** An in-memory exporter and its processor; `finished()` waits for spans still exporting (the SDK's resource detectors answer late). */
function memory () {
  const exporter = new InMemorySpanExporter()
  const processor = new SimpleSpanProcessor(exporter)
  const finished = async () => {
    await processor.forceFlush()
    return exporter.getFinishedSpans()
  }
  return { exporter, processor, finished }
}

const isQuery = (span: ReadableSpan) => span.attributes['db.system.name'] === 'postgresql'

/** The span and its ancestors among `spans`, nearest first. */
function ancestry (span: ReadableSpan, spans: ReadableSpan[]): ReadableSpan[] {
  const parent = spans.find((other) => other.spanContext().spanId === span.parentSpanContext?.spanId)
  return parent ? [span, ...ancestry(parent, spans)] : [span]
}

t.test('with tracing off nothing is traced, even under an SDK the host started', async (t) => {
  const { processor, finished } = memory()
  const provider = new BasicTracerProvider({ spanProcessors: [processor] })
  t.ok(trace.setGlobalTracerProvider(provider), 'a tracer provider is registered')
  t.teardown(async () => {
    trace.disable()
    await provider.shutdown()
  })
  const app = await build(t)
  t.equal((await app.inject('/api/v1/items/')).statusCode, 200)
  await app.plinthDb.db.execute(sql`select 1`)
  t.equal(queryTracing, false, 'the query paths take their untraced branch')
  t.same(await finished(), [], 'no request span, no query span')
})

t.test('with tracing on', async (t) => {
  const { exporter, processor, finished } = memory()
  const shutdown = await startTracing({ spanProcessors: [processor] })
  t.teardown(shutdown)
  const app = await build(t)
  t.beforeEach(() => exporter.reset())

  t.test('a request gets a span by route, and its queries spans of their own inside its trace', async (t) => {
    const res = await app.inject(`/api/v1/items/?q=${NEEDLE}`)
    t.equal(res.statusCode, 200)
    const spans = await finished()
    const request = spans.find((span) => span.kind === SpanKind.SERVER)
    t.ok(request, 'a span for the request')
    t.equal(request?.name, 'GET /api/v1/items', 'named by method and route template')
    t.equal(request?.attributes['http.route'], '/api/v1/items')
    t.equal(request?.attributes['url.path'], '/api/v1/items/', 'without the query string')
    t.equal(request?.attributes['http.response.status_code'], 200)
    t.equal(request?.resource.attributes['service.name'], process.env.OTEL_SERVICE_NAME ?? 'plinth', 'the service, plinth by default')

    const queries = spans.filter(isQuery)
    t.ok(queries.length > 0, 'spans for the queries')
    for (const query of queries) {
      t.equal(query.kind, SpanKind.CLIENT)
      t.equal(query.name, 'SELECT', 'named after the operation')
      t.equal(query.attributes['db.operation.name'], 'SELECT')
      t.match(query.attributes['db.query.text'], /^select /, 'the statement')
      t.equal(query.spanContext().traceId, request?.spanContext().traceId, 'in the request\'s trace')
      t.ok(ancestry(query, spans).includes(request!), 'under the request span')
      t.equal(query.status.code, SpanStatusCode.UNSET)
    }
    if (app.plinthDb.driver === 'postgres') t.ok(queries.every((query) => query.attributes['db.namespace']), 'the database is named')
    t.notMatch(JSON.stringify(spans.map((span) => span.attributes)), NEEDLE, 'the search text, a parameter, is in no span')
  })

  t.test('a request with a traceparent header continues the caller\'s trace', async (t) => {
    const caller = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' }
    const res = await app.inject({ url: '/api/v1/items/', headers: { traceparent: `00-${caller.traceId}-${caller.spanId}-01` } })
    t.equal(res.statusCode, 200)
    const request = (await finished()).find((span) => span.kind === SpanKind.SERVER)
    t.equal(request?.spanContext().traceId, caller.traceId)
    t.equal(request?.parentSpanContext?.spanId, caller.spanId)
  })

  t.test('no span holds a parameter: not an email, a password or its hash', async (t) => {
    await register(app, EMAIL, PASSWORD)
    await login(app, EMAIL, PASSWORD)
    const spans = await finished()
    t.ok(spans.filter(isQuery).some((span) => /\bfrom "users"/.test(String(span.attributes['db.query.text']))), 'the users were read')
    const recorded = JSON.stringify(spans.map((span) => [span.name, span.attributes, span.events]))
    t.notMatch(recorded, EMAIL)
    t.notMatch(recorded, PASSWORD)
    t.notMatch(recorded, '$argon2', 'no password hash')
  })

  t.test('a failing query gives a span with status ERROR', async (t) => {
    await t.rejects(app.plinthDb.db.execute(sql`select 1/0`))
    const [span, ...others] = (await finished()).filter(isQuery)
    t.equal(others.length, 0, 'one span for the one query')
    t.equal(span?.status.code, SpanStatusCode.ERROR)
    t.match(span?.status.message, /division by zero/)
    t.equal(span?.attributes['db.response.status_code'], '22012', 'the SQLSTATE')
    t.equal(span?.attributes['db.query.text'], 'select 1/0')
    t.ok(span?.events.some((event) => event.name === 'exception'), 'the exception is recorded')
  })

  t.test('after the shutdown, queries are untraced again', async (t) => {
    await shutdown()
    t.equal(queryTracing, false)
    await app.plinthDb.db.execute(sql`select 1`)
    t.same(await finished(), [])
  })
})

t.test('without the SDK packages, the error says what to install', async (t) => {
  const load = (name: string) => t.mockImport<typeof import('../../telemetry/tracing.js')>('../../telemetry/tracing.js', { '@fastify/otel': notInstalled(name) })
  await t.rejects((await load('@fastify/otel')).startTracing(), {
    message: 'tracing needs the OpenTelemetry SDK: run `npm install @opentelemetry/sdk-node@0.222 @fastify/otel@0.21 @opentelemetry/exporter-trace-otlp-proto@0.222`'
  })
  await t.rejects((await load('minimatch')).startTracing(), { message: /Cannot find package 'minimatch'/ }, 'another missing package is not theirs to install')
  t.equal(queryTracing, false)
})

t.test('a query span without an SQL verb or a SQLSTATE', async (t) => {
  const { processor, finished } = memory()
  const shutdown = await startTracing({ spanProcessors: [processor] })
  t.teardown(shutdown)
  const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
  await t.rejects(tracedQuery('(select 1)', () => Promise.reject(refused), 'plinth'))
  await t.rejects(tracedQuery('select 2', () => Promise.reject(new TypeError('boom'))))
  const [first, second] = await finished()
  t.equal(first?.name, 'postgresql', 'named after the database when the statement does not start with a verb')
  t.equal(first?.attributes['db.operation.name'], undefined)
  t.equal(first?.attributes['db.namespace'], 'plinth')
  t.equal(first?.attributes['error.type'], 'ECONNREFUSED', 'the driver\'s code')
  t.equal(first?.attributes['db.response.status_code'], undefined, 'which is no SQLSTATE')
  t.equal(second?.attributes['error.type'], 'TypeError', 'else the error\'s class')
  t.equal(second?.status.code, SpanStatusCode.ERROR)
})
