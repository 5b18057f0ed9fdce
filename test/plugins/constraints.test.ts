import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { API_PREFIX } from '../../app.js'
import resourcePlugin from '../../routes/resources/index.js'
import { build, captureLogs } from '../support/app.js'
import { assertProblem } from '../support/responses.js'

// Constraints a host adds by hand to a resource's table, beside the ones plinth declares: a
// duplicate, a dangling reference, a CHECK or a NOT NULL is the client's 409 or 422, naming the
// constraint and the field, never a 500, and never quoting the value PostgreSQL's detail repeats.

const Project = Type.Object({ code: Type.String(), name: Type.Optional(Type.String()) })
const Task = Type.Object({
  title: Type.String(),
  project_id: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  note: Type.Optional(Type.String())
})

const logs = captureLogs()
const app = await build(t, { RESOURCES: ['notes'] }, { logger: logs.logger })
for (const [name, fields] of [['projects', Project], ['tasks', Task]] as const) await app.register(resourcePlugin, { prefix: API_PREFIX, name, fields })
// Errors as each driver shapes them, wrapped as Drizzle wraps them: the fields PostgreSQL sends, as the header names them.
app.route({
  method: ['POST', 'DELETE'],
  url: '/t/raise',
  handler: async (request) => {
    const fields = JSON.parse(String(request.headers['x-error'])) as object
    throw new Error('Failed query: insert into ...', { cause: Object.assign(new Error('refused'), { severity: 'ERROR' }, fields) })
  }
})
await app.ready()
for (const statement of [
  'create unique index projects_code_unique on projects (code)',
  'alter table tasks add constraint tasks_project_fk foreign key (project_id) references projects (id)',
  'alter table tasks add constraint tasks_title_not_reserved check (title <> \'admin\')',
  'alter table tasks alter column note set not null',
  'alter table notes add constraint notes_title_key unique (title)',
  'create unique index projects_name_lower on projects (lower(name))'
]) await app.plinthDb.db.execute(sql.raw(statement))

const url = (name: string, id?: number) => `${API_PREFIX}/${name}/${id ?? ''}`
const post = (name: string, payload: object) => app.inject({ method: 'POST', url: url(name), payload })
const SECRET_CODE = 'code-that-must-not-be-echoed'

t.test('a duplicate of a unique index a host added is 409 naming the index and the field, not the value', async (t) => {
  t.equal((await post('projects', { code: SECRET_CODE })).statusCode, 201)
  const res = await post('projects', { code: SECRET_CODE })
  assertProblem(t, res, 409, 'UNIQUE_VIOLATION')
  t.equal(res.json().detail, 'Another row of projects already has this code (unique constraint "projects_code_unique")')
  t.notMatch(res.payload, SECRET_CODE, 'the value is not in the answer')

  const other = await post('projects', { code: 'other' })
  const patched = await app.inject({ method: 'PATCH', url: url('projects', other.json().id), payload: { code: SECRET_CODE } })
  assertProblem(t, patched, 409, 'UNIQUE_VIOLATION', 'a PATCH onto a taken value')
  const replaced = await app.inject({ method: 'PUT', url: url('projects', other.json().id), payload: { code: SECRET_CODE } })
  assertProblem(t, replaced, 409, 'UNIQUE_VIOLATION', 'a PUT onto a taken value')
})

t.test('a unique constraint on a record resource is 409 too', async (t) => {
  t.equal((await post('notes', { title: 'once' })).statusCode, 201)
  const res = await post('notes', { title: 'once' })
  assertProblem(t, res, 409, 'UNIQUE_VIOLATION')
  t.equal(res.json().detail, 'Another row of notes already has this title (unique constraint "notes_title_key")')
})

t.test('a reference to a missing row is 422 naming the field and the foreign key', async (t) => {
  const res = await post('tasks', { title: 'dangling', project_id: 424242, note: 'n' })
  assertProblem(t, res, 422, 'VALIDATION_FAILED')
  t.same(res.json().errors, [{ path: '/body/project_id', message: 'must match a row of projects (foreign key constraint "tasks_project_fk")' }])
  t.notMatch(res.payload, '424242', 'the value is not in the answer')

  const project = (await post('projects', { code: 'for-patch' })).json()
  const task = (await post('tasks', { title: 'patched', project_id: project.id, note: 'n' })).json()
  const patched = await app.inject({ method: 'PATCH', url: url('tasks', task.id), payload: { project_id: 424242 } })
  assertProblem(t, patched, 422, 'VALIDATION_FAILED', 'a PATCH to a missing row')
  t.same(patched.json().errors.map((error: { path: string }) => error.path), ['/body/project_id'])
})

t.test('deleting a row another row references is 409 naming the foreign key', async (t) => {
  const project = (await post('projects', { code: 'referenced' })).json()
  t.equal((await post('tasks', { title: 'child', project_id: project.id, note: 'n' })).statusCode, 201)
  const res = await app.inject({ method: 'DELETE', url: url('projects', project.id) })
  assertProblem(t, res, 409, 'FOREIGN_KEY_VIOLATION')
  t.equal(res.json().detail, 'This row is still referenced from tasks (project_id) (foreign key constraint "tasks_project_fk")')
  t.equal((await app.inject({ method: 'GET', url: url('projects', project.id) })).statusCode, 200, 'the row is still there')
})

