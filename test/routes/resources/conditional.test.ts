import t from 'tap'
import { API_PREFIX } from '../../../app.js'
import { newAccount } from '../../support/app.js'
import { conditionalTests, requiredIfMatchTests } from '../../support/conditional.js'
import { assertProblem } from '../../support/responses.js'
import { buildResources, createRecord } from '../../support/resources.js'
import { TaskFields, createTask } from '../../support/tasks.js'

let n = 0
const recordChange = () => ({ title: `title ${++n}` })
const taskChange = () => ({ title: `task ${++n}` })
const taskReplace = () => ({ title: `task ${++n}`, status: 'open' })
const NOTES = `${API_PREFIX}/notes`
const TASKS = `${API_PREFIX}/tasks`

const app = await buildResources(t, ['notes', { name: 'tasks', fields: TaskFields }, { name: 'owned', fields: TaskFields, owner: true }])
const owner = await newAccount(app)
const OWNED = `${API_PREFIX}/owned`

t.test('records (PUT changes the fields sent)', async (t) => {
  conditionalTests(t, app, { create: async () => `${NOTES}/${(await createRecord(app, 'notes', { title: 'a' })).id}`, change: recordChange, method: 'PUT', table: 'notes' })
})

t.test('rows defined by fields, by PATCH', async (t) => {
  conditionalTests(t, app, { create: async () => `${TASKS}/${(await createTask(app, { title: 'a' })).id}`, change: taskChange, table: 'tasks' })
})

t.test('rows defined by fields, by PUT', async (t) => {
  conditionalTests(t, app, { create: async () => `${TASKS}/${(await createTask(app, { title: 'a' })).id}`, change: taskReplace, method: 'PUT', deletes: false, table: 'tasks' })
})

t.test('an owner\'s rows', async (t) => {
  const headers = owner.session.headers
  conditionalTests(t, app, { create: async () => `${OWNED}/${(await createTask(app, { title: 'a' }, headers, `${OWNED}/`)).id}`, change: taskChange, headers, table: 'owned' })
})

t.test('another user\'s row is 404 whatever If-Match says: its ETag is never told', async (t) => {
  const row = await createTask(app, { title: 'private' }, owner.session.headers, `${OWNED}/`)
  const other = await newAccount(app)
  for (const field of ['*', '"1"']) {
    assertProblem(t, await app.inject({ method: 'PATCH', url: `${OWNED}/${row.id}`, headers: { ...other.session.headers, 'if-match': field }, payload: { title: 'x' } }),
      404, 'RESOURCE_NOT_FOUND', `If-Match: ${field}`)
  }
})

t.test('created rows and records carry the ETag a GET then sees', async (t) => {
  for (const [url, payload] of [[`${NOTES}/`, { title: 'n' }], [`${TASKS}/`, { title: 't' }]] as const) {
    const res = await app.inject({ method: 'POST', url, payload })
    t.equal(res.statusCode, 201)
    t.equal((await app.inject({ method: 'GET', url: `${url}${res.json().id}` })).headers.etag, res.headers.etag, url)
  }
})

t.test('REQUIRE_IF_MATCH=true: writes without If-Match are 428', async (t) => {
  const strict = await buildResources(t, [{ name: 'notes', requireIfMatch: true }, { name: 'tasks', fields: TaskFields, requireIfMatch: true }])
  await requiredIfMatchTests(t, strict, { create: async () => `${NOTES}/${(await createRecord(strict, 'notes', { title: 'a' })).id}`, change: recordChange, method: 'PUT' })
  await requiredIfMatchTests(t, strict, { create: async () => `${TASKS}/${(await createTask(strict, { title: 'a' })).id}`, change: taskChange })
})
