import t from 'tap'
import { build } from '../helper.js'

t.test('liveness answers ok without touching the database', async (t) => {
  const app = await build(t)
  await app.dbClient.close()
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

t.test('both probes answer with and without a trailing slash', async (t) => {
  const app = await build(t)
  for (const url of ['/api/v1/health/', '/api/v1/health/ready/']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.statusCode, 200, url)
  }
})
