import t from 'tap'
import { build } from '../support/app.js'

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
