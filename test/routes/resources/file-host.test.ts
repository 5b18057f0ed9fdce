import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { desc, eq, sql } from 'drizzle-orm'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import {
  accountsPlugin, authPlugin, dbPlugin, guardsOf, readResourcesFile, resourcePlugin, resourceTable
} from '../../../index.js'
import { rowsOf } from '../../../db/index.js'
import { RecordCreateSchema } from '../../../schemas/record.js'
import { freshDatabase } from '../../support/database.js'

// The JSON way in a host app: the RESOURCES_FILE the server reads, mounted by the host's own code
// with plinth's reader and guard words, and the resources' tables queried by the host without SQL.

const form = 'application/x-www-form-urlencoded'

const FILE = {
  tasks: {
    fields: {
      type: 'object',
      required: ['title'],
      properties: { title: { type: 'string', minLength: 1 }, priority: { type: 'integer', minimum: 1, maximum: 5, default: 3 } }
    },
    owner: true,
    guards: { write: { scopes: ['tasks:write'] } }
  },
  notes: { fields: { type: 'object', properties: { text: { type: 'string' } } }, guards: { read: 'authenticated' } }
}

async function resourcesFile (t: Test, content: unknown) {
  const dir = await mkdtemp('/tmp/plinth-resources-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'resources.json')
  await writeFile(path, JSON.stringify(content))
  return path
}

async function host (t: Test) {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  return app
}

/** As app.ts mounts RESOURCES_FILE: each resource with its options and its guard words made guards on `app`. */
async function mountFile (app: FastifyInstance, path: string) {
  for (const definition of readResourcesFile(path)) {
    await app.register(resourcePlugin, { prefix: '/api/v1', ...definition.options, guards: guardsOf(app, definition) })
  }
}

/** A registered account's access token, with the scopes asked for at login. */
async function token (app: FastifyInstance, email: string, scope = 'me') {
  const password = 'long enough'
  await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email, password } })
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': form }, payload: new URLSearchParams({ username: email, password, scope }).toString() })
  return { authorization: `Bearer ${login.json().access_token as string}` }
}

t.test('a host mounts the server\'s RESOURCES_FILE with plinth\'s reader and guard words', async (t) => {
  const app = await host(t)
  await app.register(authPlugin, { secret: 'the host test secret, 32 bytes or more' })
  await app.register(accountsPlugin, { prefix: '/api/v1' })
  await mountFile(app, await resourcesFile(t, FILE))

  t.equal((await app.inject({ method: 'GET', url: '/api/v1/notes' })).statusCode, 401, '"authenticated" guards the notes\' reads')
  const user = await token(app, 'user@example.com')
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/notes', headers: user })).statusCode, 200, 'which a signed-in user passes')
  const refused = await app.inject({ method: 'POST', url: '/api/v1/tasks', headers: user, payload: { title: 'x' } })
  t.equal(refused.statusCode, 403, '{ "scopes": ["tasks:write"] } guards the tasks\' writes')
  t.equal(refused.json().code, 'AUTH_INSUFFICIENT_SCOPE')
})

t.test('a file whose guards need authPlugin fails the boot in a host without it: no route is left open', async (t) => {
  for (const guards of [{ read: 'authenticated' }, { write: 'superuser' }, { write: { scopes: ['notes:write'] } }]) {
    const app = await host(t)
    const path = await resourcesFile(t, { notes: { fields: FILE.notes.fields, guards } })
    await t.rejects(mountFile(app, path), {
      code: 'RESOURCE_INVALID_OPTIONS',
      message: /^resource plugin: "notes": guards\.(read|write) must be a function such as app\.authenticate \(got undefined\).*register it, awaited, before this plugin/
    }, JSON.stringify(guards))
    t.notOk(app.hasRoute({ method: 'GET', url: '/api/v1/notes' }), 'no notes route')
  }
})

t.test('a bad file read in a host fails with a coded error, one line per problem', async (t) => {
  const path = await resourcesFile(t, { tasks: { fields: FILE.tasks.fields, indexes: ['due'] }, notes: { fields: FILE.notes.fields, colour: 'red' } })
  t.throws(() => readResourcesFile(path), {
    code: 'RESOURCE_INVALID_OPTIONS',
    message: `resource plugin: RESOURCES_FILE ${path}: tasks: indexes names "due", which is not a field\nRESOURCES_FILE ${path}: notes.colour: unexpected property`
  })
})

t.test('resourceTable gives a resource\'s Drizzle table: host code queries its rows without SQL', async (t) => {
  const app = await host(t)
  await app.register(authPlugin, { secret: 'the host test secret, 32 bytes or more' })
  await app.register(accountsPlugin, { prefix: '/api/v1' })
  await mountFile(app, await resourcesFile(t, FILE))
  await app.register(resourcePlugin, { prefix: '/api/v1', name: 'records' })
  await token(app, 'writer@example.com')
  // A scope must be granted on the account as well as asked for at login.
  await app.plinthDb.db.execute(sql`update users set scopes = 'me,tasks:write'`)
  const scoped = await token(app, 'writer@example.com', 'me tasks:write')
  for (const title of ['first', 'second']) {
    const created = await app.inject({ method: 'POST', url: '/api/v1/tasks', headers: scoped, payload: { title } })
    t.equal(created.statusCode, 201, `task ${title}`, { body: created.json() })
  }
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/records', payload: { title: 'a record' } })).statusCode, 201)

  const tasks = resourceTable<'title' | 'priority'>(app, 'tasks')
  const rows = await app.plinthDb.db.select({ title: tasks.title, priority: tasks.priority }).from(tasks).orderBy(desc(tasks.id))
  t.same(rows, [{ title: 'second', priority: 3 }, { title: 'first', priority: 3 }], 'the rows, typed by their columns')
  await app.plinthDb.db.update(tasks).set({ priority: 5 }).where(eq(tasks.title, 'first'))
  const changed = await app.inject({ method: 'GET', url: '/api/v1/tasks/1', headers: scoped })
  t.equal(changed.json().priority, 5, 'a host write is what the API answers')
  const records = resourceTable<typeof RecordCreateSchema>(app, 'records')
  t.same(await app.plinthDb.db.select({ title: records.title }).from(records), [{ title: 'a record' }], 'a resource of records too')
})

t.test('resourceTable names the fix when the resource is not registered on the app', async (t) => {
  const app = await host(t)
  t.throws(() => resourceTable(app, 'tasks'), {
    code: 'RESOURCE_NOT_REGISTERED',
    message: 'no resource "tasks" is registered on this app: register resourcePlugin with { name: \'tasks\' }, awaited, before asking for its table'
  })
  await app.register(resourcePlugin, { prefix: '/api/v1', name: 'notes' })
  t.throws(() => resourceTable(app, 'tasks'), { code: 'RESOURCE_NOT_REGISTERED' }, 'nor with another resource registered')
})

t.test('rowsOf gives the rows of a raw execute as an array, on PGlite and on PostgreSQL alike', async (t) => {
  const app = await host(t)
  const result = await app.plinthDb.db.execute(sql`select n from generate_series(1, 3) as n order by n`)
  t.same(rowsOf<{ n: number }>(result), [{ n: 1 }, { n: 2 }, { n: 3 }], `on ${app.plinthDb.driver}`)
  t.same(rowsOf(await app.plinthDb.db.execute(sql`select 1 where false`)), [], 'no rows: an empty array')
  const array = [{ n: 1 }]
  t.equal(rowsOf(array), array, 'postgres.js\'s own shape, an array, is the rows as they are')
})
