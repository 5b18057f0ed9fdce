import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { getTableName, is, sql } from 'drizzle-orm'
import { PgTable } from 'drizzle-orm/pg-core'
import Fastify from 'fastify'
import t from 'tap'
import type { DatabaseClient } from '../../db/client.js'
import * as schema from '../../db/schema.js'
import dbPlugin from '../../plugins/db.js'
import { connect } from '../../db/client.js'
import { createTables } from '../../db/resources.js'
import { build } from '../support/app.js'
import { TEST_DATABASE_URL, freshDatabase, freshPostgresUrl, connectTo } from '../support/database.js'

// Every table db/schema.ts declares, so the expectation follows the schema.
const declared = Object.values(schema).filter((value) => is(value, PgTable)).map((table) => getTableName(table)).sort()

const tableNames = async (client: DatabaseClient) => {
  // postgres.js answers with the rows, PGlite with { rows }.
  const result = await client.db.execute(sql`
    select table_name as name from information_schema.tables where table_schema = 'public' order by 1`) as unknown
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<{ name: string }>
  return rows.map((row) => row.name)
}

t.test('migrations and RESOURCES create every table at startup', async (t) => {
  const database = await freshDatabase(t, { migrated: false })
  const app = await build(t, { RESOURCES: ['records', 'notes'] }, { database })
  await app.ready()
  t.same(await tableNames(database), [...declared, 'notes', 'records'].sort(), 'and one per resource')
})

t.test('CREATE_TABLES_ON_STARTUP=false never touches the schema', async (t) => {
  const database = await freshDatabase(t, { migrated: false })
  const app = await build(t, { CREATE_TABLES_ON_STARTUP: false }, { database })
  await app.ready()
  t.same(await tableNames(database), [])
  const res = await app.inject({ method: 'GET', url: '/api/v1/health/ready' })
  t.equal(res.statusCode, 200, 'the database still answers')
})

t.test('migrating twice is a no-op', async (t) => {
  const database = await freshDatabase(t)
  await database.migrate()
  t.same(await tableNames(database), declared)
})

t.test('processes migrating one PostgreSQL database at once take turns', { skip: !TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, async (t) => {
  const url = await freshPostgresUrl(t)
  // Four clients stand for four processes starting together (two servers, WORKERS, db:migrate).
  const clients = await Promise.all([1, 2, 3, 4].map(() => connectTo(url)))
  t.teardown(() => Promise.all(clients.map((client) => client.close())))
  await Promise.all(clients.map((client) => createTables(client, ['records'])))
  t.same(await tableNames(clients[0]!), [...declared, 'records'].sort(), 'every table once, no duplicate-table failure')
  const applied = await clients[0]!.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`) as unknown as Array<{ n: number }>
  const journal = JSON.parse(readFileSync(new URL('../../db/migrations/meta/_journal.json', import.meta.url), 'utf8')) as { entries: unknown[] }
  t.equal(applied[0]?.n, journal.entries.length, 'each migration recorded once')
})

t.test('a clock that is not a function fails the boot', async (t) => {
  const app = Fastify()
  app.register(dbPlugin, { client: await freshDatabase(t), clock: 'now' as never })
  await t.rejects(async () => app.ready(), { code: 'DB_INVALID_OPTIONS', message: /^db plugin: clock must be a function returning a Date \(got "now"\)/ })
})

t.test('the plugin works in a bare Fastify app and leaves a given client open', async (t) => {
  const database = await freshDatabase(t)
  const app = Fastify()
  await app.register(dbPlugin, { client: database, migrate: false })
  await app.ready()
  t.equal(app.plinthDb.db, database.db, 'decorates db')
  t.equal(app.plinthDb.driver, database.driver)
  await app.close()
  await database.ping()
  t.pass('the caller still owns the client')
})

t.test('a client the plugin opened is closed with the app', async (t) => {
  // A cold in-memory PGlite can take longer than Fastify's default 10 s plugin timeout here.
  const app = Fastify({ pluginTimeout: 60_000 })
  await app.register(dbPlugin, { url: 'memory://', migrate: false })
  await app.ready()
  const client = app.plinthDb
  await app.close()
  await t.rejects(client.ping(), 'closed')
})

t.test('an unknown URL scheme is refused', async (t) => {
  const app = Fastify()
  await t.rejects(async () => { await app.register(dbPlugin, { url: 'mysql://localhost/db' }) }, /unsupported database URL scheme "mysql:\/\/"/)
})

t.test('a malformed postgres:// URL is refused without its password, in the message or any property', async (t) => {
  const app = Fastify()
  const error = await app.register(dbPlugin, { url: 'postgres://admin:pw/s3cret@127.0.0.1:5432/app' }).then(() => undefined, (err: unknown) => err) as Error
  t.match(error, { code: 'PLINTH_INVALID_DATABASE_URL', message: /^postgres:\/\/admin:\*\*\*@127\.0\.0\.1:5432\/app is not a valid URL: / })
  t.notMatch(JSON.stringify({ ...error, message: error.message, stack: error.stack }), /s3cret/)
})

t.test('pglite:// without a folder is refused instead of running in memory', async (t) => {
  const app = Fastify()
  await t.rejects(async () => { await app.register(dbPlugin, { url: 'pglite://', migrate: false }) }, {
    code: 'PLINTH_INVALID_DATABASE_URL',
    message: /^pglite:\/\/ needs the path of a folder, such as pglite:\/\/\.\/data\/pglite; .*memory:\/\//
  })
})

t.test('a pglite:// path that is a file, or inside one, is refused, naming it', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-db-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'file')
  await writeFile(file, '')
  for (const [path, message] of [[file, `${file} is a file, not a folder`], [join(file, 'data'), `${file}/data is inside a file, not a folder`]]) {
    await t.rejects(connect(`pglite://${path}`), { code: 'PLINTH_INVALID_DATABASE_URL', message: `${message}: pglite:// takes the path of a folder` })
  }
})
