import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { loadConfig, type Config } from '../../../config.js'
import { fieldTablesOf, readSettingFiles } from '../../../settings/files.js'
import { migrate as migrateDatabase } from '../../../db/migrate.js'

const migrate = (config: Config) => migrateDatabase(config.DATABASE_URL, { resources: config.RESOURCES, fieldTables: fieldTablesOf(readSettingFiles(config)) })
import { build, newAccount } from '../../support/app.js'
import { TEST_DATABASE_URL, freshPostgresUrl, connectTo } from '../../support/database.js'
import { httpRequest } from '../../support/http.js'
import { startServer } from '../../support/server-process.js'

/** The "tasks" resource of the docs, in plain JSON. */
export const TASKS_JSON = {
  tasks: {
    fields: {
      type: 'object',
      required: ['title'],
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 200 },
        status: { type: 'string', enum: ['open', 'doing', 'done'], default: 'open' },
        priority: { type: 'integer', minimum: 1, maximum: 5, default: 3 },
        due: { type: ['string', 'null'], format: 'date' },
        tags: { type: 'array', items: { type: 'string' }, default: [] }
      }
    },
    owner: true,
    indexes: ['due'],
    guards: { write: 'authenticated' }
  }
}

async function resourcesFile (t: Test, content: unknown) {
  const dir = await mkdtemp('/tmp/plinth-resources-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'resources.json')
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}

t.test('RESOURCES_FILE mounts each resource with its fields, owner and guards', async (t) => {
  const app = await build(t, { RESOURCES_FILE: await resourcesFile(t, TASKS_JSON) })
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/tasks/', payload: { title: 'x' } })).statusCode, 401)
  const { user, session } = await newAccount(app)
  const created = await app.inject({ method: 'POST', url: '/api/v1/tasks/', headers: session.headers, payload: { title: 'From JSON', due: '2026-12-01' } })
  t.equal(created.statusCode, 201)
  t.match(created.json(), { title: 'From JSON', status: 'open', priority: 3, due: '2026-12-01', tags: [], owner_id: user.id })
  t.same((await app.inject({ method: 'GET', url: '/api/v1/tasks/?due[is]=not_null', headers: session.headers })).json().map((task: { title: string }) => task.title), ['From JSON'])
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/records/' })).statusCode, 200, 'RESOURCES keeps working beside it')
})

t.test('a bad file stops the start with one line per problem, naming the resource and the field', async (t) => {
  const path = await resourcesFile(t, {
    tasks: { fields: { type: 'object', properties: { at: { type: 'string', format: 'ipv4' } } } },
    notes: { fields: { type: 'object', properties: { n: { type: 'integer' } } }, indexes: ['m'] },
    Bad: { fields: { type: 'object', properties: {} } },
    extra: { fields: { type: 'object', properties: {} }, colour: 'red' },
    guarded: { fields: { type: 'object', properties: {} }, guards: { write: 'admins' } },
    defaulted: { fields: { type: 'object', properties: { due: { type: 'string', format: 'date', default: '2026-02-30' } } } }
  })
  const error = t.throws(() => readSettingFiles(loadConfig({ RESOURCES_FILE: path }))) as Error & { code: string }
  t.equal(error.code, 'PLINTH_INVALID_CONFIG')
  t.same(error.message.split('\n'), [
    `RESOURCES_FILE ${path}: tasks: field "at": format ipv4 is not supported`,
    `RESOURCES_FILE ${path}: notes: indexes names "m", which is not a field`,
    `RESOURCES_FILE ${path}: Bad: a resource name is a lower-case identifier: a letter, then letters, digits or _, at most 63 characters`,
    `RESOURCES_FILE ${path}: extra.colour: unexpected property`,
    `RESOURCES_FILE ${path}: guarded.guards.write: expected union value`,
    `RESOURCES_FILE ${path}: defaulted: field "due": default "2026-02-30" must match format "date": YYYY-MM-DD, from 0001-01-01 to 9999-12-31`
  ])
  t.throws(() => readSettingFiles(loadConfig({ RESOURCES_FILE: '/nonexistent/resources.json' })), { message: /^RESOURCES_FILE \/nonexistent\/resources.json: ENOENT/ })
  const truncated = await resourcesFile(t, '{ "tasks": ')
  t.throws(() => readSettingFiles(loadConfig({ RESOURCES_FILE: truncated })), { message: /^RESOURCES_FILE .*: .*JSON/ })
  const tasks = await resourcesFile(t, TASKS_JSON)
  t.throws(() => readSettingFiles(loadConfig({ RESOURCES_FILE: tasks, RESOURCES: 'records,tasks' })), {
    message: '"tasks" is both in RESOURCES and in RESOURCES_FILE; keep one'
  })
})

t.test('a guard in the file is public, authenticated, superuser or a list of scopes', async (t) => {
  const fields = { type: 'object', properties: { n: { type: 'integer' } } }
  const app = await build(t, {
    RESOURCES_FILE: await resourcesFile(t, {
      open: { fields, guards: { read: 'public', write: 'public' } },
      admin: { fields, guards: { read: 'superuser' } },
      scoped: { fields, guards: { write: { scopes: ['scoped:write'] } } }
    })
  })
  const { session } = await newAccount(app)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/open/', payload: { n: 1 } })).statusCode, 201)
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/admin/', headers: session.headers })).statusCode, 403)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/admin/', payload: { n: 1 } })).statusCode, 201, 'only reads were guarded')
  const refused = await app.inject({ method: 'POST', url: '/api/v1/scoped/', headers: session.headers, payload: { n: 1 } })
  t.equal(refused.json().code, 'AUTH_INSUFFICIENT_SCOPE')
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/scoped/' })).statusCode, 200)
  const list = await resourcesFile(t, [])
  t.throws(() => readSettingFiles(loadConfig({ RESOURCES_FILE: list })), { message: `RESOURCES_FILE ${list}: must be a JSON object of resources by name, such as { "tasks": { "fields": { ... } } }` })
})

