import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { join, relative, resolve } from 'node:path'
import createError from '@fastify/error'
import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { API_PREFIX } from '../../../app.js'
import { loadConfig } from '../../../config.js'
import { rowsOf } from '../../../db/raw-rows.js'
import * as plinth from '../../../index.js'
import { resourceHooks } from '../../../routes/resources/hooks.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { readSettingFiles } from '../../../settings/files.js'
import { Reference } from '../../../schemas/fields.js'
import { build, captureLogs, newAccount } from '../../support/app.js'

const ProjectFields = Type.Object({ name: Type.String(), open_tasks: Type.Integer({ default: 0, readOnly: true }) })
const TaskFields = Type.Object({
  title: Type.String({ minLength: 1 }),
  status: Type.Union([Type.Literal('open'), Type.Literal('done')], { default: 'open' }),
  project_id: Type.Optional(Reference('projects', { onDelete: 'cascade' })),
  done_at: Type.Optional(Type.String({ format: 'date-time', readOnly: true })),
  created_by: Type.Optional(Type.Integer({ readOnly: true }))
})

// What a host throws: plinth's public problem helpers.
const { problemError, validationError } = plinth
const taskRefused = (why: string) => problemError(409, 'TASKS_REFUSED', `task refused: ${why}`)
const FastifyRefusal = createError('TASKS_LOCKED', 'the task "%s" is locked', 409)

/** What the after* hooks saw, in order. */
const seen: Array<[string, unknown, unknown?]> = []

const hooks = resourceHooks(TaskFields, {
  async beforeCreate (data, { tx, account }) {
    if (data.title === 'refused') throw taskRefused('refused by name')
    if (data.project_id !== undefined && data.status !== 'done') {
      await tx.execute(sql`update projects set open_tasks = open_tasks + 1 where id = ${data.project_id}`)
    }
    // After the count: the refusal must undo it too.
    if (data.title === 'refused late') throw validationError({ '/body/title': 'is refused once counted' })
    return { ...data, ...(account ? { created_by: account.id } : {}) }
  },
  async beforeUpdate (data, { tx, current }) {
    if (current.title === 'locked') throw new FastifyRefusal(current.title)
    const closes = data.status === 'done' && current.status !== 'done'
    const opens = data.status === 'open' && current.status === 'done'
    if (current.project_id !== undefined && (closes || opens)) {
      await tx.execute(sql`update projects set open_tasks = open_tasks + ${closes ? -1 : 1} where id = ${current.project_id}`)
    }
    return closes ? { ...data, done_at: new Date().toISOString() } : data
  },
  async beforeDelete (current, { tx }) {
    if (current.project_id !== undefined && current.status !== 'done') {
      await tx.execute(sql`update projects set open_tasks = open_tasks - 1 where id = ${current.project_id}`)
    }
    if (current.title === 'kept') throw taskRefused('kept by a hook')
  },
  afterCreate (row) {
    if (row.title === 'after fails') throw new Error('the mailer is down')
    seen.push(['created', row.title])
  },
  afterUpdate (row, { previous }) { seen.push(['updated', previous.status, row.status]) },
  afterDelete (row) { seen.push(['deleted', row.title]) }
})

async function hookedApp (t: Test, logger?: object) {
  const app = await build(t, {}, logger ? { logger } : {})
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'projects', fields: ProjectFields })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, hooks })
  // The account is the guard's: without one, no token is read.
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'signed', fields: TaskFields, hooks, guards: { write: app.plinthGuards.authenticate } })
  return app
}

