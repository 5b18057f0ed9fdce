import { mock } from 'node:test'
import rateLimit from '@fastify/rate-limit'
import { sql } from 'drizzle-orm'
import Fastify, { type LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { buildApp, type App } from '../../../../app.js'
import type { Config } from '../../../../config.js'
import { rateLimits } from '../../../../db/schema.js'
import { NO_RATE_LIMITS, PASSWORD, build, login, movableClock, register } from '../../../support/app.js'
import { freshDatabase } from '../../../support/database.js'
import { assertProblem } from '../../../support/responses.js'
import { until } from '../../../support/until.js'

// Every unauthenticated auth route is limited per client address, counted in the database.
const OFF = NO_RATE_LIMITS

type Send = (app: App, i: number, headers?: Record<string, string>, remoteAddress?: string) => Promise<LightMyRequestResponse>
const post = (url: string, payload: (i: number) => object): Send => (app, i, headers = {}, remoteAddress = '127.0.0.1') =>
  app.inject({ method: 'POST', url: `/api/v1${url}`, payload: payload(i), headers, remoteAddress })

const routes: Array<[name: string, setting: keyof Config, send: Send]> = [
  ['register', 'RATE_LIMIT_REGISTER', post('/auth/register', (i) => ({ email: `limited${i}@example.com`, password: PASSWORD }))],
  ['the password grant', 'RATE_LIMIT_TOKEN', post('/auth/login', () => ({ username: 'nobody@example.com', password: 'wrong password' }))],
  ['the refresh grant', 'RATE_LIMIT_TOKEN', post('/auth/login', () => ({ grant_type: 'refresh_token', refresh_token: 'not.a.token' }))],
  ['refresh', 'RATE_LIMIT_REFRESH', post('/auth/refresh', () => ({ refresh_token: 'not.a.token' }))],
  ['revoke', 'RATE_LIMIT_REVOKE', post('/auth/revoke', () => ({ token: 'not.a.token' }))],
  ['logout', 'RATE_LIMIT_REVOKE', post('/auth/logout', () => ({ refresh_token: 'not.a.token' }))]
]

function assertLimited (t: Test, res: LightMyRequestResponse, limit: number, name: string) {
  assertProblem(t, res, 429, 'RATE_LIMITED', name)
  t.match(res.json().detail, /^Too many requests to \/api\/v1\/auth\/\S+ from this address; retry in \d+ seconds$/, `${name}: detail`)
  const retryAfter = Number(res.headers['retry-after'])
  t.ok(retryAfter >= 1 && retryAfter <= 60, `${name}: Retry-After ${res.headers['retry-after']}`)
  t.equal(res.headers['ratelimit-limit'], String(limit), `${name}: RateLimit-Limit`)
  t.equal(res.headers['ratelimit-remaining'], '0', `${name}: RateLimit-Remaining`)
  t.equal(res.headers['ratelimit-reset'], String(retryAfter), `${name}: RateLimit-Reset`)
}

t.test('each route: its limit per address and window, then 429 with Retry-After and RateLimit headers', async (t) => {
  for (const [name, setting, send] of routes) {
    const app = await build(t, { ...OFF, [setting]: 2 })
    const first = await send(app, 1)
    t.not(first.statusCode, 429, `${name}: first`)
    t.equal(first.headers['ratelimit-limit'], '2', `${name}: RateLimit-Limit on an answer under the limit`)
    t.equal(first.headers['ratelimit-remaining'], '1', `${name}: RateLimit-Remaining`)
    t.ok(Number(first.headers['ratelimit-reset']) > 0, `${name}: RateLimit-Reset`)
    t.not((await send(app, 2)).statusCode, 429, `${name}: second`)
    assertLimited(t, await send(app, 3), 2, name)
    t.not((await send(app, 4, {}, '192.0.2.10')).statusCode, 429, `${name}: another address has its own count`)
  }
})

t.test('routes count apart, and the limit is per route: a full register leaves login open', async (t) => {
  const app = await build(t, { ...OFF, RATE_LIMIT_REGISTER: 1, RATE_LIMIT_TOKEN: 5 })
  await register(app, 'first@example.com')
  assertLimited(t, await routes[0]![2](app, 2), 1, 'the second register')
  const session = await login(app, 'first@example.com')
  t.ok(session.access_token, 'login still answers')
})

t.test('0 turns a route\'s limit off: no count, no headers', async (t) => {
  const app = await build(t, { ...OFF, RATE_LIMIT_REFRESH: 3 })
  for (let i = 0; i < 6; i++) {
    const res = await routes[4]![2](app, i)
    t.equal(res.statusCode, 200, `revoke ${i}`)
    t.notOk(res.headers['ratelimit-limit'])
  }
  t.same(await app.plinthDb.db.select({ key: rateLimits.key }).from(rateLimits), [], 'nothing counted')
})

t.test('concurrent requests in one turn are counted one by one', async (t) => {
  const app = await build(t, { ...OFF, RATE_LIMIT_REGISTER: 5 })
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => routes[0]![2](app, 100 + i)))
  const statuses = answers.map((res) => res.statusCode)
  t.equal(statuses.filter((status) => status === 201).length, 5, `five created in ${statuses.join(',')}`)
  t.equal(statuses.filter((status) => status === 429).length, 7)
  t.same(answers.filter((res) => res.statusCode === 201).map((res) => res.headers['ratelimit-remaining']).sort(), ['0', '1', '2', '3', '4'],
    'each got its own place in the window')
})

