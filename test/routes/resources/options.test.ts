import t from 'tap'
import { API_PREFIX } from '../../../app.js'
import { resourceTable } from '../../../db/schema.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { build, login, register } from '../../support/app.js'
import { createRecord, notFound } from '../../support/resources.js'
import { PROBLEM_TYPE, validationProblem } from '../../support/responses.js'

// RESOURCES is empty, so every resource here is registered with the options under test.
const app = await build(t, { RESOURCES: [] })
const mount = (options: Parameters<typeof resourcePlugin>[1]) => app.register(resourcePlugin, { prefix: API_PREFIX, ...options })
await mount({ name: 'records' })
await mount({ name: 'pages', defaultLimit: 2, maxLimit: 3 })
await mount({ name: 'readonly', routes: { create: false, update: false, delete: false } })
await mount({ name: 'keep', routes: { delete: false } })
await mount({ name: 'secrets', guard: app.authenticate })
await mount({ name: 'scoped', guard: app.requireScopes('scoped') })
await mount({ name: 'tasks', table: 'todo_items' })
await mount({ name: 'select' })

const problem = (status: number, title: string, code: string, detail: string) => ({ type: 'about:blank', title, status, detail, code })
const routeNotFound = (method: string, url: string) => problem(404, 'Not Found', 'ROUTE_NOT_FOUND', `Route ${method} ${url} not found`)

t.test('each registration is a plugin named plinth-resource:<name>', async (t) => {
  for (const name of ['records', 'pages', 'secrets', 'tasks']) t.ok(app.hasPlugin(`plinth-resource:${name}`), name)
  t.notOk(app.hasPlugin('plinth-resource:todo_items'), 'named after the resource, not the table')
})

t.test('the list pages with offset and limit, clamps limit and links the next page', async (t) => {
  for (let i = 1; i <= 5; i++) await createRecord(app, 'pages', { title: `page ${i}` })
  const get = (query: string) => app.inject({ method: 'GET', url: `${API_PREFIX}/pages/${query}` })
  const ids = (res: { json (): Array<{ id: number }> }) => res.json().map((record) => record.id)

  const first = await get('')
  t.same(ids(first), [1, 2], 'defaultLimit')
  t.equal(first.headers.link, '</api/v1/pages?offset=2&limit=2>; rel="next"')
  const clamped = await get('?limit=1000')
  t.same(ids(clamped), [1, 2, 3], 'a larger limit is reduced to maxLimit, not refused')
  t.equal(clamped.headers.link, '</api/v1/pages?offset=3&limit=3>; rel="next"')
  const last = await get('?offset=3&limit=3')
  t.same(ids(last), [4, 5])
  t.equal(last.headers.link, undefined, 'no next page after the last')
  t.same(ids(await get('?offset=4&limit=1')), [5])
  t.equal((await get('?offset=4&limit=1')).headers.link, undefined, 'a full last page has no next link either')
  t.same(ids(await get('?offset=99')), [])
  t.same(ids(await get('?limit=3&sort=title')), [1, 2, 3], 'unknown query parameters are ignored')

  const bad: Array<[string, string, string]> = [
    ['limit=0', '/querystring/limit', 'must be >= 1'],
    ['limit=abc', '/querystring/limit', 'must be integer'],
    ['limit=1.5', '/querystring/limit', 'must be integer'],
    ['limit=1e400', '/querystring/limit', 'must be integer'],
    ['offset=-1', '/querystring/offset', 'must be >= 0'],
    ['offset=2147483648', '/querystring/offset', 'must be <= 2147483647'],
    ['offset=Infinity', '/querystring/offset', 'must be integer']
  ]
  for (const [query, path, message] of bad) {
    const res = await get(`?${query}`)
    t.equal(res.statusCode, 422, query)
    t.same(res.json(), validationProblem([path, message]), query)
  }
})

t.test('routes switched off are not there; the others work', async (t) => {
  for (const [method, url] of [['POST', '/api/v1/readonly'], ['PUT', '/api/v1/readonly/1'], ['DELETE', '/api/v1/readonly/1']] as const) {
    const res = await app.inject({ method, url, payload: method === 'DELETE' ? undefined : { title: 'x' } })
    t.equal(res.statusCode, 404, `${method} ${url}`)
    t.same(res.json(), routeNotFound(method, url))
  }
  t.same((await app.inject({ method: 'GET', url: '/api/v1/readonly' })).json(), [])
  t.same((await app.inject({ method: 'GET', url: '/api/v1/readonly/1' })).json(), notFound('readonly', 1))

  const kept = await createRecord(app, 'keep', { title: 'cannot be deleted' })
  const url = `/api/v1/keep/${kept.id}`
  t.same((await app.inject({ method: 'DELETE', url })).json(), routeNotFound('DELETE', url))
  t.same((await app.inject({ method: 'PUT', url, payload: { title: 'but renamed' } })).json(), { ...kept, title: 'but renamed' })
})

