import { Type } from '@sinclair/typebox'
import t from 'tap'
import { buildResources } from '../../support/resources.js'
import { JSON_TYPE, PROBLEM_TYPE } from '../../support/responses.js'
import { TaskFields, createTask } from '../../support/tasks.js'

const app = await buildResources(t, [
  { name: 'tasks', fields: TaskFields },
  // As resources.json writes a free-form object.
  { name: 'documents', fields: Type.Object({ data: Type.Unsafe<object>({ type: 'object' }) }) }
])
const TASKS = '/api/v1/tasks'
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

t.test('POST fills the defaults and the server fields, and leaves unset optional fields out', async (t) => {
  const res = await app.inject({ method: 'POST', url: `${TASKS}/`, payload: { title: 'Write the docs' } })
  t.equal(res.statusCode, 201)
  t.equal(res.headers['content-type'], JSON_TYPE)
  const { created_at: createdAt, updated_at: updatedAt, ...task } = res.json()
  t.match(createdAt, ISO)
  t.equal(updatedAt, createdAt)
  t.same(task, { id: 1, title: 'Write the docs', status: 'open', priority: 3, estimate: null, remind_at: null, done: false, tags: [] })
  t.same((await app.inject({ method: 'GET', url: `${TASKS}/1` })).json(), res.json(), 'GET reads the same row')
})

t.test('every kind round-trips, and server-set or unknown properties are stripped', async (t) => {
  const payload = {
    title: 'Ship',
    status: 'doing',
    priority: 5,
    estimate: 2.5,
    due: '2026-12-01',
    remind_at: '2026-11-30T09:15:00.250Z',
    done: true,
    tags: ['release', 'q4'],
    meta: { source: 'email' }
  }
  const task = await createTask(app, { ...payload, id: 99, created_at: '2000-01-01T00:00:00.000Z', owner_id: 7, surprise: 'x' })
  t.match(task, payload)
  t.not(task.id, 99)
  t.not(task.created_at, '2000-01-01T00:00:00.000Z')
  t.notOk('owner_id' in task || 'surprise' in task)
  t.same((await app.inject({ method: 'GET', url: `${TASKS}/${task.id}` })).json(), task)
})

