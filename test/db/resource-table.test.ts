import { eq, sql } from 'drizzle-orm'
import { drizzle as onPglite } from 'drizzle-orm/pglite'
import { drizzle as onPostgres } from 'drizzle-orm/postgres-js'
import { generateDrizzleJson, generateMigration } from 'drizzle-kit/api'
import t from 'tap'
import { type Database, type DatabaseClient } from '../../db/client.js'
import { createRepository, type Repository } from '../../db/crud.js'
import { sqlState } from '../../db/errors.js'
import { definitionDigest, planResourceTableChanges } from '../../db/resource-changes.js'
import { createTableStatements } from '../../db/resource-ddl.js'
import { buildResourceTable, isoInstant, type ResourceTableDefinition, type ResourceTableSpec } from '../../db/resource-table.js'
import { prepareResourceTable } from '../../db/resources.js'
import { ResourceTableError } from '../../db/errors.js'
import * as schema from '../../db/schema.js'
import { fieldTableDefinitions, users } from '../../db/schema.js'
import { readFields, type Field, type JsonSchema } from '../../schemas/fields.js'
import { TEST_DATABASE_URL, freshDatabase, freshPostgresUrl, rowsOf, unversioned, connectTo } from '../support/database.js'

const client = await freshDatabase(t)
const { db } = client

const fieldsOf = (properties: Record<string, JsonSchema>, required: string[] = []) => readFields({ type: 'object', properties, required })

/** Rows of a raw query, from either driver. */
async function rows<T> (query: ReturnType<typeof sql>, on: Database = db): Promise<T[]> {
  return rowsOf<T>(await on.execute(query))
}

const columnsOf = (table: string) => rows<Record<string, unknown>>(sql`
  select column_name, data_type, datetime_precision, is_nullable, column_default, is_identity, identity_generation
  from information_schema.columns where table_schema = current_schema() and table_name = ${table} order by column_name`)

const indexesOf = async (table: string) =>
  (await rows<{ indexdef: string }>(sql`select indexdef from pg_indexes where tablename = ${table} order by indexname`)).map((row) => row.indexdef)

const definitionOf = async (table: string) =>
  (await db.select().from(fieldTableDefinitions).where(eq(fieldTableDefinitions.table_name, table)))[0] as
  { definition: ResourceTableDefinition, updated_at: Date } | undefined

type Row = Record<string, unknown> & { id: number, created_at: string, updated_at: string }

/** A field table's rows are as dynamic as its fields. */
const repositoryOf = (table: string, fields: Field[], options: { owner?: boolean } = {}, on: Database = db) =>
  createRepository(on, buildResourceTable(table, fields, options), { batchUpdates: true }) as unknown as Repository<Row, Record<string, unknown>>

/** The SQL state and the constraint named in the message, of a write the database refused. */
async function refusal (write: Promise<unknown>) {
  const err = await write.then(() => undefined, (err: unknown) => err)
  return [sqlState(err), /constraint "([^"]+)"/.exec(String((err as { cause?: Error }).cause?.message))?.[1]]
}

/** `client`'s connection seen through another Drizzle instance that records the statements it sends. */
function recordingDatabase (client: DatabaseClient) {
  const statements: string[] = []
  const logger = { logQuery: (query: string) => { statements.push(query) } }
  const $client = (client.db as unknown as { $client: never }).$client
  const recording = client.driver === 'postgres' ? onPostgres({ client: $client, schema, logger }) : onPglite({ client: $client, schema, logger })
  return { db: recording as unknown as Database, statements }
}

const KINDS = fieldsOf({
  title: { type: 'string', minLength: 1, maxLength: 80 },
  rank: { type: 'integer', minimum: 0 },
  score: { type: 'number', maximum: 1.5, default: 1 },
  done: { type: 'boolean', default: false },
  due: { type: 'string', format: 'date-time', nullable: true },
  day: { type: 'string', format: 'date' },
  tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3, default: ['a "b"', "it's"] },
  meta: { type: 'object', default: { a: 1 } },
  state: { type: 'string', enum: ['open', "it's", 'a\\b'], default: 'open' }
}, ['title', 'rank'])

