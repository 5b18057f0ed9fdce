import Fastify from 'fastify'
import t, { type Test } from 'tap'
import authPlugin from '../plugins/auth/index.js'
import dbPlugin from '../plugins/db.js'
import accounts from '../routes/accounts/index.js'
import catalog from '../routes/catalog/index.js'
import resourcePlugin from '../routes/resources/index.js'
import { freshDatabase } from './support/database.js'
import { PROBLEM_TYPE } from './support/responses.js'

// Someone else's app: plain Fastify, its default options and error handler, and only the plugins
// a profile needs. This is the "register one plugin into your own Fastify app" promise.

async function bareApp (t: Test) {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  return app
}

t.test('accounts alone, with the auth plugin: register, log in, read the profile', async (t) => {
  const app = await bareApp(t)
  // No errors plugin: accounts sets the problem-document error handler on its own context.
  await app.register(authPlugin, { secret: 'a host secret of 32 bytes or more' })
  await app.register(accounts, { prefix: '/api/v1' })

  const registered = await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email: 'Host@Example.com', password: 'long enough' } })
  t.equal(registered.statusCode, 201)
  t.same(registered.json(), { id: 1, email: 'host@example.com', is_active: true, is_superuser: false, scopes: ['me'], is_verified: false })
  const login = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'username=host@example.com&password=long+enough'
  })
  t.equal(login.statusCode, 200, 'the form login works: accounts brings its own form parser')
  const me = await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: { authorization: `Bearer ${login.json().access_token}` } })
  t.same(me.json(), registered.json())

  const anonymous = await app.inject({ method: 'GET', url: '/api/v1/users/me' })
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer')
  t.equal(anonymous.headers['content-type'], PROBLEM_TYPE)
  t.equal(anonymous.json().code, 'AUTH_NOT_AUTHENTICATED')
  const taken = await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email: 'host@example.com', password: 'long enough' } })
  t.equal(taken.statusCode, 409)
  t.equal(taken.json().code, 'ACCOUNT_EMAIL_TAKEN')
  const invalid = await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email: 'not an email', password: 'long enough' } })
  t.equal(invalid.statusCode, 422)
  t.same(invalid.json().errors, [{ path: '/body/email', message: 'must match format "email"' }])
})

t.test('a resource alone: CRUD, problem documents and 422 without the host registering errors', async (t) => {
  const app = await bareApp(t)
  await app.register(resourcePlugin, { prefix: '/api/v1', name: 'notes' })

  const created = await app.inject({ method: 'POST', url: '/api/v1/notes', payload: { title: 'hello' } })
  t.equal(created.statusCode, 201)
  t.same(created.json(), { id: 1, title: 'hello', description: null })
  t.same((await app.inject({ method: 'GET', url: '/api/v1/notes/' })).json(), [created.json()], 'with the slash, though the host does not ignore trailing slashes')
  t.same((await app.inject({ method: 'GET', url: '/api/v1/notes' })).json(), [created.json()], 'and without')
  const updated = await app.inject({ method: 'PUT', url: '/api/v1/notes/1', payload: { description: 'world' } })
  t.same(updated.json(), { id: 1, title: 'hello', description: 'world' })

  const coerced = await app.inject({ method: 'POST', url: '/api/v1/notes', payload: { title: 5 } })
  t.equal(coerced.statusCode, 422, 'its body validator does not coerce, and its errors are 422')
  t.equal(coerced.headers['content-type'], PROBLEM_TYPE)
  t.same(coerced.json().errors, [{ path: '/body/title', message: 'must be string' }])
  t.equal((await app.inject({ method: 'DELETE', url: '/api/v1/notes/1' })).statusCode, 204)
  const missing = await app.inject({ method: 'GET', url: '/api/v1/notes/1' })
  t.equal(missing.statusCode, 404)
  t.equal(missing.headers['content-type'], PROBLEM_TYPE)
  t.same(missing.json(), { type: 'about:blank', title: 'Not Found', status: 404, detail: 'notes 1 not found', code: 'RESOURCE_NOT_FOUND' })
  const host = await app.inject({ method: 'GET', url: '/elsewhere' })
  t.equal(host.statusCode, 404)
  t.equal(host.json().message, 'Route GET:/elsewhere not found', 'the host\'s own 404 answer is left alone')
})

t.test('the catalog alone: CRUD and problem documents', async (t) => {
  const app = await bareApp(t)
  await app.register(catalog, { prefix: '/api/v1' })
  const created = await app.inject({ method: 'POST', url: '/api/v1/items', payload: { name: 'lamp', price: 12.5 } })
  t.equal(created.statusCode, 201)
  t.match(created.json(), { name: 'lamp', price: 12.5, in_stock: true, description: null })
  const page = await app.inject({ method: 'GET', url: '/api/v1/items' })
  t.match(page.json(), { total: 1, offset: 0, has_next: false })
  const negative = await app.inject({ method: 'POST', url: '/api/v1/items', payload: { name: 'lamp', price: -1 } })
  t.equal(negative.statusCode, 422)
  t.same(negative.json().errors, [{ path: '/body/price', message: 'must be >= 0' }])
  const missing = await app.inject({ method: 'GET', url: '/api/v1/items/99' })
  t.equal(missing.statusCode, 404)
  t.equal(missing.headers['content-type'], PROBLEM_TYPE)
  t.equal((await app.inject({ method: 'GET', url: '/elsewhere' })).json().message, 'Route GET:/elsewhere not found', 'the host\'s 404 stays its own')
})

t.test('all three profiles side by side in one bare app, two resources included', async (t) => {
  const app = await bareApp(t)
  await app.register(authPlugin)
  await app.register(accounts, { prefix: '/api/v1' })
  await app.register(catalog, { prefix: '/api/v1' })
  await app.register(resourcePlugin, { prefix: '/api/v1', name: 'records' })
  await app.register(resourcePlugin, { prefix: '/api/v1', name: 'notes', guard: app.authenticate })

  t.equal((await app.inject({ method: 'POST', url: '/api/v1/records', payload: { title: 'r' } })).json().id, 1)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/items', payload: { name: 'i', price: 1 } })).statusCode, 201)
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/notes' })).statusCode, 401, 'the guard from the auth plugin')
  await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email: 'a@example.com', password: 'long enough' } })
  const login = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'username=a@example.com&password=long+enough'
  })
  const headers = { authorization: `Bearer ${login.json().access_token}` }
  const note = await app.inject({ method: 'POST', url: '/api/v1/notes', headers, payload: { title: 'n' } })
  t.same(note.json(), { id: 1, title: 'n', description: null }, 'its own sequence')
  t.ok(app.hasPlugin('plinth-resource:records') && app.hasPlugin('plinth-resource:notes'), 'each resource is a named plugin')
})