const logs = captureLogs()
const app = await hookedApp(t, logs.logger)
const db = app.plinthDb.db
const TASKS = `${API_PREFIX}/tasks`
const post = (payload: unknown, headers: Record<string, string> = {}) => app.inject({ method: 'POST', url: `${TASKS}/`, payload: payload as object, headers })
const openTasks = async (id: number) => (await app.inject({ method: 'GET', url: `${API_PREFIX}/projects/${id}` })).json().open_tasks as number
const newProject = async () => (await app.inject({ method: 'POST', url: `${API_PREFIX}/projects/`, payload: { name: 'p' } })).json() as { id: number }
const taskCount = async () => Number(rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from tasks`))[0]!.n)

t.test('a beforeUpdate hook stamps done_at when the status becomes done', async (t) => {
  const task = (await post({ title: 'write docs' })).json()
  t.equal(task.done_at, undefined)
  const done = await app.inject({ method: 'PATCH', url: `${TASKS}/${task.id}`, payload: { status: 'done' } })
  t.equal(done.statusCode, 200)
  t.match(done.json().done_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  const renamed = await app.inject({ method: 'PATCH', url: `${TASKS}/${task.id}`, payload: { title: 'write more docs' } })
  t.equal(renamed.json().done_at, done.json().done_at, 'only the change to done stamps it')
  const body = await app.inject({ method: 'PUT', url: `${TASKS}/${task.id}`, payload: { title: 'no done_at from a body', done_at: '2000-01-01T00:00:00.000Z' } })
  t.equal(body.statusCode, 200)
  t.equal(body.json().done_at, done.json().done_at, 'a readOnly field stays the hook\'s')
})

t.test('a hook keeps a project\'s open-task count in the write\'s transaction', async (t) => {
  const project = await newProject()
  const [a, b] = [(await post({ title: 'a', project_id: project.id })).json(), (await post({ title: 'b', project_id: project.id })).json()]
  t.equal(await openTasks(project.id), 2, 'each create counted')
  await app.inject({ method: 'PATCH', url: `${TASKS}/${a.id}`, payload: { status: 'done' } })
  t.equal(await openTasks(project.id), 1, 'done is no longer open')
  await app.inject({ method: 'PATCH', url: `${TASKS}/${a.id}`, payload: { status: 'open' } })
  t.equal(await openTasks(project.id), 2, 'reopened')
  t.equal((await app.inject({ method: 'DELETE', url: `${TASKS}/${b.id}` })).statusCode, 204)
  t.equal(await openTasks(project.id), 1, 'a deleted open task is no longer counted')

  const before = await taskCount()
  const late = await post({ title: 'refused late', project_id: project.id })
  t.equal(late.statusCode, 422)
  t.same(late.json().errors, [{ path: '/body/title', message: 'is refused once counted' }])
  t.equal(await openTasks(project.id), 1, 'the refusal undid the hook\'s own write')
  t.equal(await taskCount(), before, 'and the row')

  const kept = (await post({ title: 'kept', project_id: project.id })).json()
  t.equal(await openTasks(project.id), 2)
  const refused = await app.inject({ method: 'DELETE', url: `${TASKS}/${kept.id}` })
  t.equal(refused.statusCode, 409)
  t.equal(await openTasks(project.id), 2, 'a refused delete undoes the count it changed')
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/${kept.id}` })).statusCode, 200, 'the row stays')
})

t.test('concurrent creates each count once: the hook\'s write is in its own request\'s transaction', async (t) => {
  const project = await newProject()
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i % 5 === 4 ? { title: 'refused late', project_id: project.id } : { title: `c${i}`, project_id: project.id })))
  t.same(answers.map((res) => res.statusCode), Array.from({ length: 20 }, (_, i) => i % 5 === 4 ? 422 : 201))
  t.equal(await openTasks(project.id), 16, 'the refused ones undid their count, and only theirs')
})

t.test('a problem error thrown by a hook becomes the response', async (t) => {
  const refused = await post({ title: 'refused' })
  t.equal(refused.statusCode, 409)
  t.same(refused.json(), { type: 'about:blank', title: 'Conflict', status: 409, detail: 'task refused: refused by name', code: 'TASKS_REFUSED' })
  const locked = (await post({ title: 'locked' })).json()
  const change = await app.inject({ method: 'PATCH', url: `${TASKS}/${locked.id}`, payload: { status: 'done' } })
  t.equal(change.statusCode, 409, '@fastify/error too')
  t.same(change.json(), { type: 'about:blank', title: 'Conflict', status: 409, detail: 'the task "locked" is locked', code: 'TASKS_LOCKED' })
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/${locked.id}` })).json().status, 'open', 'nothing changed')
})

t.test('an after* error is logged and the write stands', async (t) => {
  const res = await post({ title: 'after fails' })
  t.equal(res.statusCode, 201)
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/${res.json().id}` })).statusCode, 200)
  const line = logs.lines.find((entry) => entry.hook === 'afterCreate')
  t.ok(line, 'the error is logged')
  t.equal(line?.level, 50)
  t.equal(line?.resource, 'tasks')
  t.match((line?.err as { message: string }).message, 'the mailer is down')
})

t.test('after* hooks get the stored row, and the row before an update', async (t) => {
  seen.length = 0
  const task = (await post({ title: 'seen' })).json()
  await app.inject({ method: 'PATCH', url: `${TASKS}/${task.id}`, payload: { status: 'done' } })
  await app.inject({ method: 'DELETE', url: `${TASKS}/${task.id}` })
  t.same(seen, [['created', 'seen'], ['updated', 'open', 'done'], ['deleted', 'seen']])
})

