import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import createClient from 'openapi-fetch'
import t from 'tap'
import ts from 'typescript'
import { API_PREFIX } from '../app.js'
import resourcePlugin from '../routes/resources/index.js'
import { clientTypes } from '../scripts/generate-client.js'
import type { paths } from '../client/schema.js'
import { build, DEFAULT_RATE_LIMITS, PASSWORD } from './support/app.js'
import { TaskFields, createTask } from './support/tasks.js'

// With the server's default limits, as `plinth openapi` (which generates client/schema.ts) documents them.
const app = await build(t, DEFAULT_RATE_LIMITS)
const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()

t.test('the committed client types match the live document (else: npm run client:generate)', async (t) => {
  const committed = readFileSync(new URL('../client/schema.ts', import.meta.url), 'utf8')
  t.ok(committed === await clientTypes(document), 'client/schema.ts is current')
})

t.test('a typed openapi-fetch client does a session, an item and a resource round trip', async (t) => {
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  const api = createClient<paths>({ baseUrl: base })

  const registered = await api.POST('/api/v1/auth/register', { body: { email: 'typed@example.com', password: PASSWORD } })
  t.equal(registered.response.status, 201)
  t.equal(registered.data?.email, 'typed@example.com')

  const login = await api.POST('/api/v1/auth/login', { body: { username: 'typed@example.com', password: PASSWORD } })
  t.equal(login.data?.token_type, 'bearer')
  const refreshed = await api.POST('/api/v1/auth/refresh', { body: { refresh_token: login.data!.refresh_token } })
  t.equal(refreshed.response.status, 200)
  const headers = { authorization: `Bearer ${refreshed.data!.access_token}` }
  t.same((await api.GET('/api/v1/users/me', { headers })).data?.scopes, ['me'])
  const replay = await api.POST('/api/v1/auth/refresh', { body: { refresh_token: login.data!.refresh_token } })
  t.equal(replay.error?.code, 'AUTH_INVALID_REFRESH_TOKEN', 'errors are typed problem documents')

  const item = await api.POST('/api/v1/items', { body: { name: 'lamp', price: 12.5 } })
  const itemId = item.data!.id
  const patched = await api.PATCH('/api/v1/items/{item_id}', { params: { path: { item_id: itemId } }, body: { price: 10 } })
  t.match(patched.data, { id: itemId, name: 'lamp', price: 10, in_stock: true })
  const page = await api.GET('/api/v1/items', { params: { query: { limit: 5, q: 'lam' } } })
  t.equal(page.data?.total, 1)
  t.equal((await api.DELETE('/api/v1/items/{item_id}', { params: { path: { item_id: itemId } } })).response.status, 204)
  const gone = await api.GET('/api/v1/items/{item_id}', { params: { path: { item_id: itemId } } })
  t.equal(gone.error?.status, 404)

  const record = await api.POST('/api/v1/records', { body: { title: 'typed', description: 'record' } })
  // One body answers one row; an array body, its rows: the type is the union of both.
  if (!t.ok(record.data && !Array.isArray(record.data), 'one row for one body') || !record.data || Array.isArray(record.data)) return
  const recordId = record.data.id
  const put = await api.PUT('/api/v1/records/{records_id}', { params: { path: { records_id: recordId } }, body: { description: null } })
  t.same(put.data, { id: recordId, title: 'typed', description: null })
  t.same((await api.GET('/api/v1/records', { params: { query: { limit: 10 } } })).data, [put.data])
  t.equal((await api.DELETE('/api/v1/records/{records_id}', { params: { path: { records_id: recordId } } })).response.status, 204)

  // The types are real: these calls do not compile (npm run typecheck fails if they ever do).
  // @ts-expect-error title is required
  await api.POST('/api/v1/records', { body: { description: 'no title' } })
  // @ts-expect-error price is a number
  await api.POST('/api/v1/items', { body: { name: 'lamp', price: '12' } })
})

t.test('a resource defined by its fields gets typed client paths: rows, bodies and filters', async (t) => {
  const typed = await build(t)
  await typed.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields })
  const dir = await mkdtemp(join(tmpdir(), 'plinth-client-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'schema.ts'), await clientTypes((await typed.inject({ method: 'GET', url: '/docs/json' })).json()))
  await writeFile(join(dir, 'use.ts'), `import type { paths } from './schema.js'
type Task = paths['/api/v1/tasks/{tasks_id}']['get']['responses'][200]['content']['application/json']
type Patch = NonNullable<paths['/api/v1/tasks/{tasks_id}']['patch']['requestBody']>['content']['application/json']
type Query = NonNullable<paths['/api/v1/tasks']['get']['parameters']['query']>
export const task: Task = {
  id: 1, created_at: '2026-11-24T00:00:00.000Z', updated_at: '2026-11-24T00:00:00.000Z', title: 'x',
  status: 'open', priority: 3, estimate: null, remind_at: null, done: false, tags: []
}
export const patch: Patch = { estimate: null, status: 'done' }
export const query: Query = { 'priority[gte]': 3, 'status[in]': 'open,doing', sort: '-priority', count: 'exact' }
// @ts-expect-error an in filter is written comma-separated, as the docs and the server say
export const arrayFilter: Query = { 'status[in]': ['open', 'doing'] }
// @ts-expect-error status is one of its enum values
export const wrongStatus: Task = { ...task, status: 'later' }
// @ts-expect-error title is not nullable
export const nullTitle: Patch = { title: null }
// @ts-expect-error a boolean has no order filter
export const wrongFilter: Query = { 'done[gt]': true }
`)
  const program = ts.createProgram([join(dir, 'use.ts')], {
    strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022
  })
  const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
  t.same(diagnostics, [], 'the generated types compile, and refuse what the API refuses')
})

t.test('an in filter goes from openapi-fetch as one comma-separated value, and the server splits it', async (t) => {
  const typed = await build(t)
  await typed.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields })
  for (const status of ['open', 'doing', 'done']) await createTask(typed, { title: status, status })
  const api = createClient<{ '/api/v1/tasks': { get: { parameters: { query: { 'status[in]': string } }, responses: { 200: { content: { 'application/json': Array<{ title: string }> } } } } } }>({
    baseUrl: await typed.listen({ host: '127.0.0.1', port: 0 })
  })
  const { data, response } = await api.GET('/api/v1/tasks', { params: { query: { 'status[in]': 'open,doing' } } })
  t.equal(response.status, 200)
  t.same(data?.map((task) => task.title), ['open', 'doing'])
})