t.test('createTableStatements quotes every identifier and literal, and names each check and index after its table and field', async (t) => {
  t.same(createTableStatements({ table: 'tasks', fields: KINDS, owner: true, indexes: ['title', 'rank', 'title'] }), [
    'CREATE TABLE "tasks" (\n\t' + [
      '"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY',
      '"created_at" timestamp(3) with time zone DEFAULT now() NOT NULL',
      '"updated_at" timestamp(3) with time zone DEFAULT now() NOT NULL',
      '"owner_id" integer NOT NULL REFERENCES "users" ("id") ON DELETE CASCADE',
      '"title" text NOT NULL',
      '"rank" integer NOT NULL',
      '"score" double precision DEFAULT 1 NOT NULL',
      '"done" boolean DEFAULT false NOT NULL',
      '"due" timestamp(3) with time zone',
      '"day" date',
      '"tags" text[] DEFAULT E\'{"a \\\\"b\\\\"","it\'\'s"}\' NOT NULL',
      '"meta" jsonb DEFAULT \'{"a":1}\' NOT NULL',
      '"state" text DEFAULT \'open\' NOT NULL',
      'CONSTRAINT "tasks_title_check" CHECK (char_length("title") >= 1 AND char_length("title") <= 80)',
      'CONSTRAINT "tasks_rank_check" CHECK ("rank" >= 0)',
      'CONSTRAINT "tasks_score_check" CHECK ("score" <= 1.5)',
      'CONSTRAINT "tasks_tags_check" CHECK (cardinality("tags") >= 1 AND cardinality("tags") <= 3)',
      'CONSTRAINT "tasks_state_check" CHECK ("state" IN (\'open\', \'it\'\'s\', E\'a\\\\b\'))'
    ].join(',\n\t') + '\n)',
    'CREATE INDEX "tasks_owner_id_idx" ON "tasks" ("owner_id", "id")',
    'CREATE INDEX "tasks_rank_idx" ON "tasks" ("rank", "id")',
    'CREATE INDEX "tasks_title_idx" ON "tasks" ("title", "id")'
  ])
  t.throws(() => createTableStatements({ table: 'tasks', fields: KINDS, indexes: ['nope'] }),
    new ResourceTableError('tasks: index "nope" names no field; list field names only'))
  const odd = fieldsOf({ n: { type: 'number', minimum: '0); drop table users; --' } })
  t.throws(() => createTableStatements({ table: 'tasks', fields: odd }),
    new ResourceTableError('tasks: field "n" has minimum "0); drop table users; --"; it must be a finite number'))
})

t.test('the DDL makes the columns drizzle-kit makes from buildResourceTable', async (t) => {
  // drizzle-kit writes defaults unescaped, so this comparison keeps to defaults without quotes.
  const fields = KINDS.map((field) => field.name === 'tags' ? { ...field, default: ['a', 'b c'] } : field)
  const kit = await generateMigration(generateDrizzleJson({}), generateDrizzleJson({ table: buildResourceTable('kit_side', fields, { owner: true }) }))
  for (const statement of kit) await db.execute(sql.raw(statement))
  for (const statement of createTableStatements({ table: 'ddl_side', fields, owner: true })) await db.execute(sql.raw(statement))
  const kitColumns = await columnsOf('kit_side')
  t.equal(kitColumns.length, 13)
  t.same(await columnsOf('ddl_side'), kitColumns)
})

