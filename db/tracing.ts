import { SpanKind, SpanStatusCode, trace, type Attributes, type Tracer } from '@opentelemetry/api'
import { sqlState } from './errors.js'

/** Read by the query paths before anything else: while false they never call into @opentelemetry/api. */
export let queryTracing = false
let tracer: Tracer | undefined

/** One CLIENT span per query from now on (or none again with `false`); call it after the SDK has started. */
export function enableQueryTracing (on = true): void {
  queryTracing = on
  // Fetched now, not once for good: a tracer resolved under an SDK since shut down would drop every span.
  tracer = on ? trace.getTracer('plinth') : undefined
}

/** Runs `run`, the query `text`, in a span holding the statement: never its parameters, which carry password hashes and tokens. */
export async function tracedQuery<T> (text: string, run: () => PromiseLike<T>, namespace?: string): Promise<T> {
  const operation = /^\s*([a-z]+)/i.exec(text)?.[1]?.toUpperCase()
  const attributes: Attributes = { 'db.system.name': 'postgresql', 'db.query.text': text }
  if (operation) attributes['db.operation.name'] = operation
  if (namespace) attributes['db.namespace'] = namespace
  const span = (tracer ?? trace.getTracer('plinth')).startSpan(operation ?? 'postgresql', { kind: SpanKind.CLIENT, attributes })
  try {
    return await run()
  } catch (err) {
    const state = sqlState(err)
    if (state) span.setAttribute('db.response.status_code', state)
    // The SQLSTATE, else the driver's code (ECONNREFUSED), else the error's class.
    span.setAttribute('error.type', state ?? (err as { code?: string } | null)?.code ?? (err as Error | null)?.name ?? 'Error')
    span.recordException(err as Error)
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error | null)?.message })
    throw err
  } finally {
    span.end()
  }
}

export const traced = <A extends [string, ...unknown[]], R>(call: (...args: A) => Promise<R>) =>
  (...args: A): Promise<R> => queryTracing ? tracedQuery(args[0], () => call(...args)) : call(...args)
