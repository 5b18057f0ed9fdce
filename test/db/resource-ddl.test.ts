import { eq, sql } from 'drizzle-orm'
import { drizzle as onPglite } from 'drizzle-orm/pglite'
import { drizzle as onPostgres } from 'drizzle-orm/postgres-js'
import t from 'tap'
import type { Database } from '../../db/client.js'
import { ResourceTableError, sqlState } from '../../db/errors.js'
import { definitionDigest, planResourceTableChanges } from '../../db/resource-changes.js'
import { boundedName, createTableStatements } from '../../db/resource-ddl.js'
import { searchDocument } from '../../db/resource-search.js'
import type { ResourceTableDefinition, ResourceTableSpec } from '../../db/resource-table.js'
import { prepareResourceTable } from '../../db/resources.js'
import * as schema from '../../db/schema.js'
import { fieldTableDefinitions, users } from '../../db/schema.js'
import { readFields, type JsonSchema } from '../../schemas/fields.js'
import { freshDatabase, rowsOf } from '../support/database.js'

const client = await freshDatabase(t)
const { db } = client

const fieldsOf = (properties: Record<string, JsonSchema>, required: string[] = []) => readFields({ type: 'object', properties, required })

async function rows<T> (query: ReturnType<typeof sql>, on: Database = db): Promise<T[]> {
  return rowsOf<T>(await on.execute(query))
}

const indexesOf = async (table: string) =>
  (await rows<{ name: string, def: string }>(sql`select indexname as name, indexdef as def from pg_indexes where tablename = ${table} order by indexname`))

const indexNames = async (table: string) => (await indexesOf(table)).map((index) => index.name)

/** The foreign keys of a table: name, referenced table and ON DELETE rule (c, r, n as pg_constraint writes them). */
const foreignKeysOf = (table: string) => rows<{ name: string, target: string, rule: string }>(sql`
  select c.conname as name, f.relname as target, c.confdeltype::text as rule from pg_constraint c
  join pg_class r on r.oid = c.conrelid join pg_class f on f.oid = c.confrelid
  where r.relname = ${table} and c.contype = 'f' order by c.conname`)

const definitionOf = async (table: string) =>
  ((await db.select().from(fieldTableDefinitions).where(eq(fieldTableDefinitions.table_name, table)))[0]?.definition) as ResourceTableDefinition | undefined

/** The SQL state of a write the database refused. */
const refusal = (write: Promise<unknown>) => write.then(() => undefined, (err: unknown) => sqlState(err))

const TASK_FIELDS = fieldsOf({
  title: { type: 'string' },
  slug: { type: 'string' },
  project_id: { type: 'integer', 'x-references': 'projects', 'x-on-delete': 'cascade' },
  parent_id: { type: ['integer', 'null'], 'x-references': 'tasks', 'x-on-delete': 'set-null' },
  reviewer_id: { type: 'integer', minimum: 1, 'x-references': 'projects' }
}, ['title', 'project_id'])

const TASKS: ResourceTableSpec = {
  table: 'tasks',
  fields: TASK_FIELDS,
  owner: true,
  unique: [{ fields: ['slug'], global: false }, { fields: ['project_id', 'title'], global: true }],
  search: ['title', 'slug'],
  referencedTables: { projects: 'projects', tasks: 'tasks' }
}