t.test('every kind round-trips through the repository; timestamps go in as ISO strings or Dates and come back as ISO strings', async (t) => {
  await prepareResourceTable(db, { table: 'kinds', fields: KINDS })
  const table = buildResourceTable('kinds', KINDS)
  const repo = repositoryOf('kinds', KINDS)
  const values = {
    title: 'ünïcødé 😀',
    rank: 2147483647,
    score: -0.25,
    done: true,
    due: '2024-02-29T23:59:59.123Z',
    day: '2024-02-29',
    tags: ['a "b", \'c\'', 'e\\f', '{g}'],
    meta: { nested: [1, { x: null }], s: 'it\'s' },
    state: 'a\\b'
  }
  const created = await repo.create(values)
  t.same(unversioned(created), { ...values, id: created.id, created_at: created.created_at, updated_at: created.updated_at })
  t.equal(created.due, '2024-02-29T23:59:59.123Z', 'the same instant, to the millisecond, in the API\'s form')
  t.match(created.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.same(await repo.get(created.id), created, 'read back as written')

  const updated = await repo.update(created.id, { due: '2024-03-01T01:59:59.456+02:00', tags: ['z'], meta: { b: [true] }, day: '1999-12-31' })
  t.equal(updated?.due, '2024-02-29T23:59:59.456Z', 'an offset is the same instant')
  t.same([updated?.tags, updated?.meta, updated?.day], [['z'], { b: [true] }, '1999-12-31'])

  const asDate = await repo.update(created.id, { due: new Date('2000-01-01T00:00:00.007Z') })
  t.equal(asDate?.due, '2000-01-01T00:00:00.007Z', 'a Date is accepted too')
  const cleared = await repo.update(created.id, { due: null, day: null })
  t.same([cleared?.due, cleared?.day], [null, null], 'nulls are stored and read as null')

  await repo.update(created.id, { due: '2030-06-15T12:00:00.000Z' })
  const found = await db.select().from(table).where(eq(table.due!, '2030-06-15T14:00:00+02:00'))
  t.same(found.map((row) => row.id), [created.id], 'an ISO string works in a where clause')
})

t.test('defaults apply when a key is absent; an unset optional field is null', async (t) => {
  await prepareResourceTable(db, { table: 'defaults', fields: KINDS })
  const row = await repositoryOf('defaults', KINDS).create({ title: 'x', rank: 0 })
  t.same({ ...unversioned(row), id: 0, created_at: 0, updated_at: 0 }, {
    id: 0, created_at: 0, updated_at: 0, title: 'x', rank: 0, score: 1, done: false, due: null, day: null, tags: ['a "b"', "it's"], meta: { a: 1 }, state: 'open'
  })
  const timed = fieldsOf({ at: { type: 'string', format: 'date-time', default: '2020-01-01T00:00:00.000Z' }, on: { type: 'string', format: 'date', default: '2020-02-03' } })
  await prepareResourceTable(db, { table: 'timed_defaults', fields: timed })
  const timedRow = await repositoryOf('timed_defaults', timed).create({})
  t.same([timedRow.at, timedRow.on], ['2020-01-01T00:00:00.000Z', '2020-02-03'])
})

t.test('PostgreSQL\'s text of an instant becomes ISO 8601, whatever its fraction or zone', async (t) => {
  t.equal(isoInstant('2026-11-24 10:00:00+00'), '2026-11-24T10:00:00.000Z')
  t.equal(isoInstant('2026-11-24 10:00:00.5+00'), '2026-11-24T10:00:00.500Z')
  t.equal(isoInstant('2026-11-24 10:00:00.123+00'), '2026-11-24T10:00:00.123Z')
  t.equal(isoInstant('2026-11-24 11:00:00.123+01'), '2026-11-24T10:00:00.123Z', 'another zone takes the general path')
  t.equal(isoInstant(new Date('2026-11-24T10:00:00.123Z')), '2026-11-24T10:00:00.123Z')
  await db.transaction(async (tx) => {
    await tx.execute(sql`set local time zone 'Asia/Kolkata'`)
    const [row] = await tx.select().from(buildResourceTable('defaults', KINDS)).limit(1)
    t.match(row?.created_at, /Z$/, 'read in another session time zone, still UTC ISO')
  })
})

t.test('updated_at moves on every update through the repository; created_at stays', async (t) => {
  await prepareResourceTable(db, { table: 'stamped', fields: KINDS })
  const repo = repositoryOf('stamped', KINDS)
  const { id } = await repo.create({ title: 'x', rank: 1 })
  await db.execute(sql`update stamped set created_at = created_at - interval '1 hour', updated_at = updated_at - interval '1 hour'`)
  const before = (await repo.get(id))!
  t.equal(before.created_at, before.updated_at)
  const after = (await repo.update(id, { rank: 2 }))!
  t.same(after.created_at, before.created_at, 'created_at stays')
  t.ok(Date.parse(after.updated_at) - Date.parse(before.updated_at) > 59 * 60_000, 'updated_at is now')
})

t.test('each CHECK refuses a bad value at the database (23514) and lets null through', async (t) => {
  const fields = fieldsOf({
    i: { type: 'integer', minimum: -1, maximum: 1, nullable: true },
    n: { type: 'number', minimum: 0.5, maximum: 2.5, nullable: true },
    s: { type: 'string', minLength: 2, maxLength: 3, nullable: true },
    e: { type: 'string', enum: ["it's", 'a\\b'], nullable: true },
    a: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 2, nullable: true }
  })
  await prepareResourceTable(db, { table: 'checked', fields })
  const repo = repositoryOf('checked', fields)
  const good = { i: 1, n: 2.5, s: '😀😀😀', e: "it's", a: ['x', 'y'] }
  t.match(await repo.create(good), good, 'within bounds; three emoji are three characters')
  t.ok(await repo.create({ i: null, n: null, s: null, e: null, a: null }), 'nulls pass')
  t.ok(await repo.create({ e: 'a\\b' }), 'a literal with a backslash')
  const bad: Array<[string, unknown]> = [['i', -2], ['i', 2], ['n', 0.49], ['n', 2.51], ['s', 'x'], ['s', '😀😀😀😀'], ['e', 'its'], ['a', []], ['a', ['x', 'y', 'z']]]
  for (const [field, value] of bad) {
    t.same(await refusal(repo.create({ [field]: value })), ['23514', `checked_${field}_check`], `${field} = ${JSON.stringify(value)}`)
  }
})

