import { eq } from 'drizzle-orm'
import t from 'tap'
import { loadConfig, type Config } from '../../config.js'
import { loginFailures } from '../../db/schema.js'
import { build, register } from '../support/app.js'

/** The address a failed login was counted under: the login counter keys on request.ip. */
async function countedAddress (settings: Partial<Config>, remoteAddress: string, forwarded?: string) {
  const app = await build(t, { ...settings, LOGIN_MAX_FAILURES: 5 })
  const { email } = await register(app, 'proxied@example.com')
  await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    remoteAddress,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(forwarded ? { 'x-forwarded-for': forwarded } : {}) },
    payload: new URLSearchParams({ username: email, password: 'wrong password' }).toString()
  })
  const rows = await app.plinthDb.db.select().from(loginFailures).where(eq(loginFailures.email, email))
  return rows.map((row) => row.address)
}

t.test('TRUST_PROXY reads as Fastify takes it: false by default, true, a hop count, a list', async (t) => {
  t.equal(loadConfig({}).TRUST_PROXY, false)
  t.equal(loadConfig({ TRUST_PROXY: 'true' }).TRUST_PROXY, true)
  t.equal(loadConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY, false)
  t.equal(loadConfig({ TRUST_PROXY: '1' }).TRUST_PROXY, 1, '1 is one hop, not true')
  t.same(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.1 ,loopback,fd00::/8' }).TRUST_PROXY, ['10.0.0.0/8', '192.168.1.1', 'loopback', 'fd00::/8'])
  for (const bad of ['proxy.example.com', '10.0.0.0/33', '10.0.0/8', '::1/129', '10.0.0.1/8/2']) {
    t.throws(() => loadConfig({ TRUST_PROXY: bad }), { code: 'PLINTH_INVALID_CONFIG', message: /^TRUST_PROXY: / }, bad)
  }
})

t.test('off, a forged X-Forwarded-For changes nothing: the socket\'s address counts', async (t) => {
  t.same(await countedAddress({}, '10.0.0.5', '203.0.113.7'), ['10.0.0.5'])
})

t.test('a list trusts those proxies only', async (t) => {
  t.same(await countedAddress({ TRUST_PROXY: ['10.0.0.0/8'] }, '10.0.0.5', '203.0.113.7'), ['203.0.113.7'], 'from a trusted proxy')
  t.same(await countedAddress({ TRUST_PROXY: ['10.0.0.0/8'] }, '192.0.2.1', '203.0.113.7'), ['192.0.2.1'], 'from anyone else')
})

t.test('a hop count trusts the nearest proxies; true trusts every hop', async (t) => {
  t.same(await countedAddress({ TRUST_PROXY: 1 }, '10.0.0.5', '198.51.100.1, 203.0.113.7'), ['203.0.113.7'], 'the address the one proxy saw')
  t.same(await countedAddress({ TRUST_PROXY: true }, '10.0.0.5', '198.51.100.1, 203.0.113.7'), ['198.51.100.1'], 'the first address of the chain')
})

t.test('off, forged addresses cannot spread the failures of one client', async (t) => {
  const app = await build(t, { LOGIN_MAX_FAILURES: 3 })
  const { email } = await register(app, 'spoofed@example.com')
  const attempt = (i: number) => app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    remoteAddress: '10.0.0.9',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': `203.0.113.${i}` },
    payload: new URLSearchParams({ username: email, password: 'wrong password' }).toString()
  })
  const statuses = []
  for (let i = 1; i <= 4; i++) statuses.push((await attempt(i)).statusCode)
  t.same(statuses, [400, 400, 400, 429])
})

t.test('behind a proxy, its X-Request-Id is the request id the logs carry; a malformed one, or one sent with no proxy set, is not', async (t) => {
  const idOf = async (settings: Partial<Config>, requestId: string) => {
    const app = await build(t, settings)
    let seen = ''
    app.addHook('onResponse', async (request) => { seen = request.id })
    await app.inject({ url: '/api/v1/health', headers: { 'x-request-id': requestId } })
    return seen
  }
  t.equal(await idOf({ TRUST_PROXY: ['127.0.0.1'] }, '5f0c6a1e2b3d4c5e6f708192a3b4c5d6'), '5f0c6a1e2b3d4c5e6f708192a3b4c5d6', 'the proxy\'s id')
  t.match(await idOf({ TRUST_PROXY: 1 }, 'forged\nlevel=fatal'), /^[0-9a-f-]{36}$/, 'a line break or a space is no id: a new one')
  t.match(await idOf({ TRUST_PROXY: 1 }, 'x'.repeat(129)), /^[0-9a-f-]{36}$/, 'nor one of more than 128 characters')
  t.match(await idOf({}, '5f0c6a1e2b3d4c5e6f708192a3b4c5d6'), /^[0-9a-f-]{36}$/, 'no proxy set: a client\'s header is not believed')
})
