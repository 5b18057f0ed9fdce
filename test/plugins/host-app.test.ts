import cors from '@fastify/cors'
import formbody from '@fastify/formbody'
import helmet from '@fastify/helmet'
import jwt from '@fastify/jwt'
import swagger from '@fastify/swagger'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import {
  accountsPlugin, authPlugin, buildApp, catalogPlugin, corsPlugin, dbPlugin, docsPlugin, errorsPlugin, healthPlugin,
  metricsPlugin, resourcePlugin, securityPlugin, wellKnownPlugin
} from '../../index.js'
import { tables } from '../../db/index.js'
import { captureLogs } from '../support/app.js'
import { freshDatabase } from '../support/database.js'
import { PROBLEM_TYPE } from '../support/responses.js'
import { TaskFields } from '../support/tasks.js'

// A host app that brings its own plugins, then plinth's: each of the host's keeps working, and
// plinth's either reuse it, keep to a namespace of their own, or refuse to boot with a reason.

const form = 'application/x-www-form-urlencoded'

async function host (t: Test, options = {}) {
  const app = Fastify({ logger: false, ...options })
  t.teardown(() => app.close())
  return app
}

async function withAccounts (t: Test, app: FastifyInstance) {
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(authPlugin, { secret: 'the host test secret, 32 bytes or more' })
  await app.register(accountsPlugin, { prefix: '/api/v1' })
}

/** Registers, logs in through the form and returns the access token. */
async function accessToken (app: FastifyInstance, email = 'guest@example.com') {
  const password = 'long enough'
  const registered = await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email, password } })
  if (registered.statusCode !== 201) throw new Error(`register: ${registered.statusCode} ${registered.payload}`)
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': form }, payload: new URLSearchParams({ username: email, password }).toString() })
  if (login.statusCode !== 200) throw new Error(`login: ${login.statusCode} ${login.payload}`)
  return login.json().access_token as string
}

t.test('a guard option that is undefined fails the boot, naming the plugin and the order', async (t) => {
  const app = await host(t)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  // authPlugin is not registered yet, so app.authenticate is undefined here.
  const register = () => app.register(resourcePlugin, { prefix: '/api', name: 'notes', guard: app.authenticate })
  await t.rejects(async () => { await register() }, /resource plugin: "notes": guard must be a function such as app.authenticate \(got undefined\).*register it, awaited, before this plugin/)
  t.notOk(app.hasRoute({ method: 'POST', url: '/api/notes/' }), 'no open route was added')
})

t.test('accounts before authPlugin fails the boot naming the missing guard', async (t) => {
  const app = await host(t)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await t.rejects(async () => { await app.register(accountsPlugin, { prefix: '/api/v1' }) }, /The decorator 'plinthGuards' required by 'plinth-accounts' is not present/)
})

t.test('a host plugin named db does not stand in for plinth\'s, and the host\'s db decorator stays the host\'s', async (t) => {
  const hostDb = { select: () => 'the host\'s own query builder' }
  const hostDbPlugin = fp(async (app) => { app.decorate('db', hostDb) }, { name: 'db' })

  const without = await host(t)
  await without.register(hostDbPlugin)
  await t.rejects(async () => { await without.register(catalogPlugin, { prefix: '/api' }) }, /The dependency 'plinth-db' of plugin 'plinth-catalog' is not registered/)

  const app = await host(t)
  await app.register(hostDbPlugin)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(catalogPlugin, { prefix: '/api' })
  const created = await app.inject({ method: 'POST', url: '/api/items', payload: { name: 'lamp', price: 3 } })
  t.equal(created.statusCode, 201, 'the catalog runs on plinth\'s database')
  t.equal((app as unknown as { db: typeof hostDb }).db, hostDb, 'app.db is still the host\'s')
})

t.test('a host that parses forms already: plinth reuses its parser', async (t) => {
  const app = await host(t)
  await app.register(formbody)
  await withAccounts(t, app)
  app.post('/host/form', async (request) => request.body)
  t.ok(await accessToken(app), 'the login form is parsed by the host\'s parser')
  const own = await app.inject({ method: 'POST', url: '/host/form', headers: { 'content-type': form }, payload: 'a=1' })
  t.same(own.json(), { a: '1' }, 'the host\'s own form route still parses')
})