t.test('a guarded resource answers 401 without a token and works with one', async (t) => {
  const routes = [['GET', '/api/v1/secrets'], ['POST', '/api/v1/secrets'], ['GET', '/api/v1/secrets/1'], ['PUT', '/api/v1/secrets/1'], ['DELETE', '/api/v1/secrets/1']] as const
  for (const [method, url] of routes) {
    const res = await app.inject({ method, url, payload: method === 'POST' || method === 'PUT' ? { title: 'x' } : undefined })
    t.equal(res.statusCode, 401, `${method} ${url}`)
    t.equal(res.headers['content-type'], PROBLEM_TYPE)
    t.equal(res.headers['www-authenticate'], 'Bearer')
    t.equal(res.json().code, 'AUTH_NOT_AUTHENTICATED')
  }
  await register(app, 'keeper@example.com')
  const { headers } = await login(app, 'keeper@example.com')
  const created = await app.inject({ method: 'POST', url: '/api/v1/secrets', headers, payload: { title: 'hidden' } })
  t.equal(created.statusCode, 201)
  t.same(created.json(), { id: 1, title: 'hidden', description: null })
  t.same((await app.inject({ method: 'GET', url: '/api/v1/secrets', headers })).json(), [created.json()])
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/secrets/1', headers })).statusCode, 200)
  t.equal((await app.inject({ method: 'PUT', url: '/api/v1/secrets/1', headers, payload: { description: 'x' } })).statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: '/api/v1/secrets/1', headers })).statusCode, 204)
  const bad = await app.inject({ method: 'GET', url: '/api/v1/secrets', headers: { authorization: 'Bearer nonsense' } })
  t.equal(bad.statusCode, 401)
  t.equal(bad.json().code, 'AUTH_INVALID_TOKEN')
})

t.test('a scope guard answers 403 to a user without the scope', async (t) => {
  await register(app, 'scopeless@example.com')
  const { headers } = await login(app, 'scopeless@example.com')
  const res = await app.inject({ method: 'GET', url: '/api/v1/scoped', headers })
  t.equal(res.statusCode, 403)
  t.same(res.json(), problem(403, 'Forbidden', 'AUTH_INSUFFICIENT_SCOPE', 'This needs the scope(s): scoped'))
  t.equal(res.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="scoped"')
})

t.test('the table option stores a resource under another table name', async (t) => {
  const created = await createRecord(app, 'tasks', { title: 'water the plants' })
  t.same(await app.plinthDb.db.select().from(resourceTable('todo_items')), [created])
})

t.test('a resource may be named like an SQL keyword: every identifier is quoted', async (t) => {
  const created = await createRecord(app, 'select', { title: 'from where' })
  t.same((await app.inject({ method: 'GET', url: `/api/v1/select/${created.id}` })).json(), created)
})

t.test('the OpenAPI document names each operation, tag and schema after the resource', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  type Operation = { operationId: string, tags: string[], summary: string, responses: Record<string, unknown> }
  const operations = (prefix: string) => Object.entries(doc.paths as Record<string, Record<string, Operation>>)
    .filter(([path]) => path === prefix || path.startsWith(`${prefix}/`))
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => `${method} ${path} ${op.operationId} ${op.tags.join()}`))
    .sort()
  t.same(operations('/api/v1/records'), [
    'delete /api/v1/records/{records_id} deleteRecords records',
    'get /api/v1/records listRecords records',
    'get /api/v1/records/{records_id} getRecords records',
    'post /api/v1/records createRecords records',
    'put /api/v1/records/{records_id} updateRecords records'
  ])
  t.same(operations('/api/v1/readonly'), [
    'get /api/v1/readonly listReadonly readonly',
    'get /api/v1/readonly/{readonly_id} getReadonly readonly'
  ])
  for (const component of ['RecordsRecord', 'PagesRecord', 'TasksRecord', 'SelectRecord']) {
    t.ok(doc.components.schemas[component], `${component} is a component`)
  }
  const getRecord = doc.paths['/api/v1/records/{records_id}'].get
  t.equal(getRecord.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/RecordsRecord')
  t.equal(getRecord.responses['404'].content['application/problem+json'].schema.$ref, '#/components/schemas/Problem')
  t.ok(doc.paths['/api/v1/records/{records_id}'].delete.responses['204'], '204 documented')
  const limit = doc.paths['/api/v1/records'].get.parameters.find((p: { name: string }) => p.name === 'limit')
  t.equal(limit.schema.default, 100, 'a default page of 100')
  t.match(limit.description ?? limit.schema.description, /above 1000 are reduced to 1000/)
  t.same(Object.keys(doc.paths['/api/v1/secrets'].get.responses).sort(), ['200', '400', '401', '403', '422', '500', '503'], 'a guarded route documents 401 and 403')
  t.same(Object.keys(doc.paths['/api/v1/records'].get.responses).sort(), ['200', '400', '422', '500', '503'])
})