t.test('createTableStatements names each foreign key, indexes it, and makes the unique keys and the search index', async (t) => {
  t.same(createTableStatements(TASKS), [
    'CREATE TABLE "tasks" (\n\t' + [
      '"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY',
      '"created_at" timestamp(3) with time zone DEFAULT now() NOT NULL',
      '"updated_at" timestamp(3) with time zone DEFAULT now() NOT NULL',
      '"owner_id" integer NOT NULL REFERENCES "users" ("id") ON DELETE CASCADE',
      '"title" text NOT NULL',
      '"slug" text',
      '"project_id" integer NOT NULL',
      '"parent_id" integer',
      '"reviewer_id" integer',
      'CONSTRAINT "tasks_reviewer_id_check" CHECK ("reviewer_id" >= 1)',
      'CONSTRAINT "tasks_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects" ("id") ON DELETE CASCADE',
      'CONSTRAINT "tasks_parent_id_fkey" FOREIGN KEY ("parent_id") REFERENCES "tasks" ("id") ON DELETE SET NULL',
      'CONSTRAINT "tasks_reviewer_id_fkey" FOREIGN KEY ("reviewer_id") REFERENCES "projects" ("id") ON DELETE RESTRICT'
    ].join(',\n\t') + '\n)',
    'CREATE INDEX "tasks_owner_id_idx" ON "tasks" ("owner_id", "id")',
    'CREATE INDEX "tasks_parent_id_idx" ON "tasks" ("parent_id", "id")',
    'CREATE INDEX "tasks_project_id_idx" ON "tasks" ("project_id", "id")',
    'CREATE INDEX "tasks_reviewer_id_idx" ON "tasks" ("reviewer_id", "id")',
    'CREATE UNIQUE INDEX "tasks_slug_key" ON "tasks" ("owner_id", "slug")',
    'CREATE UNIQUE INDEX "tasks_project_id_title_key" ON "tasks" ("project_id", "title")',
    `CREATE INDEX "tasks_search_idx" ON "tasks" USING gin ((${searchDocument(['title', 'slug'])}))`
  ])
  t.same(createTableStatements({ ...TASKS, owner: false, fields: TASK_FIELDS.slice(0, 2), search: [], unique: [{ fields: ['slug'], global: false }] }).slice(1),
    ['CREATE UNIQUE INDEX "tasks_slug_key" ON "tasks" ("slug")'], 'without an owner, a key is its fields')
  t.same(createTableStatements({ ...TASKS, indexes: ['project_id'] }).filter((statement) => statement.includes('project_id_idx')).length, 1,
    'a reference that is also in indexes has one index')

  await prepareResourceTable(db, { table: 'projects', fields: fieldsOf({ name: { type: 'string' } }) })
  const made = { ...TASKS, owner: false, table: 'tasks_made', unique: [{ fields: ['slug'], global: false }], referencedTables: { projects: 'projects', tasks: 'tasks_made' } }
  for (const statement of createTableStatements(made)) await db.execute(sql.raw(statement))
  t.same(await indexNames('tasks_made'), [
    'tasks_made_parent_id_idx', 'tasks_made_pkey', 'tasks_made_project_id_idx', 'tasks_made_reviewer_id_idx', 'tasks_made_search_idx', 'tasks_made_slug_key'
  ], 'the statements run as they are, on this database')
})

t.test('a reference to a resource whose table is not given, or keys that clash, are refused', async (t) => {
  t.throws(() => createTableStatements({ ...TASKS, referencedTables: { tasks: 'tasks' } }), new ResourceTableError(
    'tasks: field "project_id" references the resource "projects", whose table is not known; register that resource before this one'))
  t.throws(() => createTableStatements({ ...TASKS, unique: [{ fields: ['slug'], global: false }, { fields: ['slug'], global: true }] }), new ResourceTableError(
    'tasks: unique keys clash on the index name tasks_slug_key; list each set of fields once'))
  t.throws(() => createTableStatements({ ...TASKS, unique: [{ fields: ['nope'], global: false }] }), new ResourceTableError(
    'tasks: unique key (nope) names "nope", which is no field'))
  t.throws(() => createTableStatements({ ...TASKS, search: ['nope'] }), new ResourceTableError('tasks: search names "nope", which is no field'))
})

