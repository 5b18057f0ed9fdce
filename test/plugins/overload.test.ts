import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { availableParallelism } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import underPressure from '@fastify/under-pressure'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import { ConfigError, loadConfig } from '../../config.js'
import { dbPlugin, errorsPlugin, healthPlugin, overloadPlugin } from '../../index.js'
import { reserveVerify } from '../../plugins/auth/passwords.js'
import { build, login, PASSWORD, register } from '../support/app.js'
import { freshDatabase } from '../support/database.js'
import { readMetrics, valueOf } from '../support/metrics.js'
import { PROBLEM_TYPE } from '../support/responses.js'
import { until } from '../support/until.js'

const ITEMS = '/api/v1/items'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

function assertShed (t: Test, res: { statusCode: number, headers: Record<string, unknown>, json (): any }, retryAfter: number) {
  t.equal(res.statusCode, 503, 'status')
  t.equal(res.headers['retry-after'], String(retryAfter), 'Retry-After in seconds')
  t.equal(res.headers['content-type'], PROBLEM_TYPE, 'a problem document')
  t.same(res.json(), { type: 'about:blank', title: 'Service Unavailable', status: 503, code: 'SERVER_BUSY', detail: `The server is busy; retry after ${retryAfter} s` })
}

/** A promise that stays pending until released. */
function held () {
  let release!: () => void
  const done = new Promise<void>((resolve) => { release = resolve })
  return { done, release }
}

t.test('malformed thresholds fail the boot, from the environment and as plugin options', async (t) => {
  t.throws(() => loadConfig({ OVERLOAD_MAX_DB_WAITING: '-1' }), new ConfigError('OVERLOAD_MAX_DB_WAITING: expected integer to be greater or equal to 0 (got -1)'))
  t.throws(() => loadConfig({ OVERLOAD_RETRY_AFTER_SECONDS: '0' }), /OVERLOAD_RETRY_AFTER_SECONDS: expected integer to be greater or equal to 1/)
  t.throws(() => loadConfig({ OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: 'soon' }), /OVERLOAD_MAX_EVENT_LOOP_DELAY_MS must be an integer/)
  t.throws(() => loadConfig({ BODY_TIMEOUT_SECONDS: '0' }), /BODY_TIMEOUT_SECONDS: expected integer to be greater or equal to 1/)
  t.throws(() => loadConfig({ MAX_CONNECTIONS_PER_ADDRESS: '-1' }), /MAX_CONNECTIONS_PER_ADDRESS: expected integer to be greater or equal to 0/)
  for (const [options, message] of [
    [{ maxDbWaiting: -1 }, 'overload plugin: maxDbWaiting must be an integer of at least 0 (queries; 0 turns the check off) (got -1)'],
    [{ maxHashWaiting: 1.5 }, 'overload plugin: maxHashWaiting must be an integer of at least 0 (hashes; 0 turns the check off) (got 1.5)'],
    [{ maxEventLoopDelayMs: '200' }, 'overload plugin: maxEventLoopDelayMs must be an integer of at least 0 (milliseconds; 0 turns the check off) (got "200")'],
    [{ retryAfterSeconds: 0 }, 'overload plugin: retryAfterSeconds must be an integer from 1 to 86400 (got 0)'],
    [{ bodyTimeoutMs: 0 }, 'overload plugin: bodyTimeoutMs must be an integer from 1 to 3600000 (got 0)'],
    [{ maxConnectionsPerAddress: -1 }, 'overload plugin: maxConnectionsPerAddress must be an integer of at least 0 (connections; 0 turns the check off) (got -1)'],
    [{ behindProxy: 'yes' }, 'overload plugin: behindProxy must be a boolean (got "yes")']
  ] as const) {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    await t.rejects(async () => { await app.register(overloadPlugin, options as never) }, { code: 'OVERLOAD_INVALID_OPTIONS', message })
  }
})