t.test('bad values are 422 naming the field; nothing is stored', async (t) => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{}, '/body/title'],
    [{ title: '' }, '/body/title'],
    [{ title: 'x'.repeat(201) }, '/body/title'],
    [{ title: 'nul \u0000' }, '/body/title'],
    [{ title: 'x', status: 'later' }, '/body/status'],
    [{ title: 'x', priority: 6 }, '/body/priority'],
    [{ title: 'x', priority: 2.5 }, '/body/priority'],
    [{ title: 'x', priority: '3' }, '/body/priority'],
    [{ title: 'x', estimate: -1 }, '/body/estimate'],
    [{ title: 'x', due: 'tomorrow' }, '/body/due'],
    [{ title: 'x', due: null }, '/body/due'],
    [{ title: 'x', remind_at: '2026-13-01T00:00:00Z' }, '/body/remind_at'],
    [{ title: 'x', done: 'yes' }, '/body/done'],
    [{ title: 'x', tags: ['x'.repeat(31)] }, '/body/tags/0'],
    [{ title: 'x', tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, '/body/tags'],
    [{ title: 'x', meta: { origin: 'none' } }, '/body/meta/source']
  ]
  const before = (await app.inject({ method: 'GET', url: `${TASKS}/?count=exact` })).headers['x-total-count']
  for (const [payload, path] of cases) {
    const res = await app.inject({ method: 'POST', url: `${TASKS}/`, payload })
    t.equal(res.statusCode, 422, JSON.stringify(payload).slice(0, 60))
    t.equal(res.headers['content-type'], PROBLEM_TYPE)
    t.equal(res.json().errors[0].path, path, JSON.stringify(payload).slice(0, 60))
  }
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/?count=exact` })).headers['x-total-count'], before)
})

t.test('PUT replaces the row: a field left out takes its default, or no value', async (t) => {
  const task = await createTask(app, { title: 'Plan', status: 'done', priority: 1, estimate: 4, due: '2026-12-24', tags: ['a'] })
  const url = `${TASKS}/${task.id}`
  const res = await app.inject({ method: 'PUT', url, payload: { title: 'Plan again' } })
  t.equal(res.statusCode, 200)
  const replaced = res.json()
  t.match(replaced, { id: task.id, title: 'Plan again', status: 'open', priority: 3, estimate: null, done: false, tags: [] })
  t.notOk('due' in replaced, 'an optional field left out has no value')
  t.equal(replaced.created_at, task.created_at)
  t.ok(replaced.updated_at > task.updated_at, 'updated_at moves on a write')
  t.equal((await app.inject({ method: 'PUT', url, payload: {} })).statusCode, 422, 'a required field must be sent')
  t.equal((await app.inject({ method: 'PUT', url: `${TASKS}/99999`, payload: { title: 'x' } })).statusCode, 404)
})

t.test('PATCH changes the fields sent and only those; null clears a nullable field', async (t) => {
  const task = await createTask(app, { title: 'Patch me', estimate: 3, due: '2026-12-31', tags: ['x'] })
  const url = `${TASKS}/${task.id}`
  const patched = (await app.inject({ method: 'PATCH', url, payload: { priority: 4, estimate: null } })).json()
  t.match(patched, { title: 'Patch me', priority: 4, estimate: null, due: '2026-12-31', tags: ['x'], status: 'open' })
  t.equal((await app.inject({ method: 'PATCH', url, payload: { title: null } })).statusCode, 422, 'null for a non-nullable field')
  t.equal((await app.inject({ method: 'PATCH', url, payload: { due: null } })).statusCode, 422, 'an optional field is not nullable unless declared so')
  const unchanged = await app.inject({ method: 'PATCH', url, payload: {} })
  t.equal(unchanged.statusCode, 200)
  t.same(unchanged.json(), patched, 'an empty PATCH changes nothing')
  t.equal((await app.inject({ method: 'PATCH', url: `${TASKS}/99999`, payload: { priority: 1 } })).statusCode, 404)
})

t.test('a PATCH or PUT without a body is `{}`, as for records and the catalog', async (t) => {
  const task = await createTask(app, { title: 'No body', priority: 5 })
  const url = `${TASKS}/${task.id}`
  const patched = await app.inject({ method: 'PATCH', url })
  t.equal(patched.statusCode, 200)
  t.same(patched.json(), task, 'a PATCH without a body changes nothing')
  const replaced = await app.inject({ method: 'PUT', url })
  t.equal(replaced.statusCode, 422)
  t.same(replaced.json().errors, [{ path: '/body/title', message: 'is required' }], 'a PUT without a body misses what `{}` misses')
  const notes = await buildResources(t, [{ name: 'notes', fields: Type.Object({ note: Type.Optional(Type.String()), rank: Type.Integer({ default: 1 }) }) }])
  const note = await notes.inject({ method: 'POST', url: '/api/v1/notes/', payload: { note: 'x', rank: 2 } })
  const reset = await notes.inject({ method: 'PUT', url: `/api/v1/notes/${note.json().id}` })
  t.equal(reset.statusCode, 200)
  t.match(reset.json(), { id: note.json().id, rank: 1 }, 'a PUT without a body replaces the row by `{}`: the defaults')
  t.notOk('note' in reset.json())
})

t.test('DELETE is 204, then the row is gone', async (t) => {
  const task = await createTask(app, { title: 'Delete me' })
  const url = `${TASKS}/${task.id}`
  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 204)
  const missing = await app.inject({ method: 'GET', url })
  t.equal(missing.statusCode, 404)
  t.equal(missing.json().detail, `tasks ${task.id} not found`)
  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 404)
})

t.test('the OpenAPI document has the row, the bodies and every filter as a parameter', async (t) => {
  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const row = document.components.schemas.TasksRecord
  t.same(Object.keys(row.properties), ['id', 'created_at', 'updated_at', 'title', 'status', 'priority', 'estimate', 'due', 'remind_at', 'done', 'tags', 'meta'])
  t.same(row.required.sort(), ['created_at', 'done', 'estimate', 'id', 'priority', 'remind_at', 'status', 'tags', 'title', 'updated_at'])
  const list = document.paths['/api/v1/tasks'].get
  const names = list.parameters.map((parameter: { name: string }) => parameter.name)
  for (const name of ['limit', 'offset', 'sort', 'cursor', 'count', 'status', 'status[in]', 'priority[gte]', 'title[contains]', 'due[is]', 'created_at[gt]']) {
    t.ok(names.includes(name), name)
  }
  t.notOk(names.includes('done[gt]'), 'a boolean has no order filters')
  t.ok(document.paths['/api/v1/tasks/{tasks_id}'].put)
  t.ok(document.paths['/api/v1/tasks/{tasks_id}'].patch)
})

t.test('string formats, patterns and array bounds are checked at the door, and nullable enums take null', async (t) => {
  const contacts = await buildResources(t, [{
    name: 'contacts',
    fields: Type.Object({
      email: Type.String({ format: 'email' }),
      site: Type.Optional(Type.String({ format: 'uri' })),
      ref: Type.Optional(Type.String({ format: 'uuid' })),
      code: Type.Optional(Type.String({ pattern: '^[A-Z]{3}$' })),
      kind: Type.Optional(Type.Union([Type.Literal('person'), Type.Literal('company'), Type.Null()])),
      labels: Type.Optional(Type.Array(Type.String({ enum: ['a', 'b'] }), { minItems: 1, uniqueItems: true }))
    })
  }])
  const post = (payload: Record<string, unknown>) => contacts.inject({ method: 'POST', url: '/api/v1/contacts/', payload })
  const good = { email: 'ada@example.com', site: 'https://example.com/x', ref: '0b7e2b0e-5f7a-4c1e-9d3a-2f1e6c7b8a90', code: 'ABC', kind: null, labels: ['a', 'b'] }
  const created = await post(good)
  t.equal(created.statusCode, 201)
  t.match(created.json(), good)
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ email: 'not-an-email' }, '/body/email'],
    [{ ...good, site: 'not a uri' }, '/body/site'],
    [{ ...good, ref: '1234' }, '/body/ref'],
    [{ ...good, code: 'abc' }, '/body/code'],
    [{ ...good, code: 'AB\u0000' }, '/body/code'],
    [{ ...good, kind: 'robot' }, '/body/kind'],
    [{ ...good, labels: [] }, '/body/labels'],
    [{ ...good, labels: ['a', 'a'] }, '/body/labels'],
    [{ ...good, labels: ['c'] }, '/body/labels/0']
  ]
  for (const [payload, path] of cases) {
    const res = await post(payload)
    t.equal(res.statusCode, 422, JSON.stringify(payload).slice(0, 70))
    t.equal(res.json().errors[0].path, path)
  }
})

t.test('a free-form object comes back whole, nested values and all', async (t) => {
  const data = { nested: { list: [1, 'two', null, true], 'key "q"': 1.5e-7 }, empty: {}, text: 'é 😀 \u2028' }
  const res = await app.inject({ method: 'POST', url: '/api/v1/documents/', payload: { data } })
  t.equal(res.statusCode, 201)
  t.same(res.json().data, data)
  t.same((await app.inject({ method: 'GET', url: `/api/v1/documents/${res.json().id}` })).json().data, data)
  t.same((await app.inject({ method: 'GET', url: '/api/v1/documents/' })).json()[0].data, data)
})