t.test('names longer than PostgreSQL keeps are cut to 63 bytes with a hash of the whole, so two never clash', async (t) => {
  const table = `t${'x'.repeat(55)}`
  const [a, b] = [boundedName(`${table}_first_field_key`), boundedName(`${table}_first_field_other_key`)]
  t.equal(a.length, 63)
  t.equal(b.length, 63)
  t.not(a, b)
  t.match(a, /^tx{53}_[0-9a-f]{8}$/)
  t.equal(boundedName('tasks_slug_key'), 'tasks_slug_key', 'a short name is kept')
  const fields = fieldsOf({ first_field: { type: 'string' }, first_field_other: { type: 'string' } })
  await prepareResourceTable(db, { table, fields, unique: [{ fields: ['first_field'], global: false }, { fields: ['first_field_other'], global: false }], search: ['first_field'] })
  t.same((await indexNames(table)).sort(), [a, b, boundedName(`${table}_search_idx`), `${table}_pkey`].sort(), 'both made, under their own names')
})

const plan = (before: Partial<ResourceTableSpec>, after: Partial<ResourceTableSpec>) =>
  planResourceTableChanges({ table: 'tasks', fields: [], referencedTables: { projects: 'projects' }, ...before }, { table: 'tasks', fields: [], referencedTables: { projects: 'projects' }, ...after })

const alter = (change: string) => `ALTER TABLE "tasks" ${change}`
const FKEY = (rule: string) => `CONSTRAINT "tasks_project_id_fkey" FOREIGN KEY ("project_id") REFERENCES "projects" ("id") ON DELETE ${rule}`
const INDEX = 'CREATE INDEX "tasks_project_id_idx" ON "tasks" ("project_id", "id")'
const plain = fieldsOf({ project_id: { type: ['integer', 'null'] } })
const referencing = (onDelete = 'restrict', extra: JsonSchema = {}) => fieldsOf({ project_id: { type: ['integer', 'null'], 'x-references': 'projects', 'x-on-delete': onDelete, ...extra } })

t.test('planResourceTableChanges adds, changes and drops foreign keys, unique keys and the search index', async (t) => {
  const slug = fieldsOf({ slug: { type: 'string' }, title: { type: 'string' } })
  const cases: Array<[string, Partial<ResourceTableSpec>, Partial<ResourceTableSpec>, string[]]> = [
    ['a new reference field', {}, { fields: referencing('cascade') }, [alter('ADD COLUMN "project_id" integer'), alter(`ADD ${FKEY('CASCADE')}`), INDEX]],
    ['an integer field that gains a reference', { fields: plain }, { fields: referencing() }, [alter(`ADD ${FKEY('RESTRICT')}`), INDEX]],
    ['a reference with Reference()\'s minimum of 1: the key is checked before the check', { fields: plain }, { fields: referencing('restrict', { minimum: 1 }) }, [
      alter(`ADD ${FKEY('RESTRICT')}`), alter('DROP CONSTRAINT IF EXISTS "tasks_project_id_check"'), alter('ADD CONSTRAINT "tasks_project_id_check" CHECK ("project_id" >= 1)'), INDEX
    ]],
    ['onDelete changed', { fields: referencing('restrict') }, { fields: referencing('set-null') }, [alter('DROP CONSTRAINT "tasks_project_id_fkey"'), alter(`ADD ${FKEY('SET NULL')}`)]],
    ['the referenced table changed', { fields: referencing() }, { fields: referencing(), referencedTables: { projects: 'projects_v2' } },
      [alter('DROP CONSTRAINT "tasks_project_id_fkey"'), alter(`ADD ${FKEY('RESTRICT').replace('"projects"', '"projects_v2"')}`)]],
    ['a reference dropped', { fields: referencing() }, { fields: plain }, [alter('DROP CONSTRAINT "tasks_project_id_fkey"'), 'DROP INDEX "tasks_project_id_idx"']],
    ['a reference dropped from an indexed field keeps the index', { fields: referencing() }, { fields: plain, indexes: ['project_id'] }, [alter('DROP CONSTRAINT "tasks_project_id_fkey"')]],
    ['an index listed for a reference changes nothing', { fields: referencing() }, { fields: referencing(), indexes: ['project_id'] }, []],
    ['a unique key added', { fields: slug }, { fields: slug, unique: [{ fields: ['slug'], global: false }] }, ['CREATE UNIQUE INDEX "tasks_slug_key" ON "tasks" ("slug")']],
    ['a unique key removed', { fields: slug, unique: [{ fields: ['slug', 'title'], global: false }] }, { fields: slug }, ['DROP INDEX "tasks_slug_title_key"']],
    ['a per-owner key made global', { fields: slug, owner: true, unique: [{ fields: ['slug'], global: false }] }, { fields: slug, owner: true, unique: [{ fields: ['slug'], global: true }] },
      ['DROP INDEX "tasks_slug_key"', 'CREATE UNIQUE INDEX "tasks_slug_key" ON "tasks" ("slug")']],
    ['global means nothing without an owner', { fields: slug, unique: [{ fields: ['slug'], global: false }] }, { fields: slug, unique: [{ fields: ['slug'], global: true }] }, []],
    ['search added', { fields: slug }, { fields: slug, search: ['title'] }, [`CREATE INDEX "tasks_search_idx" ON "tasks" USING gin ((${searchDocument(['title'])}))`]],
    ['search changed', { fields: slug, search: ['title'] }, { fields: slug, search: ['slug', 'title'] },
      ['DROP INDEX "tasks_search_idx"', `CREATE INDEX "tasks_search_idx" ON "tasks" USING gin ((${searchDocument(['slug', 'title'])}))`]],
    ['search removed', { fields: slug, search: ['title'] }, { fields: slug, search: [] }, ['DROP INDEX "tasks_search_idx"']]
  ]
  for (const [name, before, after, statements] of cases) t.same(plan(before, after), statements, name)
  t.throws(() => plan({ fields: plain }, { fields: referencing('restrict', { minimum: 2 }) }), { message: /field "project_id" changed minimum from 1 to 2/ },
    'a minimum above any id is still a narrowing')
})