t.test('in owner mode each row has a user, and the rows go with the account', async (t) => {
  const fields = fieldsOf({ note: { type: 'string' } }, ['note'])
  await prepareResourceTable(db, { table: 'owned', fields, owner: true })
  t.same(await indexesOf('owned'), [
    'CREATE INDEX owned_owner_id_idx ON public.owned USING btree (owner_id, id)',
    'CREATE UNIQUE INDEX owned_pkey ON public.owned USING btree (id)'
  ])
  const repo = repositoryOf('owned', fields, { owner: true })
  const [alice, bob] = await db.insert(users).values([{ email: 'alice@example.com', hashed_password: 'x' }, { email: 'bob@example.com', hashed_password: 'x' }]).returning()
  await repo.create({ note: 'a', owner_id: alice!.id })
  const kept = await repo.create({ note: 'b', owner_id: bob!.id })
  t.equal((await refusal(repo.create({ note: 'nobody' })))[0], '23502', 'owner_id is NOT NULL')
  t.equal((await refusal(repo.create({ note: 'ghost', owner_id: 999999 })))[0], '23503', 'owner_id references users')
  await db.delete(users).where(eq(users.id, alice!.id))
  t.same(await repo.list({ offset: 0, limit: 10 }), [unversioned(kept)], 'alice\'s row is gone, bob\'s stays')
})

const one = (schema: JsonSchema, { required = false, table = 'tasks' } = {}): ResourceTableSpec =>
  ({ table, fields: fieldsOf({ x: schema }, required ? ['x'] : []) })

const NARROWED = ', which rows already stored may not meet; revert that, or add a new field and migrate the data to it yourself'

t.test('planResourceTableChanges refuses every change stored rows may not meet', async (t) => {
  const refused: Array<[string, JsonSchema, JsonSchema, string]> = [
    ['kind', { type: 'integer' }, { type: 'number' }, 'changed kind from integer to number'],
    ['format to kind', { type: 'string', format: 'date-time' }, { type: 'string', format: 'date' }, 'changed kind from timestamp to date'],
    ['nullable', { type: 'string', nullable: true }, { type: 'string' }, 'is no longer nullable'],
    ['minimum raised', { type: 'integer', minimum: 0 }, { type: 'integer', minimum: 1 }, 'changed minimum from 0 to 1'],
    ['minimum added', { type: 'number' }, { type: 'number', minimum: 0 }, 'changed minimum from none to 0'],
    ['maximum lowered', { type: 'number', maximum: 10 }, { type: 'number', maximum: 9.5 }, 'changed maximum from 10 to 9.5'],
    ['minLength raised', { type: 'string', minLength: 1 }, { type: 'string', minLength: 2 }, 'changed minLength from 1 to 2'],
    ['maxLength lowered', { type: 'string', maxLength: 10 }, { type: 'string', maxLength: 9 }, 'changed maxLength from 10 to 9'],
    ['maxLength added', { type: 'string' }, { type: 'string', maxLength: 9 }, 'changed maxLength from none to 9'],
    ['minItems raised', { type: 'array', items: { type: 'string' } }, { type: 'array', items: { type: 'string' }, minItems: 1 }, 'changed minItems from none to 1'],
    ['maxItems lowered', { type: 'array', items: { type: 'string' }, maxItems: 3 }, { type: 'array', items: { type: 'string' }, maxItems: 2 }, 'changed maxItems from 3 to 2'],
    ['enum value removed', { type: 'string', enum: ['a', 'b'] }, { type: 'string', enum: ['a'] }, 'changed enum from ["a","b"] to ["a"]'],
    ['enum added', { type: 'string' }, { type: 'string', enum: ['a'] }, 'changed enum from none to ["a"]'],
    ['pattern added', { type: 'string' }, { type: 'string', pattern: '^a' }, 'changed pattern from none to "^a"'],
    ['pattern changed', { type: 'string', pattern: '^a' }, { type: 'string', pattern: '^b' }, 'changed pattern from "^a" to "^b"'],
    ['format added', { type: 'string' }, { type: 'string', format: 'email' }, 'changed format from none to "email"'],
    ['format changed', { type: 'string', format: 'email' }, { type: 'string', format: 'uri' }, 'changed format from "email" to "uri"'],
    ['items changed', { type: 'array', items: { type: 'string' } }, { type: 'array', items: { type: 'string', maxLength: 5 } }, 'changed items'],
    ['items loosened', { type: 'array', items: { type: 'string', maxLength: 5 } }, { type: 'array', items: { type: 'string' } }, 'changed items'],
    ['uniqueItems added', { type: 'array', items: { type: 'string' } }, { type: 'array', items: { type: 'string' }, uniqueItems: true }, 'changed uniqueItems from none to true'],
    ['jsonb properties', { type: 'object' }, { type: 'object', properties: { a: { type: 'string' } } }, 'changed properties'],
    ['jsonb required removed', { type: 'object', required: ['a'] }, { type: 'object' }, 'changed required']
  ]
  for (const [name, before, after, change] of refused) {
    t.throws(() => planResourceTableChanges(one(before), one(after)), new ResourceTableError(`tasks: field "x" ${change}${NARROWED}`), name)
  }
  t.throws(() => planResourceTableChanges(one({ type: 'string' }), one({ type: 'string' }, { required: true })), new ResourceTableError(
    'tasks: field "x" became required without a default, but rows already stored may have no value for it; give it a default, or keep it optional'))
  t.throws(() => planResourceTableChanges({ table: 'tasks', fields: [] }, one({ type: 'string' }, { required: true })), new ResourceTableError(
    'tasks: new field "x" is required without a default, but existing rows would have no value for it; give it a default, or make it optional'))
  t.throws(() => planResourceTableChanges({ table: 'tasks', fields: fieldsOf({ due: { type: 'string' }, x: { type: 'string' } }) }, one({ type: 'string' })),
    new ResourceTableError('tasks: field "due" was removed, but its column still holds data; put it back, or drop the column yourself (ALTER TABLE "tasks" DROP COLUMN "due") and restart'))
  t.throws(() => planResourceTableChanges(one({ type: 'string' }), { ...one({ type: 'string' }), owner: true }), new ResourceTableError(
    'tasks: the owner option was switched on, which the table cannot follow; switch it back, or give the resource a new table (the table option)'))
  t.throws(() => planResourceTableChanges({ ...one({ type: 'string' }), owner: true }, one({ type: 'string' })), { message: /owner option was switched off/ })
})