t.test('a host with its own @fastify/jwt, registered before or after plinth, keeps it whole', async (t) => {
  for (const order of ['before', 'after'] as const) {
    const app = await host(t)
    if (order === 'before') await app.register(jwt, { secret: 'the host\'s own secret' })
    await withAccounts(t, app)
    if (order === 'after') await app.register(jwt, { secret: 'the host\'s own secret' })
    app.get('/host/jwt', async (request) => {
      await request.jwtVerify()
      return { user: request.user }
    })
    app.get('/host/report', { onRequest: app.authenticate }, async (request) => ({ email: request.account.email, user: request.user ?? null }))

    const hostToken = app.jwt.sign({ who: 'host' })
    const own = await app.inject({ method: 'GET', url: '/host/jwt', headers: { authorization: `Bearer ${hostToken}` } })
    t.equal(own.statusCode, 200, `${order}: the host's jwtVerify accepts its own token`)
    t.equal(own.json().user.who, 'host', `${order}: request.user is the host's payload`)

    const plinthToken = await accessToken(app)
    const guarded = await app.inject({ method: 'GET', url: '/host/report', headers: { authorization: `Bearer ${plinthToken}` } })
    t.same(guarded.json(), { email: 'guest@example.com', user: null }, `${order}: plinth's guard sets request.account, never request.user`)
    const crossed = await app.inject({ method: 'GET', url: '/host/report', headers: { authorization: `Bearer ${hostToken}` } })
    t.equal(crossed.statusCode, 401, `${order}: the host's token is not one of plinth's`)
    const reverse = await app.inject({ method: 'GET', url: '/host/jwt', headers: { authorization: `Bearer ${plinthToken}` } })
    t.equal(reverse.statusCode, 401, `${order}: nor plinth's one of the host's`)
  }
})

t.test('a host that decorated authenticate as @fastify/jwt\'s README shows still registers plinth, whose guards are namespaced', async (t) => {
  const app = await host(t)
  await app.register(jwt, { secret: 'the host\'s own secret' })
  app.decorate('authenticate', async function hostAuthenticate (request: FastifyRequest) { await request.jwtVerify() })
  const hostGuard = app.authenticate
  await withAccounts(t, app)
  t.equal(app.authenticate, hostGuard, 'the host\'s authenticate is still the host\'s')
  t.type(app.plinthGuards.authenticate, 'function')
  t.not(app.plinthGuards.authenticate, hostGuard)
  t.equal(app.hasDecorator('requireSuperuser'), true, 'the aliases the host did not take are there')
  app.get('/host/mine', { onRequest: app.authenticate }, async (request) => ({ user: request.user }))
  app.get('/host/plinth', { onRequest: app.plinthGuards.authenticate }, async (request) => ({ email: request.account.email }))

  const plinthToken = await accessToken(app)
  const me = await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: { authorization: `Bearer ${plinthToken}` } })
  t.equal(me.statusCode, 200, 'plinth\'s own routes use plinth\'s guard, not the host\'s')
  t.same((await app.inject({ method: 'GET', url: '/host/plinth', headers: { authorization: `Bearer ${plinthToken}` } })).json(), { email: 'guest@example.com' })
  const hostToken = app.jwt.sign({ who: 'host' })
  t.same((await app.inject({ method: 'GET', url: '/host/mine', headers: { authorization: `Bearer ${hostToken}` } })).json(), { user: { who: 'host', iat: app.jwt.decode<{ iat: number }>(hostToken)!.iat } })
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: { authorization: `Bearer ${hostToken}` } })).statusCode, 401, 'the host\'s token opens nothing of plinth\'s')
})

t.test('guard refusals on a host route are problem documents without the errors plugin', async (t) => {
  const app = await host(t)
  await withAccounts(t, app)
  app.get('/host/admin', { onRequest: app.requireSuperuser }, async () => ({ ok: true }))
  app.get('/host/boom', async () => { throw new Error('the host\'s own error') })

  const anonymous = await app.inject({ method: 'GET', url: '/host/admin' })
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.headers['content-type'], PROBLEM_TYPE)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer')
  t.same(anonymous.json(), {
    type: 'about:blank',
    title: 'Unauthorized',
    status: 401,
    code: 'AUTH_NOT_AUTHENTICATED',
    detail: 'Not authenticated: send an access token as "Authorization: Bearer <token>"'
  })
  const forbidden = await app.inject({ method: 'GET', url: '/host/admin', headers: { authorization: `Bearer ${await accessToken(app)}` } })
  t.equal(forbidden.statusCode, 403)
  t.equal(forbidden.headers['content-type'], PROBLEM_TYPE)
  t.equal(forbidden.json().code, 'AUTH_NOT_SUPERUSER')
  const hostError = await app.inject({ method: 'GET', url: '/host/boom' })
  t.equal(hostError.json().message, 'the host\'s own error', 'the host\'s own errors keep the host\'s format')
})