t.test('past the requests in progress a request is answered 503 with Retry-After before any work, the probes still answer', async (t) => {
  const app = await build(t, { OVERLOAD_MAX_IN_FLIGHT: 2, OVERLOAD_RETRY_AFTER_SECONDS: 5, METRICS_PORT: 0 })
  const gate = held()
  let started = 0
  app.get('/t/slow', async () => {
    started++
    await gate.done
    return 'done'
  })
  const slow = [app.inject('/t/slow'), app.inject('/t/slow')]
  try {
    await until('two requests in progress', () => started === 2 || undefined, 30_000)
    const refused = await app.inject(`${ITEMS}?limit=1`)
    assertShed(t, refused, 5)
    t.equal(refused.headers['x-content-type-options'], 'nosniff', 'with the API\'s security headers')
    assertShed(t, await app.inject('/t/slow'), 5)
    assertShed(t, await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'a', price: 1 } }), 5)
    t.equal(started, 2, 'the refused request never reached its handler')
    t.equal((await app.inject('/api/v1/health')).statusCode, 200, 'liveness is answered')
    t.equal((await app.inject('/api/v1/health/ready')).statusCode, 200, 'and readiness')
  } finally {
    gate.release()
  }
  t.same((await Promise.all(slow)).map((res) => res.payload), ['done', 'done'])
  t.same((await app.inject(`${ITEMS}?limit=1`)).json().items, [], 'the refused POST created nothing, and requests are taken again')
  const metrics = readMetrics(await app.plinthMetrics!.registry.metrics())
  t.equal(valueOf(metrics, 'plinth_shed_requests_total', { reason: 'in_flight' }), 3)
})

t.test('a query beyond the database queue\'s bound is answered 503 with Retry-After at once, and counted', async (t) => {
  const app = await build(t, { OVERLOAD_MAX_DB_WAITING: 1, OVERLOAD_RETRY_AFTER_SECONDS: 7, METRICS_PORT: 0 })
  const created = (await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'a', price: 1 } })).json()
  const database = app.plinthDb
  const { size } = database.load()
  // Transactions hold every connection (PGlite's one), then one read waits: the next is refused.
  const gate = held()
  const holders = Array.from({ length: size }, () => database.db.transaction(async () => { await gate.done }))
  await until('the connections to be held', () => database.load().running === size || undefined)
  const waiting = app.inject(`${ITEMS}/${created.id}`)
  try {
    await until('a read to wait', () => database.load().waiting === 1 || undefined, 30_000)
    assertShed(t, await app.inject(`${ITEMS}/${created.id}`), 7)
    t.equal((await app.inject('/api/v1/health')).statusCode, 200, 'liveness needs no database')
  } finally {
    gate.release()
  }
  await Promise.all(holders)
  t.equal((await waiting).statusCode, 200, 'the read that waited is answered')
  t.equal((await app.inject(`${ITEMS}/${created.id}`)).statusCode, 200, 'and reads are taken again')
  const metrics = readMetrics(await app.plinthMetrics!.registry.metrics())
  t.equal(valueOf(metrics, 'plinth_shed_requests_total', { reason: 'database_queue' }), 1)
})

t.test('0 turns the database bound off', async (t) => {
  const app = await build(t, { OVERLOAD_MAX_DB_WAITING: 0 })
  await app.ready()
  const database = app.plinthDb
  const gate = held()
  const holders = Array.from({ length: database.load().size }, () => database.db.transaction(async () => { await gate.done }))
  const reads = Array.from({ length: 20 }, (_, i) => app.inject(`${ITEMS}?limit=1&offset=${i}`))
  try {
    await until('reads to wait', () => database.load().waiting >= 2 || undefined, 30_000)
  } finally {
    gate.release()
  }
  await Promise.all(holders)
  t.same((await Promise.all(reads)).map((res) => res.statusCode), Array(20).fill(200))
})

t.test('a login beyond the password-hash queue\'s bound is a 503 problem document, not a failure, and counts no attempt', async (t) => {
  const app = await build(t, { OVERLOAD_MAX_HASH_WAITING: 1, OVERLOAD_RETRY_AFTER_SECONDS: 3, LOGIN_MAX_FAILURES: 2, METRICS_PORT: 0 })
  await register(app, 'ada@example.com')
  // Every CPU's slot taken, and the one place to wait: the queue is full.
  const gate = held()
  const busy = Array.from({ length: availableParallelism() }, () => reserveVerify().run(() => gate.done))
  const queued = reserveVerify()
  const form = (password: string) => new URLSearchParams({ grant_type: 'password', username: 'ada@example.com', password }).toString()
  try {
    for (let i = 0; i < 3; i++) {
      const refused = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: FORM, payload: form('wrong password') })
      assertShed(t, refused, 3)
      t.equal(refused.headers['cache-control'], 'no-store', 'the token endpoint\'s answers are never cached')
    }
    assertShed(t, await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email: 'bob@example.com', password: PASSWORD } }), 3)
  } finally {
    queued.cancel()
    gate.release()
  }
  await Promise.all(busy)

  const metrics = readMetrics(await app.plinthMetrics!.registry.metrics())
  t.equal(valueOf(metrics, 'plinth_shed_requests_total', { reason: 'password_queue' }), 4)
  t.equal(valueOf(metrics, 'plinth_login_failures_total'), 0, 'no login failure was counted')
  const wrong = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: FORM, payload: form('wrong password') })
  t.equal(wrong.json().error, 'invalid_grant', 'a failure, not 429: the three refused attempts were not counted')
  t.equal((await login(app, 'ada@example.com')).headers.authorization.startsWith('Bearer '), true, 'and the account still logs in, the second counted attempt')
})