t.test('a new window starts when the last one is over', async (t) => {
  const time = movableClock()
  const app = await build(t, { ...OFF, RATE_LIMIT_REVOKE: 1, RATE_LIMIT_WINDOW_SECONDS: 1 }, { clock: time.clock })
  const revoke = routes[4]![2]
  t.equal((await revoke(app, 1)).statusCode, 200)
  const refused = await revoke(app, 2)
  assertLimited(t, refused, 1, 'within the second')
  t.equal(refused.headers['retry-after'], '1')
  time.advance(1100)
  const again = await revoke(app, 3)
  t.equal(again.statusCode, 200, 'the next window')
  t.equal(again.headers['ratelimit-remaining'], '0')
})

t.test('the token endpoint\'s 429 stays a problem document with Retry-After', async (t) => {
  const app = await build(t, { ...OFF, RATE_LIMIT_TOKEN: 1 })
  await register(app, 'oauth@example.com')
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const body = new URLSearchParams({ username: 'oauth@example.com', password: PASSWORD }).toString()
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: form, payload: body })).statusCode, 200)
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: form, payload: body })
  assertLimited(t, res, 1, 'a correct password past the limit')
  t.notOk(res.json().access_token)
})

t.test('behind a trusted proxy each client has its own count; forged X-Forwarded-For changes nothing without one', async (t) => {
  const revoke = routes[4]![2]
  const forwarded = (address: string) => ({ 'x-forwarded-for': address })
  const trusting = await build(t, { ...OFF, RATE_LIMIT_REVOKE: 1, TRUST_PROXY: ['10.0.0.0/8'] })
  t.equal((await revoke(trusting, 1, forwarded('203.0.113.1'), '10.0.0.2')).statusCode, 200)
  t.equal((await revoke(trusting, 2, forwarded('203.0.113.2'), '10.0.0.2')).statusCode, 200, 'another client through the same proxy')
  assertLimited(t, await revoke(trusting, 3, forwarded('203.0.113.1'), '10.0.0.3'), 1, 'the first client again, through another proxy')

  const plain = await build(t, { ...OFF, RATE_LIMIT_REVOKE: 1 })
  t.equal((await revoke(plain, 1, forwarded('203.0.113.1'), '10.0.0.2')).statusCode, 200)
  assertLimited(t, await revoke(plain, 2, forwarded('203.0.113.2'), '10.0.0.2'), 1, 'a forged address is still the socket\'s')
})

t.test('IPv6 clients are counted by their /64', async (t) => {
  const app = await build(t, { ...OFF, RATE_LIMIT_REVOKE: 1 })
  const revoke = routes[4]![2]
  t.equal((await revoke(app, 1, {}, '2001:db8:1:2::10')).statusCode, 200)
  assertLimited(t, await revoke(app, 2, {}, '2001:db8:1:2::99'), 1, 'another address of the same /64')
  t.equal((await revoke(app, 3, {}, '2001:db8:1:3::10')).statusCode, 200, 'another /64')
})

t.test('two apps on one database share the counts', async (t) => {
  const database = await freshDatabase(t)
  const start = async () => {
    const app = await buildApp({ ...OFF, RATE_LIMIT_REFRESH: 3 }, { database, logger: false })
    t.teardown(() => app.close())
    return app
  }
  const [a, b] = [await start(), await start()]
  const refresh = routes[3]![2]
  const statuses = [await refresh(a, 1), await refresh(b, 2), await refresh(a, 3), await refresh(b, 4)].map((res) => res.statusCode)
  t.same(statuses, [401, 401, 401, 429])
})