t.test('authPlugin without a secret warns, as the server does', async (t) => {
  const { lines, logger } = captureLogs()
  const app = await host(t, { logger })
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(authPlugin)
  t.ok(lines.some((line) => line.level === 40 && /SECRET_KEY is not set: tokens are signed with a random per-process key/.test(String(line.msg))))

  const quiet = captureLogs()
  const keyed = await host(t, { logger: quiet.logger })
  await keyed.register(dbPlugin, { client: await freshDatabase(t) })
  await keyed.register(authPlugin, { secret: 'a set secret of 32 bytes or more' })
  t.notOk(quiet.lines.some((line) => /SECRET_KEY/.test(String(line.msg))), 'no warning with a secret')
})

t.test('a host with its own @fastify/swagger: plinth\'s routes join its document', async (t) => {
  const app = await host(t)
  await app.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'host', version: '1.0.0' } } })
  await app.register(docsPlugin)
  app.get('/host/ping', { schema: { response: { 200: { type: 'object', properties: { pong: { type: 'boolean' } } } } } }, async () => ({ pong: true }))
  await withAccounts(t, app)
  await app.register(catalogPlugin, { prefix: '/api/v1' })
  await app.ready()

  const document = app.swagger() as { info: { title: string }, paths: Record<string, unknown>, components: { securitySchemes: Record<string, { flows: { password: { tokenUrl: string } } }> } }
  t.equal(document.info.title, 'host', 'the host\'s document, not a second one')
  t.ok(document.paths['/host/ping'], 'the host\'s route')
  for (const path of ['/api/v1/auth/login', '/api/v1/users/me', '/api/v1/items/{item_id}']) t.ok(document.paths[path], path)
  t.equal(document.components.securitySchemes.OAuth2PasswordBearer?.flows.password.tokenUrl, '/api/v1/auth/login', 'the scheme plinth\'s routes refer to is declared')
  t.equal((await app.inject({ method: 'GET', url: '/docs' })).statusCode, 404, 'plinth adds no Swagger UI of its own to a host that has swagger')
})

t.test('a host with its own @fastify/swagger gets plinth\'s components by name, TasksRecord and not def-N, in JSON and YAML', async (t) => {
  const app = await host(t)
  await app.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'host', version: '1.0.0' } } })
  await app.register(docsPlugin)
  await withAccounts(t, app)
  await app.register(resourcePlugin, { prefix: '/api/v1', name: 'tasks', fields: TaskFields })
  await app.ready()

  const document = app.swagger() as unknown as { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }> }>>, components: { schemas: Record<string, unknown> } }
  const names = Object.keys(document.components.schemas)
  t.same(names.filter((name) => /^def-\d+$/.test(name)), [], 'no def-N left')
  for (const name of ['TasksRecord', 'Problem', 'ValidationProblem']) t.ok(names.includes(name), name)
  t.equal(document.paths['/api/v1/tasks/{tasks_id}']?.get?.responses['200']?.content?.['application/json']?.schema.$ref, '#/components/schemas/TasksRecord')
  const references = [...JSON.stringify(document).matchAll(/"#\/components\/schemas\/([^"/]+)/g)].map(([, name]) => name!)
  t.ok(references.length > 0)
  t.same([...new Set(references)].filter((name) => !names.includes(name)), [], 'every reference names a component there is')
  const yaml = app.swagger({ yaml: true })
  t.match(yaml, /\n {4}TasksRecord:\n/, 'the YAML form too')
  t.notMatch(yaml, /def-\d/)
})