t.test('plinth migrate creates a file resource\'s table, adds new fields, and refuses to lose one', async (t) => {
  const url = TEST_DATABASE_URL ? await freshPostgresUrl(t) : `pglite://${await mkdtemp('/tmp/plinth-migrate-')}/data`
  if (!TEST_DATABASE_URL) t.teardown(() => rm(url.slice('pglite://'.length, -'/data'.length), { recursive: true, force: true }))
  const version = (properties: Record<string, unknown>) => resourcesFile(t, { notes: { fields: { type: 'object', required: ['title'], properties } } })
  const title = { type: 'string', minLength: 1 }

  const first = await migrate(loadConfig({ DATABASE_URL: url, RESOURCES: 'records', RESOURCES_FILE: await version({ title }) }))
  t.match(first, /^applied \d+ migrations; created the tables records, notes \((pglite|postgres)\)$/)
  const grown = await migrate(loadConfig({ DATABASE_URL: url, RESOURCES_FILE: await version({ title, due: { type: 'string', format: 'date' } }) }))
  t.match(grown, /^updated the table notes; records up to date \((pglite|postgres)\)$/, 'it says what it changed')
  const client = await connectTo(url)
  const columns = await client.db.execute(sql`select column_name as name from information_schema.columns where table_name = 'notes' order by ordinal_position`) as unknown as Array<{ name: string }>
  // Closed before the next migrate: a PGlite folder is one process's, one client's, at a time.
  await client.close()
  t.same((Array.isArray(columns) ? columns : (columns as { rows: Array<{ name: string }> }).rows).map((column) => column.name), ['id', 'created_at', 'updated_at', 'title', 'due'], 'the new field is a new column')
  await t.rejects(migrate(loadConfig({ DATABASE_URL: url, RESOURCES_FILE: await version({ due: { type: 'string', format: 'date' } }) })), {
    code: 'RESOURCE_TABLE_INVALID', message: /field "title" was removed/
  })
})

t.test('the real server serves a RESOURCES_FILE resource', async (t) => {
  const server = startServer(t, { DATABASE_URL: 'memory://', SECRET_KEY: 'file-test-secret-of-at-least-32-bytes', RESOURCES_FILE: await resourcesFile(t, TASKS_JSON) })
  const base = await server.listening
  t.equal((await httpRequest(base, '/api/v1/tasks/', { json: { title: 'x' } })).status, 401)
  const document = await httpRequest(base, '/docs/json')
  t.ok(document.json.components.schemas.TasksRecord.properties.due)
  server.child.kill('SIGTERM')
  t.same(await server.exited, [0, null])
})