t.test('planResourceTableChanges applies loosened constraints and changes of nullability and default', async (t) => {
  const alter = (change: string) => `ALTER TABLE "tasks" ${change}`
  const replaceCheck = (check?: string) => [alter('DROP CONSTRAINT IF EXISTS "tasks_x_check"'), ...(check ? [alter(`ADD CONSTRAINT "tasks_x_check" CHECK (${check})`)] : [])]
  const allowed: Array<[string, ResourceTableSpec, ResourceTableSpec, string[]]> = [
    ['same', one({ type: 'integer', minimum: 1 }), one({ type: 'integer', minimum: 1 }), []],
    ['annotations', one({ type: 'string', description: 'old' }), one({ type: 'string', description: 'new', examples: ['x'] }), []],
    ['minimum lowered', one({ type: 'integer', minimum: 1 }), one({ type: 'integer', minimum: 0 }), replaceCheck('"x" >= 0')],
    ['minimum removed', one({ type: 'integer', minimum: 1 }), one({ type: 'integer' }), replaceCheck()],
    ['maximum raised', one({ type: 'number', maximum: 1 }), one({ type: 'number', maximum: 2 }), replaceCheck('"x" <= 2')],
    ['maxLength raised', one({ type: 'string', minLength: 1, maxLength: 2 }), one({ type: 'string', minLength: 1, maxLength: 3 }),
      replaceCheck('char_length("x") >= 1 AND char_length("x") <= 3')],
    ['minItems removed', one({ type: 'array', items: { type: 'string' }, minItems: 1 }), one({ type: 'array', items: { type: 'string' } }), replaceCheck()],
    ['maxItems raised', one({ type: 'array', items: { type: 'string' }, maxItems: 1 }), one({ type: 'array', items: { type: 'string' }, maxItems: 2 }),
      replaceCheck('cardinality("x") <= 2')],
    ['enum value added', one({ type: 'string', enum: ['a'] }), one({ type: 'string', enum: ['a', 'b'] }), replaceCheck('"x" IN (\'a\', \'b\')')],
    ['enum removed', one({ type: 'string', enum: ['a'] }), one({ type: 'string' }), replaceCheck()],
    ['pattern removed', one({ type: 'string', pattern: '^a' }), one({ type: 'string' }), []],
    ['format removed', one({ type: 'string', format: 'email' }), one({ type: 'string' }), []],
    ['uniqueItems removed', one({ type: 'array', items: { type: 'string' }, uniqueItems: true }), one({ type: 'array', items: { type: 'string' } }), []],
    ['nullable added', one({ type: 'string' }, { required: true }), one({ type: 'string', nullable: true }, { required: true }), [alter('ALTER COLUMN "x" DROP NOT NULL')]],
    ['required to optional', one({ type: 'string' }, { required: true }), one({ type: 'string' }), [alter('ALTER COLUMN "x" DROP NOT NULL')]],
    ['nullable made required', one({ type: 'string', nullable: true }), one({ type: 'string', nullable: true }, { required: true }), []],
    ['default added to a required field', one({ type: 'integer' }, { required: true }), one({ type: 'integer', default: 3 }, { required: true }),
      [alter('ALTER COLUMN "x" SET DEFAULT 3')]],
    ['default changed', one({ type: 'string', default: 'a' }), one({ type: 'string', default: "it's" }), [alter('ALTER COLUMN "x" SET DEFAULT \'it\'\'s\'')]],
    ['default removed from a required field', one({ type: 'string', default: 'a' }, { required: true }), one({ type: 'string' }, { required: true }),
      [alter('ALTER COLUMN "x" DROP DEFAULT')]],
    ['default removed from an optional field', one({ type: 'string', default: 'a' }), one({ type: 'string' }),
      [alter('ALTER COLUMN "x" DROP DEFAULT'), alter('ALTER COLUMN "x" DROP NOT NULL')]],
    ['default added to an optional field', one({ type: 'string' }), one({ type: 'string', default: 'a' }),
      [alter('ALTER COLUMN "x" SET DEFAULT \'a\''), 'UPDATE "tasks" SET "x" = DEFAULT WHERE "x" IS NULL', alter('ALTER COLUMN "x" SET NOT NULL')]],
    ['default null on a nullable field', one({ type: 'string', nullable: true }), one({ type: 'string', nullable: true, default: null }),
      [alter('ALTER COLUMN "x" SET DEFAULT NULL')]],
    ['new fields', { table: 'tasks', fields: [] }, { ...one({ type: 'integer', maximum: 5, default: 1 }), indexes: ['x'] },
      [alter('ADD COLUMN "x" integer DEFAULT 1 NOT NULL'), alter('ADD CONSTRAINT "tasks_x_check" CHECK ("x" <= 5)'), 'CREATE INDEX "tasks_x_idx" ON "tasks" ("x", "id")']],
    ['new nullable field', { table: 'tasks', fields: [] }, one({ type: 'object', nullable: true }, { required: true }), [alter('ADD COLUMN "x" jsonb')]],
    ['index removed', { ...one({ type: 'string' }), indexes: ['x'] }, one({ type: 'string' }), ['DROP INDEX "tasks_x_idx"']]
  ]
  for (const [name, before, after, statements] of allowed) t.same(planResourceTableChanges(before, after), statements, name)
})

