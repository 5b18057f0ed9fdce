import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { levels } from 'pino'
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { serverBusyIn, type ShedReason } from '../concurrency/busy.js'
import { shown } from '../http/options.js'
import { canonicalUrl } from '../http/trailing-slash.js'
import type { App } from '../http/types.js'
import type { ReplicaReport, ReplicaSet } from '../db/replicas.js'
import { defineProblems } from '../http/problem-error.js'

export const metricsProblems = defineProblems({ InvalidMetricsOptions: { code: 'METRICS_INVALID_OPTIONS', message: 'metricsPlugin: %s' } })
export const { InvalidMetricsOptions } = metricsProblems

export type PlinthEvent = 'login_failure' | 'refresh_reuse' | 'session_ended' | 'mail_sent' | 'mail_failed'

export interface PlinthMetrics {
  /** Every plinth metric is registered here; serve `registry.metrics()` as `registry.contentType`. */
  registry: Registry
  count (event: PlinthEvent, n?: number): void
  /** Counts a request shed under overload that no error reported (overloadPlugin's direct refusals). */
  shed (reason: ShedReason): void
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Set by metricsPlugin; without it nothing is measured. */
    plinthMetrics?: PlinthMetrics
  }
}

export interface MetricsOptions {
  /** A prom-client registry of the host's to add plinth's metrics to; a new one by default. */
  registry?: Registry
  /** Node's process metrics (CPU, memory, event loop, GC), unless the registry has them already. Default true. */
  processMetrics?: boolean
}

const EVENTS: Record<PlinthEvent, [name: string, help: string]> = {
  login_failure: ['plinth_login_failures_total', 'Password grants refused for a wrong email or password'],
  refresh_reuse: ['plinth_refresh_reuse_detected_total', 'Revoked refresh tokens presented again, each ending its session'],
  session_ended: ['plinth_sessions_ended_total', 'Sessions ended, however they ended'],
  mail_sent: ['plinth_mails_sent_total', 'Account mails the mail server accepted'],
  mail_failed: ['plinth_mails_failed_total', 'Account mails the mail server refused or did not take in time']
}

// Seconds.
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'other']

interface Series { labels: Record<string, string>, buckets: number[], sum: number, count: number }

/** The request histogram in the shape of prom-client's Histogram `get()`, so it serializes and sums across workers. */
class RequestDurations {
  readonly name = 'http_request_duration_seconds'
  readonly help = 'Time to answer a request, by method, route template and status class'
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private routes = new Map<string, Map<string, Series[]>>()

  observe (method: string, route: string, status: number, seconds: number) {
    let methods = this.routes.get(route)
    if (!methods) this.routes.set(route, methods = new Map())
    let classes = methods.get(method)
    if (!classes) methods.set(method, classes = [])
    const index = status >= 100 && status < 600 ? Math.floor(status / 100) - 1 : 5
    const series = classes[index] ??= { labels: { method, route, status_class: STATUS_CLASSES[index]! }, buckets: BUCKETS.map(() => 0), sum: 0, count: 0 }
    let bucket = 0
    while (bucket < BUCKETS.length && seconds > BUCKETS[bucket]!) bucket++
    if (bucket < BUCKETS.length) series.buckets[bucket]!++
    series.sum += seconds
    series.count++
  }

