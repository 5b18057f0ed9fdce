import t from 'tap'
import { build } from '../support/app.js'

const FRONT_END = 'http://localhost:3000'

const preflight = (origin: string) => ({
  method: 'OPTIONS' as const,
  url: '/api/v1/health',
  headers: { origin, 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization,content-type' }
})

t.test('a listed origin is allowed, preflight included', async (t) => {
  const app = await build(t, { BACKEND_CORS_ORIGINS: [FRONT_END, 'https://app.example.com'] })
  const res = await app.inject(preflight(FRONT_END))
  t.equal(res.statusCode, 204)
  t.equal(res.headers['access-control-allow-origin'], FRONT_END)
  t.match(res.headers['access-control-allow-methods'], /PATCH/)
  t.match(res.headers['access-control-allow-headers'], /Authorization/i)
  t.match(res.headers.vary, /Origin/)

  const get = await app.inject({ method: 'GET', url: '/api/v1/health', headers: { origin: FRONT_END } })
  t.equal(get.statusCode, 200)
  t.equal(get.headers['access-control-allow-origin'], FRONT_END)
  t.same(String(get.headers['access-control-expose-headers']).split(/, ?/), ['WWW-Authenticate', 'Retry-After', 'Link', 'X-Total-Count'], 'a browser may read the challenge, the wait, and a list\'s next page and count')
})

t.test('any other origin gets no allow header', async (t) => {
  const app = await build(t, { BACKEND_CORS_ORIGINS: [FRONT_END] })
  for (const origin of ['http://evil.example', 'http://localhost:3000.evil.example', 'http://localhost:30001']) {
    const res = await app.inject({ method: 'GET', url: '/api/v1/health', headers: { origin } })
    t.equal(res.statusCode, 200, origin)
    t.notOk(res.headers['access-control-allow-origin'], `${origin} is not allowed`)
    const pre = await app.inject(preflight(origin))
    t.notOk(pre.headers['access-control-allow-origin'], `${origin} preflight is not allowed`)
  }
})

t.test('no origins configured: no CORS headers at all', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/api/v1/health', headers: { origin: FRONT_END } })
  t.equal(res.statusCode, 200)
  t.notOk(res.headers['access-control-allow-origin'])
})
