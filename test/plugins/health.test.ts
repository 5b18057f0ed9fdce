import Fastify from 'fastify'
import t from 'tap'
import type { ReplicaReport, ReplicaSet } from '../../db/replicas.js'
import dbPlugin from '../../plugins/db.js'
import healthPlugin from '../../plugins/health.js'
import { build } from '../support/app.js'
import { TEST_DATABASE_URL, freshDatabase } from '../support/database.js'

t.test('liveness answers ok without touching the database', async (t) => {
  const app = await build(t)
  await app.plinthDb.close()
  const res = await app.inject({ method: 'GET', url: '/api/v1/health' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ok' })
})

t.test('readiness answers ok when the database answers', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/v1/health/ready' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ok' })
})

t.test('probes arriving together share one ping; later ones ping again', async (t) => {
  const app = await build(t)
  await app.ready()
  let pings = 0
  const ping = app.plinthDb.ping
  app.plinthDb.ping = () => { pings++; return ping() }
  const probe = () => app.inject({ method: 'GET', url: '/api/v1/health/ready' })
  const together = await Promise.all([probe(), probe(), probe()])
  t.same(together.map((res) => res.statusCode), [200, 200, 200])
  t.equal(pings, 1)
  t.equal((await probe()).statusCode, 200)
  t.equal(pings, 2, 'nothing is cached')
})

t.test('both probes answer with and without a trailing slash', async (t) => {
  const app = await build(t)
  for (const url of ['/api/v1/health/', '/api/v1/health/ready/']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 200, url)
  }
})

// Where a replica is and who connects to it: none of it may reach an anonymous probe.
const REPLICA_URL = 'postgres://replica_reader:hunter2@replica-host.internal:6543/replica_db'
const SECRETS = ['replica_reader', 'hunter2', 'replica-host.internal', '6543', 'replica_db', 'postgres://']

t.test('an anonymous readiness probe shows each replica\'s state, never its user, host, port or database', async (t) => {
  const app = Fastify({ logger: false })
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  // The replica set as the db plugin decorates it, with a report that still holds the URL (logged on a change).
  const report: ReplicaReport = { name: 'replica-1', url: REPLICA_URL, status: 'lagging', lag_bytes: 4096, lag_seconds: 12.5 }
  app.plinthReplicas = { reports: () => [report], check: async () => [report] } as unknown as ReplicaSet
  await app.register(healthPlugin, { prefix: '/api/v1' })
  t.teardown(() => app.close())
  const res = await app.inject({ method: 'GET', url: '/api/v1/health/ready' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { status: 'ok', replicas: [{ name: 'replica-1', status: 'lagging', lag_bytes: 4096, lag_seconds: 12.5 }] })
  for (const secret of SECRETS) t.notMatch(res.payload, secret, `no ${secret}`)
})

t.test('a real replica that does not answer: the probe says down, and nothing of its address', { skip: TEST_DATABASE_URL ? false : 'replicas need TEST_DATABASE_URL' }, async (t) => {
  const unreachable = 'postgres://replica_reader:hunter2@127.0.0.1:1/replica_db'
  const app = await build(t, { DATABASE_URL: TEST_DATABASE_URL, DATABASE_REPLICA_URLS: [unreachable] })
  const res = await app.inject({ method: 'GET', url: '/api/v1/health/ready' })
  t.equal(res.statusCode, 200, 'a replica down leaves the instance ready')
  t.same(res.json(), { status: 'ok', replicas: [{ name: 'replica-1', status: 'down', lag_bytes: null, lag_seconds: null }] })
  for (const secret of ['replica_reader', 'hunter2', '127.0.0.1', ':1/', 'replica_db']) t.notMatch(res.payload, secret, `no ${secret}`)
})