  get () {
    const values: Array<{ labels: Record<string, string | number>, value: number, metricName: string }> = []
    for (const methods of this.routes.values()) {
      for (const series of [...methods.values()].flat().filter(Boolean)) {
        let below = 0
        BUCKETS.forEach((le, i) => {
          below += series.buckets[i]!
          values.push({ labels: { ...series.labels, le }, value: below, metricName: `${this.name}_bucket` })
        })
        values.push(
          { labels: { ...series.labels, le: '+Inf' }, value: series.count, metricName: `${this.name}_bucket` },
          { labels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
          { labels: series.labels, value: series.count, metricName: `${this.name}_count` }
        )
      }
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  reset () {
    this.routes = new Map()
  }
}

/** The replicas' state as the last check saw it, and where reads went; each read from the replica set when scraped. */
function replicaMetrics (replicas: ReplicaSet): Array<Gauge | Counter> {
  // Across WORKERS: a replica serves if every worker's checks find it well, and lags as much as the worst of them sees.
  const perReplica = (name: string, help: string, aggregator: 'min' | 'max', read: (report: ReplicaReport) => number | null) => new Gauge({
    name,
    help,
    aggregator,
    labelNames: ['replica'],
    registers: [],
    collect () {
      // A down replica has no lag: its series is absent rather than a stale figure.
      this.reset()
      for (const report of replicas.reports()) {
        const value = read(report)
        if (value !== null) this.set({ replica: report.name }, value)
      }
    }
  })
  // The set keeps the totals; a scrape copies them.
  const total = (name: string, help: string, labelNames: string[], copy: (counter: Counter) => void) => new Counter({
    name,
    help,
    labelNames,
    registers: [],
    collect () {
      this.reset()
      copy(this)
    }
  })
  return [
    perReplica('plinth_db_replica_serving', 'Whether the replica serves reads: 1 when well, 0 while down or past the lag bound', 'min', (report) => report.status === 'ok' ? 1 : 0),
    perReplica('plinth_db_replica_lag_seconds', 'How far the replica is behind the primary, in seconds', 'max', (report) => report.lag_seconds),
    perReplica('plinth_db_replica_lag_bytes', 'WAL bytes the primary holds that the replica has not replayed', 'max', (report) => report.lag_bytes),
    total('plinth_db_reads_total', 'Reads sent to a replica, or to the primary when no replica had what the read must see', ['target'], (counter) => {
      const { replica, primary } = replicas.reads()
      counter.inc({ target: 'replica' }, replica)
      counter.inc({ target: 'primary' }, primary)
    }),
    total('plinth_db_replica_failed_reads_total', 'Replica reads that failed for want of their server and ran again on the primary', [], (counter) => {
      counter.inc(replicas.reads().failed)
    })
  ]
}

function readMetricsOptions (opts: MetricsOptions): Required<MetricsOptions> {
  const { registry = new Registry(), processMetrics = true } = opts
  if (typeof registry?.registerMetric !== 'function') throw new InvalidMetricsOptions(`registry must be a prom-client Registry (got ${shown(registry)})`)
  if (typeof processMetrics !== 'boolean') throw new InvalidMetricsOptions(`processMetrics must be a boolean (got ${shown(processMetrics)})`)
  return { registry, processMetrics }
}

/** Prometheus metrics of requests, database queries, profile events and the process; register after db, before the profiles. */
async function metricsPlugin (app: App, opts: MetricsOptions) {
  const { registry, processMetrics } = readMetricsOptions(opts)
  const registers = [registry]
  const durations = new RequestDurations()
  registry.registerMetric(durations as never)
  const throttled = new Counter({ name: 'plinth_throttled_requests_total', help: 'Requests answered 429, by route template', labelNames: ['route'], registers })
  const shed = new Counter({ name: 'plinth_shed_requests_total', help: 'Requests answered 503 under overload, by what was full', labelNames: ['reason'], registers })
  const events = Object.fromEntries(Object.entries(EVENTS).map(([event, [name, help]]) => [event, new Counter({ name, help, registers })])) as Record<PlinthEvent, Counter>

  if (app.hasDecorator('plinthDb')) {
    const database = app.plinthDb
    const labels = { driver: database.driver }
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({ name, help, labelNames: ['driver'], registers, collect () { this.set(labels, read()) } })
    gauge('plinth_db_queries_running', 'Queries the database runs now: connections in use, or PGlite\'s one', () => database.load().running)
    gauge('plinth_db_queries_waiting', 'Queries waiting for a connection, or in PGlite\'s queue', () => database.load().waiting)
    gauge('plinth_db_pool_size', 'Queries the database may run at once', () => database.load().size)
  }
  if (app.hasDecorator('plinthReplicas') && app.plinthReplicas !== null) {
    for (const metric of replicaMetrics(app.plinthReplicas)) registry.registerMetric(metric)
  }
  if (processMetrics && registry.getSingleMetric('process_cpu_seconds_total') === undefined) collectDefaultMetrics({ register: registry })

  app.addHook('onResponse', (request, reply, done) => {
    // The template, never the path: one series per route whatever the ids, its trailing-slash alias included.
    const route = request.routeOptions.url === undefined ? 'unmatched' : canonicalUrl(request.routeOptions.url)
    durations.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000)
    if (reply.statusCode === 429) throttled.inc({ route })
    done()
  })
  app.addHook('onError', (_request, _reply, error, done) => {
    const busy = serverBusyIn(error)
    if (busy) shed.inc({ reason: busy.reason })
    done()
  })
  app.decorate('plinthMetrics', {
    registry,
    count: (event: PlinthEvent, n = 1) => { events[event].inc(n) },
    shed: (reason: ShedReason) => { shed.inc({ reason }) }
  })
}

export default fp(metricsPlugin, { name: 'plinth-metrics', fastify: '5.x' })

const uncounted = () => {}

/** Counts an event on the app's metrics, or nothing when metricsPlugin is not registered. */
export const eventCounter = (app: FastifyInstance): PlinthMetrics['count'] => app.plinthMetrics?.count ?? uncounted

/** `GET /metrics` on a listener of its own, so the API's port never serves it; a failed read is logged to `logger`. */
export function metricsServer (read: () => Promise<string>, contentType: string, logger?: FastifyBaseLogger): FastifyInstance {
  // Failures only: the API's logs say when the server listens, and a scrape is no news.
  const quiet = logger?.child({ listener: 'metrics' }, { level: (levels.values[logger.level] ?? 0) > levels.values.warn! ? logger.level : 'warn' })
  const server = Fastify(quiet ? { loggerInstance: quiet } : { logger: false })
  server.get('/metrics', async (_request, reply) => reply.type(contentType).send(await read()))
  return server
}
