import { eq } from 'drizzle-orm'
import Fastify from 'fastify'
import t from 'tap'
import { users } from '../../../db/schema.js'
import { dbPlugin, resourcePlugin } from '../../../index.js'
import { login, newAccount, register, superuser } from '../../support/app.js'
import { freshDatabase } from '../../support/database.js'
import { buildResources } from '../../support/resources.js'
import { TaskFields, createTask } from '../../support/tasks.js'

t.test('owner mode: each user sees and changes only their own rows; others get 404, never 403', async (t) => {
  const app = await buildResources(t, [{ name: 'tasks', fields: TaskFields, owner: true }])
  const TASKS = '/api/v1/tasks'
  const ada = await newAccount(app)
  const bob = await newAccount(app)

  t.equal((await app.inject({ method: 'GET', url: `${TASKS}/` })).statusCode, 401, 'anonymous lists are refused')
  t.equal((await app.inject({ method: 'POST', url: `${TASKS}/`, payload: { title: 'x' } })).statusCode, 401)

  const mine = await createTask(app, { title: 'Ada\'s', owner_id: bob.user.id }, ada.session.headers)
  t.equal(mine.owner_id, ada.user.id, 'the owner is the authenticated user, whatever the body says')
  await createTask(app, { title: 'Bob\'s' }, bob.session.headers)

  const list = async (headers: Record<string, string>, query = '') =>
    (await app.inject({ method: 'GET', url: `${TASKS}/?count=exact${query}`, headers }))
  t.same((await list(ada.session.headers)).json().map((task: { title: string }) => task.title), ['Ada\'s'])
  t.equal((await list(ada.session.headers)).headers['x-total-count'], '1', 'the count is of your own rows')
  t.same((await list(bob.session.headers)).json().map((task: { title: string }) => task.title), ['Bob\'s'])
  t.same((await list(bob.session.headers, `&owner_id=${ada.user.id}`)).json(), [], 'filtering by another owner shows nothing')

  const url = `${TASKS}/${mine.id}`
  for (const [method, payload] of [['GET', undefined], ['PATCH', { title: 'taken' }], ['PUT', { title: 'taken' }], ['DELETE', undefined]] as const) {
    const res = await app.inject({ method, url, headers: bob.session.headers, payload })
    t.equal(res.statusCode, 404, `${method} on someone else's row`)
    t.equal(res.json().detail, `tasks ${mine.id} not found`)
  }
  t.equal((await app.inject({ method: 'GET', url, headers: ada.session.headers })).json().title, 'Ada\'s', 'nothing changed')

  const root = await superuser(app, 'root-owner@example.com')
  t.same((await list(root.session.headers)).json().map((task: { title: string }) => task.title), ['Ada\'s', 'Bob\'s'], 'a superuser sees every row')
  t.same((await list(root.session.headers, `&owner_id=${bob.user.id}`)).json().map((task: { title: string }) => task.title), ['Bob\'s'])
  t.equal((await app.inject({ method: 'PATCH', url, headers: root.session.headers, payload: { done: true } })).json().owner_id, ada.user.id)

  t.equal((await app.inject({ method: 'DELETE', url, headers: ada.session.headers })).statusCode, 204)

  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  t.ok(document.components.schemas.TasksRecord.properties.owner_id)
  t.same(document.paths['/api/v1/tasks'].get.security, [{ OAuth2PasswordBearer: [] }])
})

t.test('owner rows go with their user', async (t) => {
  const app = await buildResources(t, [{ name: 'tasks', fields: TaskFields, owner: true }])
  const ada = await newAccount(app)
  await createTask(app, { title: 'one' }, ada.session.headers)
  const root = await superuser(app, 'root-cascade@example.com')
  await app.plinthDb.db.delete(users).where(eq(users.id, ada.user.id))
  t.same((await app.inject({ method: 'GET', url: '/api/v1/tasks/', headers: root.session.headers })).json(), [])
})

t.test('guards: read and write hooks per resource', async (t) => {
  const app = await buildResources(t, [])
  await app.register(resourcePlugin, {
    prefix: '/api/v1', name: 'notes', fields: TaskFields, guards: { write: app.requireScopes('notes:write') }
  })
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/notes/' })).statusCode, 200, 'reads are open')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/notes/', payload: { title: 'x' } })).statusCode, 401)
  const { session } = await newAccount(app)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/notes/', headers: session.headers, payload: { title: 'x' } })).statusCode, 403)
  const writer = await register(app, 'notes-writer@example.com')
  await app.plinthDb.db.update(users).set({ scopes: 'me,notes:write' }).where(eq(users.id, writer.id))
  const { headers } = await login(app, 'notes-writer@example.com')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/notes/', headers, payload: { title: 'x' } })).statusCode, 201)
})

t.test('owner mode without authPlugin, or on records, fails the boot', async (t) => {
  const bare = Fastify({ logger: false })
  t.teardown(() => bare.close())
  await bare.register(dbPlugin, { client: await freshDatabase(t) })
  bare.register(resourcePlugin, { prefix: '/api', name: 'tasks', fields: TaskFields, owner: true })
  await t.rejects(async () => bare.ready(), { code: 'RESOURCE_INVALID_OPTIONS', message: /owner mode needs app.plinthGuards.authenticate/ })
  t.notOk(bare.hasRoute({ method: 'GET', url: '/api/tasks/' }))

  const records = Fastify({ logger: false })
  t.teardown(() => records.close())
  await records.register(dbPlugin, { client: await freshDatabase(t) })
  records.register(resourcePlugin, { prefix: '/api', name: 'notes', owner: true })
  await t.rejects(async () => records.ready(), { message: 'resource plugin: "notes": owner needs fields; a resource of records has no owner' })
})
