import { eq } from 'drizzle-orm'
import Fastify from 'fastify'
import t from 'tap'
import { users } from '../../../db/schema.js'
import { authPlugin, catalogPlugin, dbPlugin } from '../../../index.js'
import { build, login, newAccount, register } from '../../support/app.js'
import { freshDatabase } from '../../support/database.js'

const item = { name: 'Lamp', price: 20 }

t.test('CATALOG_WRITE_SCOPE: writes need the scope, reads stay open', async (t) => {
  const app = await build(t, { CATALOG_WRITE_SCOPE: 'items:write' })
  const anonymous = await app.inject({ method: 'POST', url: '/api/v1/items', payload: item })
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer')

  const { session } = await newAccount(app)
  const unscoped = await app.inject({ method: 'POST', url: '/api/v1/items', headers: session.headers, payload: item })
  t.equal(unscoped.statusCode, 403)
  t.equal(unscoped.json().code, 'AUTH_INSUFFICIENT_SCOPE')

  const writer = await register(app, 'writer@example.com')
  await app.plinthDb.db.update(users).set({ scopes: 'me,items:write' }).where(eq(users.id, writer.id))
  const { headers } = await login(app, 'writer@example.com')
  const created = await app.inject({ method: 'POST', url: '/api/v1/items', headers, payload: item })
  t.equal(created.statusCode, 201)
  const url = `/api/v1/items/${created.json().id as number}`

  for (const [method, payload] of [['PATCH', { price: 30 }], ['DELETE', undefined]] as const) {
    t.equal((await app.inject({ method, url, payload })).statusCode, 401, `${method} without a token`)
    t.equal((await app.inject({ method, url, headers: session.headers, payload })).statusCode, 403, `${method} without the scope`)
  }
  t.equal((await app.inject({ method: 'GET', url })).statusCode, 200, 'a read needs nothing')
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/items' })).statusCode, 200)
  t.equal((await app.inject({ method: 'PATCH', url, headers, payload: { price: 30 } })).json().price, 30)
  t.equal((await app.inject({ method: 'DELETE', url, headers })).statusCode, 204)

  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  t.same(document.paths['/api/v1/items'].post.security, [{ OAuth2PasswordBearer: [] }], 'a guarded route asks Swagger UI for the token')
  t.ok(document.paths['/api/v1/items'].post.responses['403'])
  t.equal(document.paths['/api/v1/items'].get.security, undefined)
})

t.test('without CATALOG_WRITE_SCOPE the catalog is open, as SPEC.md has it', async (t) => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/items', payload: item })).statusCode, 201)
})

t.test('CATALOG_WRITE_SCOPE must be a scope name', async (t) => {
  await t.rejects(async () => build(t, { CATALOG_WRITE_SCOPE: 'Items Write' }), { code: 'PLINTH_INVALID_CONFIG', message: /CATALOG_WRITE_SCOPE/ })
})

t.test('catalogPlugin guards: read and write hooks, and a missing one fails the boot', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(authPlugin, { secret: 'catalog guards secret, 32 bytes or more' })
  await app.register(catalogPlugin, { prefix: '/api', guards: { read: app.authenticate } })
  t.equal((await app.inject({ method: 'GET', url: '/api/items' })).statusCode, 401)
  t.equal((await app.inject({ method: 'POST', url: '/api/items', payload: item })).statusCode, 201, 'writes are open: only read was guarded')

  for (const [guards, message] of [
    [{ write: undefined }, 'catalog plugin: guards.write must be a function such as app.authenticate (got undefined)'],
    [{ delete: () => {} }, 'catalog plugin: guards.delete is unknown: guards takes read, write'],
    ['open', 'catalog plugin: guards must be an object such as { write: app.authenticate } (got "open")']
  ] as const) {
    const host = Fastify({ logger: false })
    t.teardown(() => host.close())
    await host.register(dbPlugin, { client: await freshDatabase(t) })
    host.register(catalogPlugin, { prefix: '/api', guards: guards as never })
    await t.rejects(async () => host.ready(), { code: 'CATALOG_INVALID_OPTIONS', message: new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`) })
    t.notOk(host.hasRoute({ method: 'POST', url: '/api/items' }), 'no route is added')
  }
})
