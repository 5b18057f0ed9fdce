import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { foreignKeyOf } from '../../../db/crud.js'
import { Reference } from '../../../schemas/fields.js'
import { newAccount, superuser } from '../../support/app.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { buildResources } from '../../support/resources.js'

const ProjectFields = Type.Object({ name: Type.String() })
const TaskFields = Type.Object({ title: Type.String(), project_id: Type.Optional(Type.Union([Reference('projects'), Type.Null()])) })

const app = await buildResources(t, [
  { name: 'projects', fields: ProjectFields, owner: true },
  { name: 'tasks', fields: TaskFields, owner: true }
])
// Not owners' resources themselves, but their rows point at owners' rows: one guarded (the writer is known), one open to anyone.
for (const [name, guards] of [['links', { write: app.plinthGuards.authenticate }], ['open_links', {}]] as const) {
  await app.register(resourcePlugin, { prefix: '/api/v1', name, fields: TaskFields, guards })
}
const db = app.plinthDb.db
// The foreign keys the resource tables declare; made here when the tables do not have them, so the comparison below is with PostgreSQL's own refusal.
for (const table of ['tasks', 'links', 'open_links']) {
  if (await foreignKeyOf(db, table, 'project_id') === undefined) {
    await db.execute(sql.raw(`alter table ${table} add constraint ${table}_project_id_fkey foreign key (project_id) references projects (id)`))
  }
}
const ada = await newAccount(app)
const bob = await newAccount(app)
const root = await superuser(app, 'root-references@example.com')
const MISSING = 999_999

const send = (method: 'POST' | 'PATCH' | 'PUT', url: string, payload: unknown, headers: Record<string, string>) =>
  app.inject({ method, url: `/api/v1/${url}`, payload: payload as object, headers })
const projectOf = async (headers: Record<string, string>) => (await send('POST', 'projects/', { name: 'p' }, headers)).json() as { id: number }
const adas = await projectOf(ada.session.headers)
const bobs = await projectOf(bob.session.headers)

t.test('a user cannot attach a task to another owner\'s project: the 422 is the one a missing project gets', async (t) => {
  const theirs = await send('POST', 'tasks/', { title: 't', project_id: bobs.id }, ada.session.headers)
  const missing = await send('POST', 'tasks/', { title: 't', project_id: MISSING }, ada.session.headers)
  t.equal(theirs.statusCode, 422)
  t.same(theirs.json(), missing.json(), 'the whole problem document, byte for byte in meaning')
  // Where no check runs (a superuser sees every project), PostgreSQL's foreign key refuses: the same text.
  const refusedByKey = await send('POST', 'tasks/', { title: 't', project_id: MISSING }, root.session.headers)
  t.same(theirs.json(), refusedByKey.json(), 'the foreign key\'s own refusal')
  t.match(theirs.json(), { code: 'VALIDATION_FAILED', errors: [{ path: '/body/project_id', message: /^must match a row of projects \(foreign key constraint "tasks_project_id_fkey"\)$/ }] })
  const listed = await app.inject({ method: 'GET', url: '/api/v1/tasks/', headers: ada.session.headers })
  t.same(listed.json(), [], 'nothing was stored')
})

t.test('a user cannot move a task to another owner\'s project, by PATCH or PUT', async (t) => {
  const task = (await send('POST', 'tasks/', { title: 'mine', project_id: adas.id }, ada.session.headers)).json()
  for (const method of ['PATCH', 'PUT'] as const) {
    const theirs = await send(method, `tasks/${task.id}`, { title: 'moved', project_id: bobs.id }, ada.session.headers)
    const missing = await send(method, `tasks/${task.id}`, { title: 'moved', project_id: MISSING }, ada.session.headers)
    t.equal(theirs.statusCode, 422, method)
    t.same(theirs.json(), missing.json(), method)
  }
  const rootTask = (await send('POST', 'tasks/', { title: 'root\'s' }, root.session.headers)).json()
  const refusedByKey = await send('PATCH', `tasks/${rootTask.id}`, { project_id: MISSING }, root.session.headers)
  t.same((await send('PATCH', `tasks/${task.id}`, { project_id: bobs.id }, ada.session.headers)).json(), refusedByKey.json(), 'the foreign key\'s own refusal of a PATCH')
  t.equal((await app.inject({ method: 'GET', url: `/api/v1/tasks/${task.id}`, headers: ada.session.headers })).json().project_id, adas.id, 'unchanged')
})

t.test('a bulk create names every row that points at another owner\'s project, as it names missing ones', async (t) => {
  const res = await send('POST', 'tasks/', [
    { title: 'a', project_id: adas.id }, { title: 'b', project_id: bobs.id }, { title: 'c' }, { title: 'd', project_id: MISSING }
  ], ada.session.headers)
  t.equal(res.statusCode, 422)
  const message = 'must match a row of projects (foreign key constraint "tasks_project_id_fkey")'
  t.same(res.json().errors, [{ path: '/body/1/project_id', message }, { path: '/body/3/project_id', message }])
  t.equal(res.json().detail, `/body/1/project_id ${message}; /body/3/project_id ${message}`)
})

t.test('own projects, no project, and a superuser\'s any project are accepted', async (t) => {
  t.equal((await send('POST', 'tasks/', { title: 'own', project_id: adas.id }, ada.session.headers)).statusCode, 201)
  t.equal((await send('POST', 'tasks/', { title: 'none', project_id: null }, ada.session.headers)).statusCode, 201)
  t.equal((await send('POST', 'tasks/', [{ title: 'own' }, { title: 'own too', project_id: adas.id }], ada.session.headers)).statusCode, 201)
  const rootTask = await send('POST', 'tasks/', { title: 'root', project_id: bobs.id }, root.session.headers)
  t.equal(rootTask.statusCode, 201)
  t.equal(rootTask.json().project_id, bobs.id)
})

t.test('a resource without owners that references an owner\'s rows: each writer still sees only their own', async (t) => {
  const theirs = await send('POST', 'links/', { title: 'l', project_id: bobs.id }, ada.session.headers)
  t.equal(theirs.statusCode, 422)
  t.same(theirs.json(), (await send('POST', 'links/', { title: 'l', project_id: MISSING }, ada.session.headers)).json())
  t.equal((await send('POST', 'links/', { title: 'l', project_id: adas.id }, ada.session.headers)).statusCode, 201)
  // Without a guard of its own, the writer is who the projects' read guard says: nobody without a token.
  const anonymous = await send('POST', 'open_links/', { title: 'l', project_id: adas.id }, {})
  t.equal(anonymous.statusCode, 422)
  t.same(anonymous.json().errors, [{ path: '/body/project_id', message: 'must match a row of projects (foreign key constraint "open_links_project_id_fkey")' }])
  t.equal((await send('POST', 'open_links/', { title: 'l', project_id: bobs.id }, ada.session.headers)).statusCode, 422, 'with a token, another owner\'s project is still missing')
  t.equal((await send('POST', 'open_links/', { title: 'l', project_id: adas.id }, ada.session.headers)).statusCode, 201, 'and the writer\'s own is there, as GET /projects/{id} shows it')
  t.equal((await send('POST', 'open_links/', { title: 'l' }, {})).statusCode, 201, 'a row with no reference is fine')
})
