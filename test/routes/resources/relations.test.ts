import { Type, type TObject } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { API_PREFIX, buildApp, type App } from '../../../app.js'
import type { DatabaseClient } from '../../../db/client.js'
import { rowsOf } from '../../../db/raw-rows.js'
import resourcePlugin, { type ResourceOptions } from '../../../routes/resources/index.js'
import { Reference } from '../../../schemas/fields.js'
import { NO_EVENT_LOOP_SHEDDING, NO_RATE_LIMITS } from '../../support/app.js'
import { enforceContract } from '../../support/contract.js'
import { freshDatabase } from '../../support/database.js'
import { buildResources } from '../../support/resources.js'
import { assertProblem, validationProblem } from '../../support/responses.js'

// The change feed is another part's: these tests are about the tables.
const NO_EVENTS = { events: false }

const Project = Type.Object({ name: Type.String() })
const RESOURCES: ResourceOptions[] = [
  { name: 'projects', fields: Project, routes: NO_EVENTS },
  { name: 'tasks', fields: Type.Object({ title: Type.String(), project_id: Reference('projects', { onDelete: 'cascade' }) }), routes: NO_EVENTS },
  { name: 'notes', fields: Type.Object({ body: Type.String(), project_id: Reference('projects', { onDelete: 'restrict' }) }), routes: NO_EVENTS },
  {
    name: 'links',
    fields: Type.Object({ url: Type.String(), project_id: Type.Union([Reference('projects', { onDelete: 'set-null' }), Type.Null()]) }),
    routes: NO_EVENTS
  },
  {
    name: 'steps',
    fields: Type.Object({ title: Type.String(), parent_id: Type.Optional(Type.Union([Reference('steps', { onDelete: 'cascade' }), Type.Null()])) }),
    routes: NO_EVENTS
  }
]

async function post (app: App, name: string, payload: object): Promise<{ id: number } & Record<string, unknown>> {
  const res = await app.inject({ method: 'POST', url: `${API_PREFIX}/${name}/`, payload })
  if (res.statusCode !== 201) throw new Error(`POST ${name}: ${res.statusCode} ${res.payload}`)
  return res.json()
}

const get = (app: App, name: string, id: number) => app.inject({ method: 'GET', url: `${API_PREFIX}/${name}/${id}` })
const remove = (app: App, name: string, id: number) => app.inject({ method: 'DELETE', url: `${API_PREFIX}/${name}/${id}` })

const app = await buildResources(t, RESOURCES)

t.test('cascade: deleting a project deletes its tasks', async (t) => {
  const project = await post(app, 'projects', { name: 'doomed' })
  const tasks = [await post(app, 'tasks', { title: 'a', project_id: project.id }), await post(app, 'tasks', { title: 'b', project_id: project.id })]
  const other = await post(app, 'tasks', { title: 'elsewhere', project_id: (await post(app, 'projects', { name: 'kept' })).id })
  t.equal((await remove(app, 'projects', project.id)).statusCode, 204)
  for (const task of tasks) t.equal((await get(app, 'tasks', task.id)).statusCode, 404, `task ${task.id} went with its project`)
  t.equal((await get(app, 'tasks', other.id)).statusCode, 200, 'another project\'s task stays')
})

t.test('restrict: a project with notes is not deleted (409 naming the resource and field), and nothing else is either', async (t) => {
  const project = await post(app, 'projects', { name: 'noted' })
  const note = await post(app, 'notes', { body: 'keep me', project_id: project.id })
  const task = await post(app, 'tasks', { title: 'would cascade', project_id: project.id })
  const res = await remove(app, 'projects', project.id)
  assertProblem(t, res, 409, 'RESOURCE_REFERENCED')
  t.equal(res.json().detail, `projects ${project.id} is still referenced by rows of notes (project_id): delete those rows, or point them elsewhere, first`)
  t.equal((await get(app, 'projects', project.id)).statusCode, 200, 'the project is still there')
  t.equal((await get(app, 'tasks', task.id)).statusCode, 200, 'the cascade was undone with it')
  t.equal((await get(app, 'notes', note.id)).statusCode, 200)
  t.equal((await remove(app, 'notes', note.id)).statusCode, 204)
  t.equal((await remove(app, 'projects', project.id)).statusCode, 204, 'once nothing restricts it, it goes')
})

t.test('set-null: deleting a project leaves its links without one', async (t) => {
  const project = await post(app, 'projects', { name: 'linked' })
  const link = await post(app, 'links', { url: 'https://example.com', project_id: project.id })
  t.equal((await remove(app, 'projects', project.id)).statusCode, 204)
  const kept = await get(app, 'links', link.id)
  t.equal(kept.statusCode, 200)
  t.equal(kept.json().project_id, null)
  t.not(kept.headers.etag, undefined)
})

t.test('a self-reference: a step\'s children go with it', async (t) => {
  const root = await post(app, 'steps', { title: 'root' })
  const child = await post(app, 'steps', { title: 'child', parent_id: root.id })
  const grandchild = await post(app, 'steps', { title: 'grandchild', parent_id: child.id })
  t.equal((await remove(app, 'steps', root.id)).statusCode, 204)
  t.equal((await get(app, 'steps', grandchild.id)).statusCode, 404)
})