t.test('a definition without references, unique keys or search keeps the digest it had before they existed', async (t) => {
  const fields = fieldsOf({ title: { type: 'string', maxLength: 80 }, rank: { type: 'integer', default: 0 }, project_id: { type: 'integer' } }, ['title'])
  const legacy: ResourceTableSpec = { table: 'legacy', fields, owner: true, indexes: ['rank'] }
  // The digest the code before them gave this definition: existing rows keep their ETags.
  const before = 'E6aUHcfOCHD0rK6vYxUILQR1nF-2uLnyBp_Nff6thpU'
  t.equal(definitionDigest(legacy), before)
  t.equal(definitionDigest({ ...legacy, unique: [], search: [], referencedTables: {} }), before, 'empty options are no change')
  t.not(definitionDigest({ ...legacy, unique: [{ fields: ['title'], global: false }] }), before, 'a unique key is')
  t.not(definitionDigest({ ...legacy, search: ['title'] }), before, 'search is')
  const referenced = fieldsOf({ title: { type: 'string', maxLength: 80 }, rank: { type: 'integer', default: 0 }, project_id: { type: 'integer', 'x-references': 'projects' } }, ['title'])
  t.not(definitionDigest({ ...legacy, fields: referenced, referencedTables: { projects: 'projects' } }), before, 'a reference is')

  await prepareResourceTable(db, { table: 'plain_old', fields, indexes: ['rank'], unique: [], search: [], referencedTables: {} })
  t.same(Object.keys((await definitionOf('plain_old'))!).sort(), ['fields', 'indexes', 'owner'], 'nothing new is stored for a table that uses none')
  const statements: string[] = []
  const logger = { logQuery: (query: string) => { statements.push(query) } }
  const $client = (client.db as unknown as { $client: never }).$client
  const recording = (client.driver === 'postgres' ? onPostgres({ client: $client, schema, logger }) : onPglite({ client: $client, schema, logger })) as unknown as Database
  await prepareResourceTable(recording, { table: 'plain_old', fields, indexes: ['rank'], unique: [], search: [], referencedTables: {} })
  t.equal(statements.length, 4, 'a restart lifts the statement timeout (a lock wait behind another instance may be long), reads the lock, the catalog and the definition, and changes nothing')
})