t.test('restarting with the same definition runs no DDL and writes nothing', async (t) => {
  const spec = { table: 'restarted', fields: KINDS, owner: true, indexes: ['rank'] }
  await prepareResourceTable(db, spec)
  const [owner] = await db.insert(users).values({ email: 'restart@example.com', hashed_password: 'x' }).returning()
  const row = await repositoryOf('restarted', KINDS, { owner: true }).create({ title: 'kept', rank: 1, owner_id: owner!.id })
  const stored = await definitionOf('restarted')
  const recording = recordingDatabase(client)
  const reordered = KINDS.map((field) => Object.fromEntries(Object.entries(field).reverse()) as unknown as Field)
  await prepareResourceTable(recording.db, { ...spec, fields: reordered })
  t.equal(recording.statements.length, 4, 'the statement timeout lifted, the lock, the catalog and the definition')
  t.match(recording.statements[0], /set_config\('statement_timeout'/, 'first, the bound lifted: a lock wait behind another instance may be long')
  t.notOk(recording.statements.some((statement) => /^\s*(create|alter|drop|insert|update|delete)\b/i.test(statement)), 'reads only')
  t.same(await definitionOf('restarted'), stored, 'the definition is untouched')
  t.same(await repositoryOf('restarted', KINDS, { owner: true }).get(row.id), row, 'the row is kept')
})

t.test('the definition\'s digest follows what is stored: key order aside, any change of a field changes it', async (t) => {
  const spec: ResourceTableSpec = { table: 'digested', fields: KINDS, indexes: ['rank'] }
  const reordered = KINDS.map((field) => Object.fromEntries(Object.entries(field).reverse()) as unknown as Field)
  t.equal(definitionDigest({ ...spec, fields: reordered }), definitionDigest(spec), 'one definition, one digest in every process')
  t.match(definitionDigest(spec), /^[\w-]{43}$/)
  const added = fieldsOf({ extra: { type: 'integer', default: 1 } })
  const changes: Array<[string, ResourceTableSpec]> = [
    ['a field added with a default', { ...spec, fields: [...KINDS, ...added] }],
    ['a default changed', { ...spec, fields: KINDS.map((field) => field.name === 'score' ? { ...field, default: 0.5 } : field) }],
    ['owner mode', { ...spec, owner: true }]
  ]
  for (const [change, other] of changes) t.not(definitionDigest(other), definitionDigest(spec), change)
})

t.test('new fields are added: existing rows get the default, and the check and the index come with them', async (t) => {
  const before = fieldsOf({ title: { type: 'string' } }, ['title'])
  await prepareResourceTable(db, { table: 'grown', fields: before })
  await repositoryOf('grown', before).create({ title: 'old' })
  const after = fieldsOf({
    title: { type: 'string' },
    priority: { type: 'integer', minimum: 1, maximum: 5, default: 3 },
    note: { type: 'string' },
    due: { type: 'string', format: 'date-time', nullable: true }
  }, ['title', 'due'])
  await prepareResourceTable(db, { table: 'grown', fields: after, indexes: ['priority'] })
  const repo = repositoryOf('grown', after)
  t.match(await repo.get(1), { title: 'old', priority: 3, note: null, due: null }, 'the old row has the default, and null elsewhere')
  t.same(await refusal(repo.create({ title: 'new', priority: 6, due: null })), ['23514', 'grown_priority_check'])
  t.same(await indexesOf('grown'), [
    'CREATE UNIQUE INDEX grown_pkey ON public.grown USING btree (id)',
    'CREATE INDEX grown_priority_idx ON public.grown USING btree (priority, id)'
  ])
  t.same((await definitionOf('grown'))?.definition, { fields: JSON.parse(JSON.stringify(after)), owner: false, indexes: ['priority'] }, 'the new definition is kept')
})

t.test('loosened constraints, nullability and defaults change on the live table and keep its rows', async (t) => {
  const before = fieldsOf({
    rank: { type: 'integer', maximum: 5 },
    state: { type: 'string', enum: ['open'], default: 'open' },
    label: { type: 'string' },
    size: { type: 'string', default: 'm' }
  }, ['rank'])
  await prepareResourceTable(db, { table: 'loosened', fields: before })
  await repositoryOf('loosened', before).create({ rank: 5 })
  const after = fieldsOf({
    rank: { type: 'integer', maximum: 10, nullable: true },
    state: { type: 'string', enum: ['open', 'done'], default: 'done' },
    label: { type: 'string', default: 'none' },
    size: { type: 'string' }
  }, ['rank'])
  await prepareResourceTable(db, { table: 'loosened', fields: after })
  const repo = repositoryOf('loosened', after)
  t.match(await repo.get(1), { rank: 5, state: 'open', label: 'none', size: 'm' }, 'the unset label took the new default')
  t.match(await repo.create({ rank: 10, state: 'done' }), { rank: 10, state: 'done', label: 'none', size: null })
  t.match(await repo.create({ rank: null }), { rank: null, state: 'done' }, 'null is allowed, the default changed')
  t.same((await columnsOf('loosened')).map((column) => [column.column_name, column.is_nullable, column.column_default]), [
    ['created_at', 'NO', 'now()'], ['id', 'NO', null], ['label', 'NO', "'none'::text"], ['rank', 'YES', null],
    ['size', 'YES', null], ['state', 'NO', "'done'::text"], ['updated_at', 'NO', 'now()']
  ])
})

t.test('a refused change leaves the table, its rows and its definition as they were', async (t) => {
  const before = fieldsOf({ rank: { type: 'integer', minimum: 0 } }, ['rank'])
  await prepareResourceTable(db, { table: 'kept', fields: before })
  await repositoryOf('kept', before).create({ rank: 0 })
  const stored = await definitionOf('kept')
  const columns = await columnsOf('kept')
  const after = fieldsOf({ rank: { type: 'integer', minimum: 1 }, extra: { type: 'string' } }, ['rank'])
  await t.rejects(prepareResourceTable(db, { table: 'kept', fields: after }), new ResourceTableError(`kept: field "rank" changed minimum from 0 to 1${NARROWED}`))
  t.same(await definitionOf('kept'), stored)
  t.same(await columnsOf('kept'), columns, 'no column added either')
})

t.test('a removed field is refused until its column is dropped; a field whose column was dropped comes back empty', async (t) => {
  const before = fieldsOf({ title: { type: 'string' }, due: { type: 'string', format: 'date' } }, ['title'])
  await prepareResourceTable(db, { table: 'shrunk', fields: before, indexes: ['due'] })
  await repositoryOf('shrunk', before).create({ title: 'a', due: '2024-01-01' })
  const after = fieldsOf({ title: { type: 'string' } }, ['title'])
  await t.rejects(prepareResourceTable(db, { table: 'shrunk', fields: after }), new ResourceTableError(
    'shrunk: field "due" was removed, but its column still holds data; put it back, or drop the column yourself (ALTER TABLE "shrunk" DROP COLUMN "due") and restart'))
  await db.execute(sql.raw('ALTER TABLE "shrunk" DROP COLUMN "due"'))
  await prepareResourceTable(db, { table: 'shrunk', fields: after })
  t.same((await definitionOf('shrunk'))?.definition, { fields: JSON.parse(JSON.stringify(after)), owner: false, indexes: [] })
  t.same(await indexesOf('shrunk'), ['CREATE UNIQUE INDEX shrunk_pkey ON public.shrunk USING btree (id)'])
  await prepareResourceTable(db, { table: 'shrunk', fields: before, indexes: ['due'] })
  t.match(await repositoryOf('shrunk', before).get(1), { title: 'a', due: null }, 'added again, without the old values')
})

t.test('indexes follow the list', async (t) => {
  const fields = fieldsOf({ a: { type: 'string' }, b: { type: 'integer' } })
  await prepareResourceTable(db, { table: 'indexed', fields, indexes: ['a'] })
  await prepareResourceTable(db, { table: 'indexed', fields, indexes: ['b'] })
  t.same(await indexesOf('indexed'), [
    'CREATE INDEX indexed_b_idx ON public.indexed USING btree (b, id)',
    'CREATE UNIQUE INDEX indexed_pkey ON public.indexed USING btree (id)'
  ])
})

t.test('a table plinth did not create is refused; a recorded table that was dropped is made again', async (t) => {
  await db.execute(sql`create table foreign_notes (id serial primary key, body text)`)
  await t.rejects(prepareResourceTable(db, { table: 'foreign_notes', fields: [] }), new ResourceTableError(
    'foreign_notes: the table exists but was not created by plinth for a schema resource; choose another table option, or drop or rename the existing table'))
  t.notOk(await definitionOf('foreign_notes'), 'nothing recorded')
  await db.execute(sql`create table no_columns ()`)
  await t.rejects(prepareResourceTable(db, { table: 'no_columns', fields: [] }), { message: /^no_columns: the table exists but was not created by plinth/ })
  await t.rejects(prepareResourceTable(db, { table: 'users_pkey', fields: [] }), { message: /^users_pkey: the table exists/ }, 'nor is an index')
  const fields = fieldsOf({ title: { type: 'string' } })
  await prepareResourceTable(db, { table: 'dropped', fields })
  await db.execute(sql`drop table dropped`)
  const other = fieldsOf({ body: { type: 'string' } })
  await prepareResourceTable(db, { table: 'dropped', fields: other })
  t.match(await repositoryOf('dropped', other).create({ body: 'again' }), { id: 1, body: 'again' })
  t.same((await definitionOf('dropped'))?.definition.fields, JSON.parse(JSON.stringify(other)))
})

t.test('processes booting together take turns: each table is created and changed once', async (t) => {
  let clients = [client, client]
  if (TEST_DATABASE_URL) {
    const url = await freshPostgresUrl(t)
    clients = await Promise.all([connectTo(url), connectTo(url)])
    t.teardown(() => Promise.all(clients.map((each) => each.close())))
    await clients[0]!.migrate()
  }
  const boot = (spec: ResourceTableSpec) => Promise.all([...clients, ...clients].map((each) => prepareResourceTable(each.db, spec)))
  const fields = fieldsOf({ title: { type: 'string' } })
  await boot({ table: 'raced', fields })
  const grown = fieldsOf({ title: { type: 'string' }, rank: { type: 'integer', default: 0 } })
  await boot({ table: 'raced', fields: grown, indexes: ['rank'] })
  const [first] = clients
  t.match(await repositoryOf('raced', grown, {}, first!.db).create({ title: 'x' }), { id: 1, title: 'x', rank: 0 })
  const names = await rows<{ name: string }>(sql`select indexname as name from pg_indexes where tablename = 'raced' order by 1`, first!.db)
  t.same(names.map((row) => row.name), ['raced_pkey', 'raced_rank_idx'])
})
