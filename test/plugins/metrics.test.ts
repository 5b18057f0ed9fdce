import { setTimeout as sleep } from 'node:timers/promises'
import Fastify from 'fastify'
import { AggregatorRegistry, Registry, collectDefaultMetrics } from 'prom-client'
import t from 'tap'
import { resolveConfig } from '../../config.js'
import authPlugin from '../../plugins/auth/index.js'
import dbPlugin from '../../plugins/db.js'
import metricsPlugin, { metricsServer } from '../../plugins/metrics.js'
import type { ReplicaSet } from '../../db/replicas.js'
import { build, login, register } from '../support/app.js'
import accountsPlugin from '../../routes/accounts/index.js'
import { freshDatabase } from '../support/database.js'
import { readMetrics, valueOf } from '../support/metrics.js'

const ITEM = '/api/v1/items/:item_id'

t.test('without METRICS_PORT nothing is measured', async (t) => {
  const app = await build(t)
  await app.ready()
  t.equal(app.plinthMetrics, undefined)
  t.equal((await app.inject('/metrics')).statusCode, 404, 'and the API never serves /metrics')
})

t.test('requests are timed by method, route template and status class', async (t) => {
  const app = await build(t, { METRICS_PORT: 0 })
  const created = await app.inject({ method: 'POST', url: '/api/v1/items/', payload: { name: 'a', price: 1 } })
  for (const id of [created.json().id, created.json().id, 999_999]) await app.inject(`/api/v1/items/${id}`)
  await app.inject('/api/v1/no-such-route/42')
  t.equal((await app.inject('/metrics')).statusCode, 404, 'the API never serves /metrics')

  const metrics = readMetrics(await app.plinthMetrics!.registry.metrics())
  const duration = 'http_request_duration_seconds'
  t.equal(metrics.get(duration)?.type, 'histogram')
  t.equal(valueOf(metrics, duration, { method: 'GET', route: ITEM, status_class: '2xx' }), 2, 'one series for every id')
  t.equal(valueOf(metrics, duration, { method: 'GET', route: ITEM, status_class: '4xx' }), 1)
  t.equal(valueOf(metrics, duration, { method: 'POST', route: '/api/v1/items', status_class: '2xx' }), 1)
  t.equal(valueOf(metrics, duration, { route: 'unmatched', status_class: '4xx' }), 2, 'paths of no route share one series')
  t.notOk(metrics.get(duration)!.samples.some((sample) => /\/\d+(\/|$)/.test(sample.labels.route ?? '')), 'no path with an id becomes a label')
  const sum = valueOf(metrics, duration, { route: ITEM, status_class: '2xx' }, `${duration}_sum`)
  t.ok(sum > 0 && sum < 5, `durations are in seconds (sum ${sum})`)
  t.equal(valueOf(metrics, duration, { route: ITEM, status_class: '2xx', le: '0.001' }, `${duration}_bucket`) <= 2, true, 'buckets by seconds')

  t.equal(valueOf(metrics, 'plinth_db_pool_size', { driver: app.plinthDb.driver }), app.plinthDb.driver === 'pglite' ? 1 : 10)
  t.equal(valueOf(metrics, 'plinth_db_queries_running'), 0, 'nothing runs between requests')
  t.equal(valueOf(metrics, 'plinth_db_queries_waiting'), 0)
  t.ok(metrics.has('process_cpu_seconds_total') && metrics.has('nodejs_eventloop_lag_seconds'), 'process metrics')
})

t.test('login failures, throttled requests, sessions ended and reuse detections are counted', async (t) => {
  const app = await build(t, { METRICS_PORT: 0, RATE_LIMIT_TOKEN: 3, REFRESH_REUSE_DETECTION: true, REFRESH_REUSE_INTERVAL_SECONDS: 0 })
  await register(app, 'counted@example.com')
  const session = await login(app, 'counted@example.com')
  const wrong = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'username=counted@example.com&password=wrong-password'
  })
  t.equal(wrong.statusCode, 400)
  const tooMany = await Promise.all([1, 2].map(() => app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: {} })))
  t.same(tooMany.map((res) => res.statusCode).sort(), [400, 429], 'the third request of the window is throttled')

  const rotated = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  t.equal(rotated.statusCode, 200)
  const replayed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  t.equal(replayed.statusCode, 401, 'the spent token presented again ends the session')
  await login(app, 'counted@example.com').catch(() => {})

  const metrics = readMetrics(await app.plinthMetrics!.registry.metrics())
  t.equal(valueOf(metrics, 'plinth_login_failures_total'), 1, 'the wrong password, not the malformed request')
  t.equal(valueOf(metrics, 'plinth_throttled_requests_total', { route: '/api/v1/auth/login' }), 2, 'the 429s, by route')
  t.equal(valueOf(metrics, 'plinth_refresh_reuse_detected_total'), 1)
  t.equal(valueOf(metrics, 'plinth_sessions_ended_total'), 1)
  t.equal(valueOf(metrics, 'http_request_duration_seconds', { route: '/api/v1/auth/login', status_class: '4xx' }), 4)
})