t.test('docs or errors registered after plinth\'s routes fail the boot with the order', async (t) => {
  const docsLate = await host(t)
  await docsLate.register(dbPlugin, { client: await freshDatabase(t) })
  await docsLate.register(catalogPlugin, { prefix: '/api' })
  await t.rejects(async () => { await docsLate.register(docsPlugin) }, {
    code: 'PLINTH_PLUGIN_ORDER',
    message: 'plinth-docs must be registered before plinth-catalog: @fastify/swagger documents only the routes added after it'
  })

  const errorsLate = await host(t)
  await errorsLate.register(dbPlugin, { client: await freshDatabase(t) })
  await errorsLate.register(healthPlugin, { prefix: '/api' })
  await errorsLate.register(resourcePlugin, { prefix: '/api', name: 'notes' })
  await t.rejects(async () => { await errorsLate.register(errorsPlugin) }, /plinth-errors must be registered before plinth-health, plinth-resource/)
})

t.test('a host with its own @fastify/cors and @fastify/helmet keeps them in charge', async (t) => {
  const app = await host(t)
  await app.register(cors, { origin: 'https://host.example' })
  await app.register(helmet)
  await app.register(corsPlugin, { origins: ['https://plinth.example'] })
  await app.register(securityPlugin)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(resourcePlugin, { prefix: '/api', name: 'notes' })

  const preflight = await app.inject({
    method: 'OPTIONS', url: '/api/notes/', headers: { origin: 'https://host.example', 'access-control-request-method': 'POST' }
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], 'https://host.example', 'the host\'s CORS policy answers')
  const created = await app.inject({ method: 'POST', url: '/api/notes/', payload: { title: 'n' } })
  t.equal(created.statusCode, 201)
  t.match(created.headers['content-security-policy'], /default-src 'self'/, 'helmet\'s headers, not a second set')
  t.equal(created.headers['x-frame-options'], 'SAMEORIGIN', 'helmet\'s value, untouched by plinth\'s DENY')
})

/** Every profile of plinth under /api/v1, in app.ts's order and with its defaults, in a host with Fastify's default router. */
async function everyProfile (t: Test, app: FastifyInstance) {
  await app.register(docsPlugin)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(authPlugin, { secret: 'the host test secret, 32 bytes or more' })
  await app.register(wellKnownPlugin, { accountsPrefix: '/api/v1' })
  await app.register(healthPlugin, { prefix: '/api/v1' })
  await app.register(catalogPlugin, { prefix: '/api/v1' })
  await app.register(accountsPlugin, { prefix: '/api/v1' })
  await app.register(resourcePlugin, { prefix: '/api/v1', name: 'records' })
  await app.register(resourcePlugin, { prefix: '/api/v1', name: 'tasks', fields: TaskFields })
}

t.test('in a host that keeps trailing slashes, every plinth route answers the same with one', async (t) => {
  const app = await host(t)
  await everyProfile(t, app)
  const token = await accessToken(app)
  await app.plinthDb.db.update(tables.users).set({ is_superuser: true })
  const auth = { authorization: `Bearer ${token}` }
  for (const [method, url, payload] of [
    ['POST', '/api/v1/items', { name: 'lamp', price: 3 }],
    ['POST', '/api/v1/records', { title: 'r' }],
    ['POST', '/api/v1/tasks', { title: 't' }]
  ] as const) {
    const created = await app.inject({ method, url: `${url}/`, headers: auth, payload })
    t.equal(created.statusCode, 201, `${method} ${url}/ creates`)
  }
  for (const [path, query = ''] of [
    ['/api/v1/health'], ['/api/v1/health/ready'], ['/.well-known/oauth-authorization-server'],
    ['/api/v1/users/me'], ['/api/v1/users', '?limit=2'], ['/api/v1/users/1'], ['/api/v1/users/me/sessions'],
    ['/api/v1/items', '?limit=1'], ['/api/v1/items/1'], ['/api/v1/records'], ['/api/v1/records/1'], ['/api/v1/tasks', '?sort=-id'], ['/api/v1/tasks/1']
  ]) {
    const plain = await app.inject({ method: 'GET', url: `${path}${query}`, headers: auth })
    const slashed = await app.inject({ method: 'GET', url: `${path}/${query}`, headers: auth })
    t.equal(plain.statusCode, 200, `GET ${path}${query}`)
    t.equal(slashed.statusCode, plain.statusCode, `GET ${path}/${query} answers as ${path}${query}`)
    t.same(slashed.json(), plain.json(), `GET ${path}/${query}: the same body`)
  }
  await app.inject({ method: 'POST', url: '/api/v1/records', payload: { title: 'another' } })
  const links = await Promise.all(['/api/v1/records?limit=1', '/api/v1/records/?limit=1'].map(async (url) => (await app.inject({ url, headers: auth })).headers.link))
  t.same(links, ['</api/v1/records?offset=1&limit=1>; rel="next"', '</api/v1/records?offset=1&limit=1>; rel="next"'], 'the records\' next link is the route\'s, slash or not')
  for (const url of ['/api/v1/records', '/api/v1/records/', '/api/v1/tasks/1', '/api/v1/tasks/1/']) {
    t.equal((await app.inject({ method: 'HEAD', url, headers: auth })).statusCode, 200, `HEAD ${url}`)
  }
  const patched = await app.inject({ method: 'PATCH', url: '/api/v1/tasks/1/', headers: auth, payload: { done: true } })
  t.equal(patched.statusCode, 200, 'PATCH /api/v1/tasks/1/')
  const deleted = await app.inject({ method: 'DELETE', url: '/api/v1/items/1/', headers: auth })
  t.equal(deleted.statusCode, 204, 'DELETE /api/v1/items/1/')
})