t.test('the hook is told the account', async (t) => {
  const ada = await newAccount(app)
  const task = await app.inject({ method: 'POST', url: `${API_PREFIX}/signed/`, payload: { title: 'mine' }, headers: ada.session.headers })
  t.equal(task.json().created_by, ada.user.id)
  const bulk = await app.inject({ method: 'POST', url: `${API_PREFIX}/signed/`, payload: [{ title: 'one' }, { title: 'two' }], headers: ada.session.headers })
  t.same(bulk.json().map((row: { created_by: number }) => row.created_by), [ada.user.id, ada.user.id])
  t.equal((await post({ title: 'anonymous' })).json().created_by, undefined, 'no account: null')
})

t.test('If-Match keeps working with hooks', async (t) => {
  const created = await post({ title: 'versioned' })
  const stale = created.headers.etag as string
  const first = await app.inject({ method: 'PATCH', url: `${TASKS}/${created.json().id}`, payload: { title: 'v2' }, headers: { 'if-match': stale } })
  t.equal(first.statusCode, 200)
  t.not(first.headers.etag, stale)
  const again = await app.inject({ method: 'PATCH', url: `${TASKS}/${created.json().id}`, payload: { status: 'done' }, headers: { 'if-match': stale } })
  t.equal(again.statusCode, 412)
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/${created.json().id}` })).json().status, 'open', 'the hook\'s change was not written')
  const gone = await app.inject({ method: 'DELETE', url: `${TASKS}/${created.json().id}`, headers: { 'if-match': stale } })
  t.equal(gone.statusCode, 412)
  t.equal((await app.inject({ method: 'DELETE', url: `${TASKS}/${created.json().id}`, headers: { 'if-match': first.headers.etag as string } })).statusCode, 204)
  t.equal((await app.inject({ method: 'PATCH', url: `${TASKS}/999999`, payload: { title: 'x' } })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url: `${TASKS}/999999` })).statusCode, 404)
})

t.test('a bulk create runs beforeCreate on each row in its one transaction', async (t) => {
  const project = await newProject()
  const res = await post([{ title: 'x', project_id: project.id }, { title: 'y', project_id: project.id }, { title: 'z', project_id: project.id, status: 'done' }])
  t.equal(res.statusCode, 201)
  t.equal(await openTasks(project.id), 2)
  const before = await taskCount()
  const refused = await post([{ title: 'p', project_id: project.id }, { title: 'refused late', project_id: project.id }])
  t.equal(refused.statusCode, 422)
  t.equal(await openTasks(project.id), 2, 'the first row\'s count was undone with the refusal of the second')
  t.equal(await taskCount(), before)
})

t.test('RESOURCES_FILE: "hooks" names a module whose default export is the hooks', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-hooks-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = async (hooksPath: string) => {
    const path = join(dir, `resources-${Math.random().toString(36).slice(2)}.json`)
    await writeFile(path, JSON.stringify({
      notes: { fields: { type: 'object', required: ['title'], properties: { title: { type: 'string' }, note: { type: 'string', readOnly: true } } }, hooks: hooksPath }
    }))
    return path
  }
  const fixtures = resolve(import.meta.dirname, '../../fixtures')
  const app = await build(t, { RESOURCES_FILE: await file(relative(dir, join(fixtures, 'tasks-hooks.ts'))) })
  const created = await app.inject({ method: 'POST', url: '/api/v1/notes/', payload: { title: 'hooked' } })
  t.equal(created.statusCode, 201)
  t.equal(created.json().note, 'from the hooks module')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/notes/', payload: { title: 'forbidden' } })).json().code, 'TASKS_TITLE_REFUSED')

  const missing = await file('./no-such-hooks.js')
  const error = t.throws(() => readSettingFiles(loadConfig({ RESOURCES_FILE: missing }))) as Error
  t.equal(error.message, `RESOURCES_FILE ${missing}: notes.hooks: no module at ${join(dir, 'no-such-hooks.js')}`)

  const bad = join(fixtures, 'bad-hooks.ts')
  await t.rejects(build(t, { RESOURCES_FILE: await file(bad) }), { message: `RESOURCES_FILE: notes.hooks: ${bad}: hooks.beforeCreate must be a function (got string)` })
})

t.test('every function the hooks\' documentation tells a host to throw with is exported by plinth', async (t) => {
  const source = await readFile(new URL('../../../routes/resources/hooks.ts', import.meta.url), 'utf8')
  const comments = (source.match(/\/\*\*[\s\S]*?\*\//g) ?? []).join('\n')
  const named = new Set([...comments.matchAll(/`([a-z]+[A-Z]\w*)`/g)].map(([, name]) => name!))
  t.ok(named.has('problemError'), 'the documentation names the helpers')
  for (const name of named) t.equal(typeof (plinth as Record<string, unknown>)[name], 'function', `${name} is a function plinth exports`)
})