t.test('mails sent and failed are counted, as the mail server saw them', async (t) => {
  let refuse = false
  const taken: string[] = []
  const refused: string[] = []
  const app = Fastify({ logger: false })
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(metricsPlugin, { processMetrics: false })
  await app.register(authPlugin, { secret: 'a metrics test secret, 32 bytes or more' })
  await app.register(accountsPlugin, {
    prefix: '/api/v1',
    rateLimits: { passwordReset: 0, mailsPerEmail: 0 },
    sendMail: async (message) => {
      if (refuse) {
        refused.push(message.kind)
        throw new Error('the mail server is down')
      }
      taken.push(message.kind)
    }
  })
  t.teardown(() => app.close())
  await register(app as never, 'mailed@example.com')
  const counts = async () => {
    const metrics = readMetrics(await app.plinthMetrics!.registry.metrics())
    return [valueOf(metrics, 'plinth_mails_sent_total'), valueOf(metrics, 'plinth_mails_failed_total')]
  }
  // Mail goes out after the answer: wait until the counts reach what the mail server saw, a few seconds at most.
  const settled = async (until: () => boolean) => {
    for (let i = 0; i < 500 && !(until() && (await counts()).join() === `${taken.length},${refused.length}`); i++) await sleep(20)
  }
  const forgot = () => app.inject({ method: 'POST', url: '/api/v1/auth/forgot-password', payload: { email: 'mailed@example.com' } })
  t.equal((await forgot()).statusCode, 202)
  await settled(() => taken.includes('reset-password'))
  refuse = true
  t.equal((await forgot()).statusCode, 202, 'a failed mail is never the answer')
  await settled(() => refused.includes('reset-password'))
  t.ok(taken.includes('reset-password') && refused.includes('reset-password'), `taken ${taken.join()}, refused ${refused.join()}`)
  t.same(await counts(), [taken.length, refused.length], 'one count for each mail the server took, one for each it refused')
  t.notOk(readMetrics(await app.plinthMetrics!.registry.metrics()).has('process_cpu_seconds_total'), 'processMetrics: false')
})

t.test('metricsServer answers GET /metrics in the Prometheus text format, and nothing else', async (t) => {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const server = metricsServer(() => registry.metrics(), registry.contentType)
  t.teardown(() => server.close())
  const res = await server.inject('/metrics')
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], registry.contentType)
  t.ok(readMetrics(res.payload).has('process_resident_memory_bytes'))
  t.equal((await server.inject('/')).statusCode, 404)
  t.equal((await server.inject({ method: 'POST', url: '/metrics' })).statusCode, 404)
})

t.test('a host\'s registry takes plinth\'s metrics beside its own, process metrics once', async (t) => {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const app = Fastify({ logger: false })
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(metricsPlugin, { registry })
  app.get('/hello', async () => 'hi')
  t.teardown(() => app.close())
  await app.inject('/hello')
  const metrics = readMetrics(await registry.metrics())
  t.equal(valueOf(metrics, 'http_request_duration_seconds', { route: '/hello', status_class: '2xx' }), 1)
  t.ok(metrics.has('process_cpu_seconds_total'))
  t.equal(app.plinthMetrics?.registry, registry)
})