t.test('a login whose client hangs up while it waits for a hash leaves the queue at once and is never verified', async (t) => {
  const app = await build(t, { OVERLOAD_MAX_HASH_WAITING: 2, METRICS_PORT: 0 })
  await register(app, 'ada@example.com')
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const refuse = () => new Error('full')
  const queueHolds = (n: number) => { try { reserveVerify({ queue: { maxWaiting: n, refuse } }).cancel(); return false } catch { return true } }
  const gate = held()
  const busy = Array.from({ length: availableParallelism() }, () => reserveVerify().run(() => gate.done))
  try {
    // Two wrong-password logins, each on its own connection, fill the queue's two places.
    const form = new URLSearchParams({ grant_type: 'password', username: 'ada@example.com', password: 'wrong password' }).toString()
    const requests = [0, 1].map(() => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/api/v1/auth/login', agent: false, headers: { ...FORM, 'content-length': Buffer.byteLength(form) } })
      req.on('error', () => {})
      req.end(form)
      return req
    })
    await until('both logins waiting for a hash', () => queueHolds(2) || undefined, 10_000)
    for (const req of requests) req.destroy()
    await until('the queue emptied while every hash slot is still taken', () => queueHolds(1) ? undefined : true, 10_000)
    const accepted = login(app, 'ada@example.com')
    await until('a new login waiting in the freed place', () => queueHolds(1) || undefined, 10_000)
    gate.release()
    t.equal((await accepted).headers.authorization.startsWith('Bearer '), true, 'a new login takes the place and succeeds')
  } finally {
    gate.release()
  }
  await Promise.all(busy)
  const metrics = readMetrics(await app.plinthMetrics!.registry.metrics())
  t.equal(valueOf(metrics, 'plinth_login_failures_total'), 0, 'the wrong passwords of the clients that left were never verified')
  t.equal(valueOf(metrics, 'plinth_shed_requests_total', { reason: 'password_queue' }), 2, 'they count as shed from the hash queue')
})

t.test('past the event-loop threshold requests are shed with the problem document, and the probes are not', async (t) => {
  const app = await build(t, { OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: 1, OVERLOAD_RETRY_AFTER_SECONDS: 4 })
  await app.ready()
  // A loop blocked long past the threshold makes the next sample's mean delay exceed it.
  const block = (ms: number) => {
    for (const end = Date.now() + ms; Date.now() < end;);
  }
  let shed
  for (const deadline = Date.now() + 60_000; shed === undefined && Date.now() < deadline;) {
    block(300)
    await sleep(1)
    if (!app.isUnderPressure()) continue
    const [items, live, ready] = await Promise.all([app.inject(`${ITEMS}?limit=1`), app.inject('/api/v1/health'), app.inject('/api/v1/health/ready')])
    if (items.statusCode === 503 && app.isUnderPressure()) shed = { items, live, ready }
  }
  if (shed === undefined) throw new Error('no request was shed within 60 s')
  assertShed(t, shed.items, 4)
  t.equal(shed.live.statusCode, 200, 'liveness is never shed')
  t.equal(shed.ready.statusCode, 200, 'nor readiness, which asks the database')
})

t.test('a host that registered @fastify/under-pressure keeps it: plinth adds no second one, and its probes are still answered', async (t) => {
  const logs: string[] = []
  const app = Fastify({ logger: { level: 'info', stream: { write: (line: string) => { logs.push(JSON.parse(line).msg) } } } })
  t.teardown(() => app.close())
  // The host's check always fails: every request but the probes is shed, by the host's rules.
  await app.register(underPressure, { healthCheck: async () => false, healthCheckInterval: 60_000 })
  await app.register(errorsPlugin)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(overloadPlugin, { maxEventLoopDelayMs: 100 })
  await app.register(healthPlugin, { prefix: '/api/v1' })
  app.get('/host', async () => 'host')
  t.ok(logs.includes('overload: the app has its own @fastify/under-pressure; the event-loop check is left to it'))
  t.equal((await app.inject('/host')).statusCode, 503, 'the host\'s pressure rules apply to its routes')
  t.equal((await app.inject('/api/v1/health')).statusCode, 200, 'liveness is answered')
  t.equal((await app.inject('/api/v1/health/ready')).statusCode, 200, 'and readiness')
})
