import { sql } from 'drizzle-orm'
import { integer, pgTable, text } from 'drizzle-orm/pg-core'
import { generateDrizzleJson, generateMigration } from 'drizzle-kit/api'
import t from 'tap'
import { API_PREFIX } from '../../../app.js'
import type { Database } from '../../../db/client.js'
import { createRepository } from '../../../db/crud.js'
import { ResourceTableError } from '../../../db/errors.js'
import { buildResourceTable } from '../../../db/resource-table.js'
import { createTables, ensureResourceTable, resourceTableDdl } from '../../../db/resources.js'
import { resourceTable, type ResourceTable } from '../../../db/schema.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { RECORDS_PRESET } from '../../../routes/resources/presets.js'
import { build } from '../../support/app.js'
import { freshDatabase } from '../../support/database.js'

const client = await freshDatabase(t)
const db = client.db

/** Rows of a raw query: postgres.js answers with the rows, PGlite with { rows }. */
async function rows<T> (db: Database, query: ReturnType<typeof sql>): Promise<T[]> {
  const result = await db.execute(query) as unknown
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]
}

const columnsOf = (db: Database, table: string) => rows<{ column_name: string, data_type: string, is_nullable: string, is_identity: string }>(db, sql`
  select column_name, data_type, is_nullable, is_identity from information_schema.columns
  where table_schema = current_schema() and table_name = ${table} order by ordinal_position`)

const tableExists = async (db: Database, table: string) =>
  (await rows(db, sql`select 1 from information_schema.tables where table_schema = current_schema() and table_name = ${table}`)).length === 1

t.test('the DDL is what drizzle-kit generates from resourceTable, made idempotent', async (t) => {
  for (const name of ['records', 'select', 'a'.repeat(63)]) {
    const table = resourceTable(name)
    const [kit] = await generateMigration(generateDrizzleJson({}), generateDrizzleJson({ table }))
    // PostgreSQL names the sequence itself, which stays within 63 characters for any table name.
    const expected = kit?.replace('CREATE TABLE ', 'CREATE TABLE IF NOT EXISTS ').replace(/sequence name "[^"]+" /, '').trim()
    t.equal(resourceTableDdl(table), expected, name)
  }
})

t.test('the records preset builds the very table db/schema.ts declares, so tables made by earlier versions are served as they are', async (t) => {
  const preset = buildResourceTable('records', RECORDS_PRESET.fields, { timestamps: RECORDS_PRESET.timestamps })
  t.equal(resourceTableDdl(preset), resourceTableDdl(resourceTable('records')))
})

t.test('the table has the columns db/schema.ts declares: an integer identity id, title and description', async (t) => {
  await ensureResourceTable(db, resourceTable('shape'))
  t.same(await columnsOf(db, 'shape'), [
    { column_name: 'id', data_type: 'integer', is_nullable: 'NO', is_identity: 'YES' },
    { column_name: 'title', data_type: 'text', is_nullable: 'NO', is_identity: 'NO' },
    { column_name: 'description', data_type: 'text', is_nullable: 'YES', is_identity: 'NO' }
  ])
})

t.test('creating the table again, even concurrently, keeps its rows and its sequence', async (t) => {
  const table = resourceTable('again')
  await ensureResourceTable(db, table)
  const repo = createRepository(db, table)
  t.equal((await repo.create({ title: 'one' })).id, 1, 'ids start at 1')
  await Promise.all([ensureResourceTable(db, table), ensureResourceTable(db, table), ensureResourceTable(db, table)])
  t.same(await repo.list({ offset: 0, limit: 10 }), [{ id: 1, title: 'one', description: null }])
  t.equal((await repo.create({ title: 'two' })).id, 2)
  await t.rejects(db.execute(sql`insert into again (id, title) values (7, 'chosen id')`), 'the id cannot be chosen by an insert')
})

t.test('a long name gets its table and a sequence PostgreSQL names within its limit', async (t) => {
  const name = 'b'.repeat(63)
  await ensureResourceTable(db, resourceTable(name))
  t.equal((await createRepository(db, resourceTable(name)).create({ title: 'long' })).id, 1)
})

t.test('a table of that name with other columns, or another relation of that name, is refused', async (t) => {
  await db.execute(sql`create table host_notes (id serial primary key, body text)`)
  await t.rejects(ensureResourceTable(db, resourceTable('host_notes')), new ResourceTableError(
    'table "host_notes" exists but is not a resource table: it has the columns (body, id), a resource table (description, id, title)'
  ))
  await t.rejects(ensureResourceTable(db, resourceTable('users_id_seq')), new ResourceTableError(
    'table "users_id_seq" cannot be created: another kind of relation (an index, a sequence) has that name'
  ), 'a sequence')
  await t.rejects(ensureResourceTable(db, resourceTable('users_pkey')), { message: /another kind of relation/ }, 'an index')
})

t.test('a table feature the generator does not render is refused, not dropped', async (t) => {
  const withDefault = pgTable('x', { id: integer('id').primaryKey().generatedAlwaysAsIdentity(), title: text('title').notNull().default('untitled') })
  t.throws(() => resourceTableDdl(withDefault as unknown as ResourceTable), /column title: defaults, generated and unique columns are not supported here/)
  const unique = pgTable('y', { id: integer('id').primaryKey().generatedAlwaysAsIdentity(), title: text('title').unique() })
  t.throws(() => resourceTableDdl(unique as unknown as ResourceTable), /not supported here/)
})

t.test('the app fails to boot when a resource meets a foreign table of its name', async (t) => {
  const app = await build(t, { RESOURCES: [] })
  await app.plinthDb.db.execute(sql`create table clash (x integer)`)
  app.register(resourcePlugin, { prefix: API_PREFIX, name: 'clash' })
  await t.rejects(async () => app.ready(), { code: 'RESOURCE_TABLE_INVALID', message: /table "clash" exists but is not a resource table/ })
})

t.test('with createTable: false the table is left alone', async (t) => {
  const app = await build(t, { RESOURCES: [] })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'untouched', createTable: false })
  await app.ready()
  t.notOk(await tableExists(app.plinthDb.db, 'untouched'), 'not created')
  await ensureResourceTable(app.plinthDb.db, resourceTable('untouched'))
  const res = await app.inject({ method: 'POST', url: `${API_PREFIX}/untouched`, payload: { title: 'made by a migration' } })
  t.same(res.json(), { id: 1, title: 'made by a migration', description: null }, 'works once the table exists')
})

t.test('createTables (db:migrate, the WORKERS primary) migrates and makes each resource table once', async (t) => {
  const fresh = await freshDatabase(t, { migrated: false })
  await createTables(fresh, ['first', 'second', 'first'])
  t.ok(await tableExists(fresh.db, 'users'), 'the migrations ran')
  t.ok(await tableExists(fresh.db, 'first') && await tableExists(fresh.db, 'second'), 'each resource has its table')
  await createRepository(fresh.db, resourceTable('first')).create({ title: 'kept' })
  await createTables(fresh, ['first'])
  t.equal((await createRepository(fresh.db, resourceTable('first')).create({ title: 'next' })).id, 2, 'a second run keeps rows and sequence')
})