t.test('schema evolution of references on a table with rows', async (t) => {
  await prepareResourceTable(db, { table: 'teams', fields: fieldsOf({ name: { type: 'string' } }) })
  await db.execute(sql`insert into teams (name) values ('a'), ('b')`)
  const spec = (fields: ReturnType<typeof fieldsOf>, extra: Partial<ResourceTableSpec> = {}): ResourceTableSpec =>
    ({ table: 'members', fields, referencedTables: { teams: 'teams' }, ...extra })
  const name = { name: { type: 'string' } }
  await prepareResourceTable(db, spec(fieldsOf(name)))
  await db.execute(sql`insert into members (name) values ('old')`)

  await prepareResourceTable(db, spec(fieldsOf({ ...name, team_id: { type: ['integer', 'null'], 'x-references': 'teams', 'x-on-delete': 'cascade' } })))
  t.same(await foreignKeysOf('members'), [{ name: 'members_team_id_fkey', target: 'teams', rule: 'c' }], 'a new reference field: its key')
  t.ok((await indexNames('members')).includes('members_team_id_idx'), 'and its index')
  t.equal(await refusal(db.execute(sql`insert into members (name, team_id) values ('ghost', 99)`)), '23503', 'enforced')

  await prepareResourceTable(db, spec(fieldsOf({ ...name, team_id: { type: ['integer', 'null'], 'x-references': 'teams', 'x-on-delete': 'set-null' } })))
  t.same(await foreignKeysOf('members'), [{ name: 'members_team_id_fkey', target: 'teams', rule: 'n' }], 'onDelete changed: the key replaced')

  await prepareResourceTable(db, spec(fieldsOf({ ...name, team_id: { type: ['integer', 'null'] } })))
  t.same(await foreignKeysOf('members'), [], 'a reference dropped: no key')
  t.notOk((await indexNames('members')).includes('members_team_id_idx'), 'nor its index')
  t.notOk((await definitionOf('members'))?.references, 'nor a stored reference')
  await db.execute(sql`insert into members (name, team_id) values ('orphan', 99), ('kept', 1)`)

  const again = spec(fieldsOf({ ...name, team_id: { type: ['integer', 'null'], minimum: 1, 'x-references': 'teams' } }))
  const stored = await definitionOf('members')
  await t.rejects(prepareResourceTable(db, again), new ResourceTableError('members: field "team_id" cannot reference teams: rows already stored hold ids ' +
    'that are no row of "teams"; find them with SELECT "id", "team_id" FROM "members" WHERE "team_id" NOT IN (SELECT "id" FROM "teams"), ' +
    'set them to ids that exist (or null) or delete them, and restart; or remove the reference'), 'an integer field that gains x-references, with a row pointing at nothing')
  t.same(await definitionOf('members'), stored, 'the definition is as it was')
  t.same(await foreignKeysOf('members'), [], 'and the table')
  await db.execute(sql`update members set team_id = null where team_id = 99`)
  await prepareResourceTable(db, again)
  t.same(await foreignKeysOf('members'), [{ name: 'members_team_id_fkey', target: 'teams', rule: 'r' }], 'once the rows are fixed, the key is made')
  t.same((await definitionOf('members'))?.references, { teams: 'teams' })
})

