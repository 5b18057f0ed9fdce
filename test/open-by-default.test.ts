import { eq } from 'drizzle-orm'
import t from 'tap'
import { ConfigError, loadConfig, resolveConfig } from '../config.js'
import { users } from '../db/schema.js'
import { build, login, newAccount, register } from './support/app.js'

// The server mounts the catalog and `records`, open, unless its settings say otherwise: each of
// them can be guarded or left out, and no setting that does neither is taken silently.

t.test('RECORDS_WRITE_SCOPE: anonymous and unscoped writes to records are refused, reads stay open', async (t) => {
  const app = await build(t, { RESOURCES: ['records', 'notes'], RECORDS_WRITE_SCOPE: 'records:write' })
  const anonymous = await app.inject({ method: 'POST', url: '/api/v1/records/', payload: { title: 'x' } })
  t.equal(anonymous.statusCode, 401, 'POST without a token')
  t.equal(anonymous.json().code, 'AUTH_NOT_AUTHENTICATED')

  const { session } = await newAccount(app)
  const unscoped = await app.inject({ method: 'POST', url: '/api/v1/notes/', headers: session.headers, payload: { title: 'x' } })
  t.equal(unscoped.statusCode, 403, 'every resource of RESOURCES: notes too')
  t.equal(unscoped.json().code, 'AUTH_INSUFFICIENT_SCOPE')

  const writer = await register(app, 'records-writer@example.com')
  await app.plinthDb.db.update(users).set({ scopes: 'me,records:write' }).where(eq(users.id, writer.id))
  const { headers } = await login(app, 'records-writer@example.com')
  const created = await app.inject({ method: 'POST', url: '/api/v1/records/', headers, payload: { title: 'x' } })
  t.equal(created.statusCode, 201, 'a token with the scope writes')
  const url = `/api/v1/records/${created.json().id as number}`
  for (const [method, payload] of [['PUT', { title: 'y' }], ['DELETE', undefined]] as const) {
    t.equal((await app.inject({ method, url, payload })).statusCode, 401, `${method} without a token`)
    t.equal((await app.inject({ method, url, headers: session.headers, payload })).statusCode, 403, `${method} without the scope`)
  }
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 200, 'a read needs nothing')
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/records/' })).statusCode, 200)

  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const collection = Object.entries(document.paths).find(([path]) => /^\/api\/v1\/records\/?$/.test(path))?.[1] as Record<string, { security?: unknown }>
  t.same(collection.post!.security, [{ OAuth2PasswordBearer: [] }], 'the document asks for the token')
  t.equal(collection.get!.security, undefined)
  const metadata = (await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json()
  t.ok(metadata.scopes_supported.includes('records:write'), 'the scope is advertised')
})

t.test('without RECORDS_WRITE_SCOPE the records stay open, as the seed has them', async (t) => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/records/', payload: { title: 'x' } })).statusCode, 201)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/items', payload: { name: 'lamp', price: 1 } })).statusCode, 201)
})

t.test('CATALOG=false unmounts /items: its routes are 404 and gone from the document', async (t) => {
  t.equal(loadConfig({ CATALOG: 'false' }).CATALOG, false)
  t.equal(loadConfig({}).CATALOG, true, 'mounted by default')
  const app = await build(t, { CATALOG: false })
  const list = await app.inject({ method: 'GET', url: '/api/v1/items' })
  t.equal(list.statusCode, 404)
  t.equal(list.json().code, 'ROUTE_NOT_FOUND')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/items', payload: { name: 'lamp', price: 1 } })).statusCode, 404)
  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  t.same(Object.keys(document.paths).filter((path) => path.startsWith('/api/v1/items')), [])
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/records/', payload: { title: 'x' } })).statusCode, 201, 'the rest is served')
})

t.test('RESOURCES=none mounts no generic resource', async (t) => {
  t.same(loadConfig({ RESOURCES: 'none' }).RESOURCES, [])
  t.same(loadConfig({ RESOURCES: ' none ' }).RESOURCES, [])
  const app = await build(t, loadConfig({ RESOURCES: 'none' }))
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/records/' })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/none/' })).statusCode, 404, 'no resource named none either')
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/items' })).statusCode, 200, 'the catalog stays')
})

t.test('a RESOURCES of commas alone, or none beside names, is refused with the fix', async (t) => {
  for (const raw of [',', ' , ,', 'none,notes']) {
    const error = t.throws(() => loadConfig({ RESOURCES: raw }), ConfigError, raw) as Error
    t.match(error.message, /^RESOURCES: .*RESOURCES=none/, raw)
  }
  t.throws(() => resolveConfig({ RESOURCES: ['none'] }), { message: /^RESOURCES: .*RESOURCES=none/ }, 'in typed settings too')
  t.same(loadConfig({ RESOURCES: 'records,notes,' }).RESOURCES, ['records', 'notes'], 'a trailing comma stays harmless')
  t.same(loadConfig({ RESOURCES: '' }).RESOURCES, ['records'], 'empty is unset: the default')
})

t.test('a write scope for something that is not mounted is refused, naming both settings', async (t) => {
  t.throws(() => loadConfig({ CATALOG: 'false', CATALOG_WRITE_SCOPE: 'items:write' }),
    { message: 'CATALOG_WRITE_SCOPE is set but CATALOG=false mounts no catalog; unset one of them' })
  t.throws(() => loadConfig({ RESOURCES: 'none', RECORDS_WRITE_SCOPE: 'records:write' }),
    { message: 'RECORDS_WRITE_SCOPE is set but RESOURCES=none mounts no resource to guard; unset one of them' })
  t.throws(() => loadConfig({ RECORDS_WRITE_SCOPE: 'Records Write' }), { message: /^RECORDS_WRITE_SCOPE: must be a scope name/ })
})