t.test('a check constraint a host added is 422 naming the field and the constraint', async (t) => {
  const res = await post('tasks', { title: 'admin', note: 'n' })
  assertProblem(t, res, 422, 'VALIDATION_FAILED')
  t.same(res.json().errors, [{ path: '/body/title', message: 'is refused by the check constraint "tasks_title_not_reserved" of tasks' }])
})

t.test('a NOT NULL a host added is 422 naming the field', async (t) => {
  const res = await post('tasks', { title: 'no note' })
  assertProblem(t, res, 422, 'VALIDATION_FAILED')
  t.same(res.json().errors, [{ path: '/body/note', message: 'must have a value: the column is NOT NULL in tasks' }])
  t.match(res.json().detail, 'must have a value')

  const task = (await post('tasks', { title: 'with note', note: 'n' })).json()
  const replaced = await app.inject({ method: 'PUT', url: url('tasks', task.id), payload: { title: 'replaced' } })
  assertProblem(t, replaced, 422, 'VALIDATION_FAILED', 'a PUT that leaves it out')
})

t.test('a unique index on an expression names the index, and no field', async (t) => {
  t.equal((await post('projects', { code: 'n-1', name: 'Same' })).statusCode, 201)
  const res = await post('projects', { code: 'n-2', name: 'same' })
  assertProblem(t, res, 409, 'UNIQUE_VIOLATION')
  t.equal(res.json().detail, 'Another row of projects already has these values (unique constraint "projects_name_lower")')
})

t.test('either driver\'s fields are read, and what PostgreSQL leaves out is left out of the answer', async (t) => {
  const raise = (fields: object, payload: unknown = {}, method: 'POST' | 'DELETE' = 'POST') => app.inject({
    method,
    url: '/t/raise',
    headers: { 'x-error': JSON.stringify(fields), ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
    ...(method === 'POST' ? { payload: JSON.stringify(payload) } : {})
  })
  const postgresJs = { code: '23505', schema_name: 'public', table_name: 'projects', constraint_name: 'projects_code_unique' }
  const pglite = { code: '23505', schema: 'public', table: 'projects', constraint: 'projects_code_unique' }
  for (const fields of [postgresJs, pglite]) {
    const res = await raise(fields)
    assertProblem(t, res, 409, 'UNIQUE_VIOLATION')
    t.equal(res.json().detail, 'Another row of projects already has this code (unique constraint "projects_code_unique")')
  }
  const check = await raise({ code: '23514' })
  t.same(check.json().errors, [{ path: '/body', message: 'is refused by the check constraint of the table' }], 'no table, no constraint')
  const reference = await raise({ code: '23503', table: 'tasks', constraint: 'tasks_project_fk' }, 'not an object')
  t.same(reference.json().errors, [{ path: '/body', message: 'must match a row of projects (foreign key constraint "tasks_project_fk")' }], 'a body that is no object')
  const unknown = await raise({ code: '23503', table: 'tasks', constraint: 'no_such_constraint' }, undefined, 'DELETE')
  assertProblem(t, unknown, 409, 'FOREIGN_KEY_VIOLATION', 'a constraint the catalogs do not know')
  t.equal(unknown.json().detail, 'This row is still referenced from tasks (foreign key constraint "no_such_constraint")')
  const notNull = await raise({ code: '23502', table: 'tasks' }, undefined, 'DELETE')
  t.same(notNull.json().errors, [{ path: '/request', message: 'must have a value: the column is NOT NULL in tasks' }], 'no body, no column')
  assertProblem(t, await raise({ code: '42P01' }), 500, 'INTERNAL_ERROR', 'another SQLSTATE is no constraint')
})

t.test('in one batch of creates, the duplicate gets its 409 and the other rows are created', async (t) => {
  t.equal((await post('projects', { code: 'batch-taken' })).statusCode, 201)
  const answers = await Promise.all(['batch-new-1', 'batch-taken', 'batch-new-2', 'batch-twice', 'batch-twice'].map((code) => post('projects', { code })))
  t.same(answers.map((res) => res.statusCode).slice(0, 3), [201, 409, 201])
  t.same(answers.slice(3).map((res) => res.statusCode).sort(), [201, 409], 'of two new rows with one value, one is created')
  const listed = (await app.inject({ method: 'GET', url: `${url('projects')}?code[in]=batch-new-1,batch-new-2,batch-twice` })).json()
  t.equal(listed.length, 3)
})

t.test('in one batch of updates, the one onto a taken value gets its 409 and the others are written', async (t) => {
  t.equal((await post('projects', { code: 'u-taken' })).statusCode, 201)
  const created = await Promise.all(['u-1', 'u-2', 'u-3'].map(async (code) => (await post('projects', { code })).json()))
  const answers = await Promise.all(created.map(({ id }, i) =>
    app.inject({ method: 'PATCH', url: url('projects', id), payload: { code: i === 1 ? 'u-taken' : `u-${i + 1}-renamed` } })))
  t.same(answers.map((res) => res.statusCode), [200, 409, 200])
})

t.test('no refused write is logged as an error, nor its value anywhere', async (t) => {
  t.same(logs.lines.filter((line) => Number(line.level) >= 50).map((line) => line.req ?? line.msg), ['unhandled error'], 'only the SQLSTATE that is no constraint')
  t.notMatch(JSON.stringify(logs.lines), SECRET_CODE)
  t.ok(logs.lines.some((line) => line.msg === 'a constraint refused the write' && line.constraint === 'projects_code_unique'), 'the constraint is named at level info')
})