t.test('a trailing slash is not a second rate limit: /auth/register and /auth/register/ share one count', async (t) => {
  const app = await host(t)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(authPlugin, { secret: 'the host test secret, 32 bytes or more' })
  await app.register(accountsPlugin, { prefix: '/api/v1', rateLimits: { register: 1 } })
  const first = await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email: 'a@example.com', password: 'long enough' } })
  t.equal(first.statusCode, 201)
  const second = await app.inject({ method: 'POST', url: '/api/v1/auth/register/', payload: { email: 'b@example.com', password: 'long enough' } })
  t.equal(second.statusCode, 429, 'the second registration from the address is over the limit, slash or not')
})

t.test('a host\'s OpenAPI document has the standalone server\'s paths and operations, no trailing-slash twins', async (t) => {
  const standalone = await buildApp({}, { logger: false, database: await freshDatabase(t) })
  t.teardown(() => standalone.close())
  await standalone.register(resourcePlugin, { prefix: '/api/v1', name: 'tasks', fields: TaskFields })
  const app = await host(t)
  await everyProfile(t, app)
  await Promise.all([standalone.ready(), app.ready()])
  const expected = (standalone.swagger() as { paths: Record<string, unknown> }).paths
  const paths = (app.swagger() as { paths: Record<string, unknown> }).paths
  t.same(Object.keys(paths).filter((path) => !path.startsWith('/docs')).sort(), Object.keys(expected).filter((path) => !path.startsWith('/docs')).sort(), 'the same paths')
  t.notOk(Object.keys(paths).some((path) => path.length > 1 && path.endsWith('/')), 'no path ends with a slash')
  for (const path of Object.keys(expected).filter((path) => !path.startsWith('/docs'))) t.same(paths[path], expected[path], `${path}: the same operations`)
})

t.test('a route and its trailing-slash alias are one series in the metrics', async (t) => {
  const app = await host(t)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(metricsPlugin)
  await app.register(healthPlugin, { prefix: '/api/v1' })
  for (const url of ['/api/v1/health', '/api/v1/health/']) t.equal((await app.inject(url)).statusCode, 200, url)
  const metrics = await app.plinthMetrics!.registry.metrics()
  t.match(metrics, /http_request_duration_seconds_count\{[^}]*route="\/api\/v1\/health"[^}]*\} 2/, 'both requests count under /api/v1/health')
  t.notMatch(metrics, /route="\/api\/v1\/health\/"/, 'no series for the alias')
})

t.test('a host whose router ignores trailing slashes already gets no twin routes, whichever way it says so', async (t) => {
  for (const options of [{ routerOptions: { ignoreTrailingSlash: true } }, { ignoreTrailingSlash: true }]) {
    const app = await host(t, options)
    await app.register(dbPlugin, { client: await freshDatabase(t) })
    await app.register(healthPlugin, { prefix: '/api/v1' })
    await app.register(resourcePlugin, { prefix: '/api/v1', name: 'notes' })
    for (const url of ['/api/v1/health', '/api/v1/health/', '/api/v1/notes', '/api/v1/notes/']) {
      t.equal((await app.inject(url)).statusCode, 200, `${JSON.stringify(options)}: GET ${url}`)
    }
  }
})