t.test('the purge deletes counters whose window is over', async (t) => {
  // The purge's interval is ticked by hand, and the window ends on the app's clock.
  mock.timers.enable({ apis: ['setInterval'] })
  t.teardown(() => mock.timers.reset())
  const purges: Array<Record<string, unknown>> = []
  const logger = { level: 'debug', stream: { write: (line: string) => { if (line.includes('purged')) purges.push(JSON.parse(line)) } } }
  const time = movableClock()
  const app = await build(t, { ...OFF, RATE_LIMIT_REVOKE: 5, RATE_LIMIT_WINDOW_SECONDS: 1, PURGE_INTERVAL_SECONDS: 1 }, { clock: time.clock, logger })
  await routes[4]![2](app, 1)
  t.equal((await app.plinthDb.db.select().from(rateLimits)).length, 1, 'counted')
  const purge = async () => {
    const done = purges.length + 1
    mock.timers.tick(1000)
    return until('the purge', () => purges[done - 1], 10_000)
  }
  t.match(await purge(), { rateCounters: 0 }, 'kept while its window is open')
  time.advance(1500)
  t.match(await purge(), { rateCounters: 1 })
  t.same(await app.plinthDb.db.select().from(rateLimits), [], 'purged once its window ended')
})

t.test('a host that registered @fastify/rate-limit keeps it, and plinth\'s limits still hold', async (t) => {
  const host = Fastify()
  t.teardown(() => host.close())
  await host.register(rateLimit, { max: 1000, timeWindow: 60_000 })
  const { default: accounts } = await import('../../../../routes/accounts/index.js')
  const { default: dbPlugin } = await import('../../../../plugins/db.js')
  const { default: authPlugin } = await import('../../../../plugins/auth/index.js')
  await host.register(dbPlugin, { client: await freshDatabase(t) })
  await host.register(authPlugin, { secret: 'a host secret of 32 bytes or more' })
  await host.register(accounts, { prefix: '/api/v1', rateLimits: { windowSeconds: 60, register: 0, token: 0, refresh: 0, revoke: 1 } })
  host.get('/hello', async () => 'hi')
  await host.ready()
  const revoke = () => host.inject({ method: 'POST', url: '/api/v1/auth/revoke', payload: { token: 'x' } })
  t.equal((await revoke()).statusCode, 200)
  // The host's limiter also applies a route's own limits (as it does for any route), in its own store.
  const refused = await revoke()
  t.equal(refused.statusCode, 429, 'past plinth\'s limit')
  t.ok(Number(refused.headers['retry-after']) >= 1)
  const [counted] = await host.plinthDb.db.select({ hits: rateLimits.hits }).from(rateLimits)
  t.ok(counted && counted.hits >= 1, 'plinth counts in its own store too')
  const hello = await host.inject({ method: 'GET', url: '/hello' })
  t.equal(hello.statusCode, 200)
  t.equal(hello.headers['x-ratelimit-limit'], '1000', 'the host\'s own limit on its own route')
})

t.test('bad limits fail the boot', async (t) => {
  const { loadConfig } = await import('../../../../config.js')
  t.throws(() => loadConfig({ RATE_LIMIT_TOKEN: '-1' }), { code: 'PLINTH_INVALID_CONFIG', message: /RATE_LIMIT_TOKEN/ })
  t.throws(() => loadConfig({ RATE_LIMIT_WINDOW_SECONDS: '0' }), { code: 'PLINTH_INVALID_CONFIG', message: /RATE_LIMIT_WINDOW_SECONDS/ })
  const { resolveAccountsOptions } = await import('../../../../routes/accounts/options.js')
  t.throws(() => resolveAccountsOptions({ rateLimits: { windowSeconds: 60, register: 1, token: 1, refresh: 1, revoke: -1 } }),
    { code: 'ACCOUNTS_INVALID_OPTIONS', message: 'accounts plugin: rateLimits.revoke must be an integer of at least 0 (got -1)' })
  t.throws(() => resolveAccountsOptions({ rateLimits: { tokens: 5 } as never }),
    { code: 'ACCOUNTS_INVALID_OPTIONS', message: /rateLimits.tokens is unknown/ })
  t.same(resolveAccountsOptions({}).rateLimits, {
    windowSeconds: 60, register: 20, token: 60, refresh: 120, revoke: 60, passwordReset: 10, verify: 10, passwordCheck: 10, mailsPerEmail: 5, mailWindowSeconds: 3600
  }, 'on by default')
})

t.test('the document shows 429 on the routes whose limit is on', async (t) => {
  const app = await build(t, { ...OFF, RATE_LIMIT_REGISTER: 5 })
  const paths = (await app.inject({ method: 'GET', url: '/docs/json' })).json().paths
  const register = paths['/api/v1/auth/register'].post.responses['429']
  t.equal(register?.content['application/problem+json'].example.code, 'RATE_LIMITED', 'register, limited')
  t.notOk(paths['/api/v1/auth/refresh'].post.responses['429'], 'refresh, not limited')
})

t.test('the counters live in an unlogged table: no WAL flush per count', async (t) => {
  const app = await build(t)
  const [row] = await app.plinthDb.db.select({ relpersistence: sql<string>`relpersistence` }).from(sql`pg_class`).where(sql`relname = 'rate_limits'`)
  t.equal(row?.relpersistence, 'u')
})