t.test('replica metrics read the replica set at each scrape, and sum over workers as a replica is seen at worst', async (t) => {
  // The replica set's own answers, as a worker's would be; the real set against a real replica is in test/db/replicas.test.ts.
  const worker = (serving: boolean, lagSeconds: number | null, reads: ReturnType<ReplicaSet['reads']>) => ({
    reports: () => [
      { name: 'replica-1', url: 'postgres://replica-1/app', status: serving ? 'ok' : 'down', lag_bytes: lagSeconds === null ? null : 2048, lag_seconds: lagSeconds },
      { name: 'replica-2', url: 'postgres://replica-2/app', status: 'lagging', lag_bytes: 9000, lag_seconds: 12 }
    ],
    reads: () => reads
  }) as unknown as ReplicaSet
  const scrape = async (replicas: ReplicaSet) => {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    app.decorate('plinthReplicas', replicas)
    await app.register(metricsPlugin, { processMetrics: false }).ready()
    return app.plinthMetrics!.registry.getMetricsAsJSON()
  }
  const first = await scrape(worker(true, 0.5, { replica: 7, primary: 2, failed: 0 }))
  const second = await scrape(worker(false, null, { replica: 3, primary: 4, failed: 1 }))
  const one = readMetrics(await AggregatorRegistry.aggregate([first]).metrics())
  t.equal(valueOf(one, 'plinth_db_replica_serving', { replica: 'replica-1' }), 1)
  t.equal(valueOf(one, 'plinth_db_replica_serving', { replica: 'replica-2' }), 0, 'lagging serves nothing')
  t.equal(valueOf(one, 'plinth_db_replica_lag_seconds', { replica: 'replica-2' }), 12)
  t.equal(valueOf(one, 'plinth_db_replica_lag_bytes', { replica: 'replica-1' }), 2048)
  t.equal(valueOf(one, 'plinth_db_reads_total', { target: 'replica' }), 7)
  const down = readMetrics(await AggregatorRegistry.aggregate([second]).metrics())
  t.same(down.get('plinth_db_replica_lag_seconds')!.samples.map((sample) => sample.labels.replica), ['replica-2'], 'a replica that is down has no lag')
  const both = readMetrics(await AggregatorRegistry.aggregate([first, second]).metrics())
  t.equal(valueOf(both, 'plinth_db_replica_serving', { replica: 'replica-1' }), 0, 'serving only if every worker finds it well')
  t.equal(valueOf(both, 'plinth_db_replica_lag_seconds', { replica: 'replica-1' }), 0.5, 'the worst lag a worker saw')
  t.equal(valueOf(both, 'plinth_db_reads_total', { target: 'replica' }), 10, 'reads add up')
  t.equal(valueOf(both, 'plinth_db_reads_total', { target: 'primary' }), 6)
  t.equal(valueOf(both, 'plinth_db_replica_failed_reads_total'), 1)
})

t.test('bad options fail the boot', async (t) => {
  for (const [options, message] of [
    [{ registry: {} }, /registry must be a prom-client Registry \(got \{\}\)/],
    [{ processMetrics: 'yes' }, /processMetrics must be a boolean \(got "yes"\)/]
  ] as const) {
    const app = Fastify({ logger: false })
    await t.rejects(async () => { await app.register(metricsPlugin, options as never).ready() }, message)
    await app.close()
  }
})

t.test('METRICS_PORT is never the API\'s port', async (t) => {
  t.throws(() => resolveConfig({ PORT: 9100, METRICS_PORT: 9100 }), /METRICS_PORT \(9100\) must differ from PORT/)
  t.throws(() => resolveConfig({ METRICS_PORT: 70_000 }), /METRICS_PORT/)
  t.equal(resolveConfig({ METRICS_PORT: 9100 }).METRICS_HOST, '127.0.0.1', 'bound to the loopback unless told otherwise')
})

t.test('the exposition reader refuses what a Prometheus scrape would', async (t) => {
  const family = '# HELP x_total x\n# TYPE x_total counter\n'
  t.equal(valueOf(readMetrics(`${family}x_total{a="1"} 2\nx_total{a="2"} 3\n`), 'x_total'), 5)
  for (const [text, why] of [
    [`${family}x_total 1`, /ends with a line feed/],
    [`${family}y_total 1\n`, /outside the family/],
    [`${family}x_total{a="1"} 1\nx_total{a="1"} 2\n`, /twice/],
    [`${family}x_total{a=1} 1\n`, /bad labels/],
    [`${family}x_total one\n`, /bad value/],
    ['# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\nh_sum 1\n', /not cumulative/],
    ['# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_count 1\nh_sum 1\n', /not the count/]
  ] as const) t.throws(() => readMetrics(text), why, JSON.stringify(text))
})