t.test('schema evolution of unique keys and search on a table with rows', async (t) => {
  const fields = fieldsOf({ slug: { type: 'string' }, title: { type: 'string' }, body: { type: 'string' } })
  await prepareResourceTable(db, { table: 'pages', fields })
  await db.execute(sql`insert into pages (slug, title) values ('a', 'One'), ('a', 'One'), ('b', 'Two')`)
  const stored = await definitionOf('pages')
  await t.rejects(prepareResourceTable(db, { table: 'pages', fields, unique: [{ fields: ['slug', 'title'], global: false }] }), new ResourceTableError(
    'pages: the unique key (slug, title) cannot be added: rows already stored share a slug and title; find them with ' +
    'SELECT "slug", "title", count(*) FROM "pages" GROUP BY "slug", "title" HAVING count(*) > 1, change or delete all but one of each, and restart; or remove the key'))
  t.same(await definitionOf('pages'), stored, 'the definition is as it was')
  await db.execute(sql`delete from pages where id = 2`)
  await prepareResourceTable(db, { table: 'pages', fields, unique: [{ fields: ['slug', 'title'], global: false }], search: ['title'] })
  t.equal(await refusal(db.execute(sql`insert into pages (slug, title) values ('a', 'One')`)), '23505', 'the key holds')
  t.same((await definitionOf('pages'))?.unique, [{ fields: ['slug', 'title'], global: false }])
  t.match((await indexesOf('pages')).find((index) => index.name === 'pages_search_idx')?.def, /USING gin .*to_tsvector.*title/)

  await prepareResourceTable(db, { table: 'pages', fields, search: ['title', 'body'] })
  t.same(await indexNames('pages'), ['pages_pkey', 'pages_search_idx'], 'the key removed, its index dropped')
  t.match((await indexesOf('pages')).find((index) => index.name === 'pages_search_idx')?.def, /title.*body/, 'the search index follows its fields')
  t.same((await definitionOf('pages'))?.search, ['title', 'body'])
  t.notOk((await definitionOf('pages'))?.unique)

  await prepareResourceTable(db, { table: 'pages', fields })
  t.same(await indexNames('pages'), ['pages_pkey'], 'no search, no index')
})

t.test('in owner mode, colliding rows are those of one owner: the message groups by owner_id', async (t) => {
  const fields = fieldsOf({ slug: { type: 'string' } })
  await prepareResourceTable(db, { table: 'owned', fields, owner: true })
  const [alice, bob] = await db.insert(users).values([{ email: 'a@owned.test', hashed_password: 'x' }, { email: 'b@owned.test', hashed_password: 'x' }]).returning()
  await db.execute(sql`insert into owned (owner_id, slug) values (${alice!.id}, 'same'), (${bob!.id}, 'same')`)
  await prepareResourceTable(db, { table: 'owned', fields, owner: true, unique: [{ fields: ['slug'], global: false }] })
  t.pass('two owners may share a value of a per-owner key')
  await t.rejects(prepareResourceTable(db, { table: 'owned', fields, owner: true, unique: [{ fields: ['slug'], global: true }] }), new ResourceTableError(
    'owned: the unique key (slug) cannot be added: rows already stored share a slug; find them with SELECT "slug", count(*) FROM "owned" ' +
    'GROUP BY "slug" HAVING count(*) > 1, change or delete all but one of each, and restart; or remove the key'), 'but not of a global one')
  await prepareResourceTable(db, { table: 'owned_twice', fields, owner: true })
  await db.execute(sql`insert into owned_twice (owner_id, slug) values (${alice!.id}, 'twice'), (${alice!.id}, 'twice')`)
  await t.rejects(prepareResourceTable(db, { table: 'owned_twice', fields, owner: true, unique: [{ fields: ['slug'], global: false }] }), new ResourceTableError(
    'owned_twice: the unique key (slug) cannot be added: rows already stored share a slug within one owner; find them with ' +
    'SELECT "owner_id", "slug", count(*) FROM "owned_twice" ' +
    'GROUP BY "owner_id", "slug" HAVING count(*) > 1, change or delete all but one of each, and restart; or remove the key'))
})