t.test('a reference to a missing row is 422 naming the field, on create, PUT and PATCH', async (t) => {
  const missing = validationProblem(['/body/project_id', 'must match a row of projects (foreign key constraint "tasks_project_id_fkey")'])
  const created = await app.inject({ method: 'POST', url: `${API_PREFIX}/tasks/`, payload: { title: 'orphan', project_id: 999999 } })
  t.equal(created.statusCode, 422)
  t.same(created.json(), missing, 'create')
  const task = await post(app, 'tasks', { title: 'real', project_id: (await post(app, 'projects', { name: 'real' })).id })
  const url = `${API_PREFIX}/tasks/${task.id}`
  const put = await app.inject({ method: 'PUT', url, payload: { title: 'moved', project_id: 999999 } })
  t.equal(put.statusCode, 422)
  t.same(put.json(), missing, 'PUT')
  const patch = await app.inject({ method: 'PATCH', url, payload: { project_id: 999999 } })
  t.equal(patch.statusCode, 422)
  t.same(patch.json(), missing, 'PATCH')
  t.same((await get(app, 'tasks', task.id)).json().project_id, task.project_id, 'nothing was written')
})

t.test('each foreign key has its index, and its rule', async (t) => {
  const indexes = rowsOf<{ name: string }>(await app.plinthDb.db.execute(sql`select indexname as name from pg_indexes where tablename in ('tasks', 'notes', 'links', 'steps') order by 1`))
  t.same(indexes.map((row) => row.name), [
    'links_pkey', 'links_project_id_idx', 'notes_pkey', 'notes_project_id_idx', 'steps_parent_id_idx', 'steps_pkey', 'tasks_pkey', 'tasks_project_id_idx'
  ])
  const keys = rowsOf<{ name: string, rule: string }>(await app.plinthDb.db.execute(sql`
    select conname as name, confdeltype::text as rule from pg_constraint where contype = 'f' and conrelid::regclass::text in ('tasks', 'notes', 'links', 'steps') order by 1`))
  t.same(keys, [
    { name: 'links_project_id_fkey', rule: 'n' }, { name: 'notes_project_id_fkey', rule: 'r' }, { name: 'steps_parent_id_fkey', rule: 'c' }, { name: 'tasks_project_id_fkey', rule: 'c' }
  ])
})

t.test('a reference to a resource not registered before it fails the boot, saying to register it first', async (t) => {
  const tasks = { name: 'tasks', fields: Type.Object({ project_id: Reference('projects') }), routes: NO_EVENTS }
  const message = 'resource plugin: "tasks": field "project_id" references "projects", which is not registered; register the resource "projects" first, before "tasks"'
  await t.rejects(buildResources(t, [tasks]).then((app) => app.ready()), { code: 'RESOURCE_INVALID_OPTIONS', message }, 'not registered at all')
  await t.rejects(buildResources(t, [tasks, { name: 'projects', fields: Project, routes: NO_EVENTS }]).then((app) => app.ready()),
    { code: 'RESOURCE_INVALID_OPTIONS', message }, 'registered after it')
})

const SECRET_KEY = 'relations-test-secret-key-of-32-bytes!!'

/** One process of the app on `database` with these resources: a restart after a change of definition. */
async function boot (t: Test, database: DatabaseClient, tasks: TObject): Promise<App> {
  const app = await buildApp({ ...NO_RATE_LIMITS, ...NO_EVENT_LOOP_SHEDDING, SECRET_KEY, RESOURCES: [] }, { logger: false, database })
  t.teardown(() => app.close())
  enforceContract(app)
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'projects', fields: Project, routes: NO_EVENTS })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: tasks, routes: NO_EVENTS })
  await app.ready()
  return app
}

t.test('schema evolution: a field that becomes a reference is checked against the stored rows at boot', async (t) => {
  const database = await freshDatabase(t)
  const first = await boot(t, database, Type.Object({ title: Type.String(), project_id: Type.Integer() }))
  const project = await post(first, 'projects', { name: 'p' })
  const stray = await post(first, 'tasks', { title: 'stray', project_id: 4242 })
  const fine = await post(first, 'tasks', { title: 'fine', project_id: project.id })
  const referencing = Type.Object({ title: Type.String(), project_id: Reference('projects', { onDelete: 'cascade' }) })
  await t.rejects(boot(t, database, referencing), {
    code: 'RESOURCE_TABLE_INVALID',
    message: 'tasks: field "project_id" cannot reference projects: rows already stored hold ids that are no row of "projects"; find them with ' +
      'SELECT "id", "project_id" FROM "tasks" WHERE "project_id" NOT IN (SELECT "id" FROM "projects"), set them to ids that exist or delete them, ' +
      'and restart; or remove the reference'
  })
  t.equal((await first.inject({ method: 'DELETE', url: `${API_PREFIX}/tasks/${stray.id}` })).statusCode, 204, 'the stray row fixed as told')
  const second = await boot(t, database, referencing)
  t.equal((await remove(second, 'projects', project.id)).statusCode, 204)
  t.equal((await get(second, 'tasks', fine.id)).statusCode, 404, 'the new key cascades')
  const added = await boot(t, database, Type.Object({
    title: Type.String(), project_id: Reference('projects', { onDelete: 'cascade' }), reviewer_id: Type.Optional(Reference('projects', { onDelete: 'restrict' }))
  }))
  const reviewer = await post(added, 'projects', { name: 'reviewer' })
  await post(added, 'tasks', { title: 'reviewed', project_id: (await post(added, 'projects', { name: 'q' })).id, reviewer_id: reviewer.id })
  assertProblem(t, await remove(added, 'projects', reviewer.id), 409, 'RESOURCE_REFERENCED', 'a reference field added later: its key holds')
})
