import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { eq, sql } from 'drizzle-orm'
import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { drizzle as onPglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { drizzle as onPostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import t, { type Test } from 'tap'
import { createGate } from '../../concurrency/gate.js'
import type { Database } from '../../db/client.js'
import { gated, prepareAs, statementCache } from '../../db/driver.js'
import { until } from '../support/until.js'
import { connectTo, freshPglite, freshPostgresUrl, oneConnection, rowsOf, TEST_DATABASE_URL, TEST_POOL_MODE, rawOptions } from '../support/database.js'
import { createUserRepository } from '../../db/users.js'

const root = new URL('../../', import.meta.url)
const migrationsFolder = fileURLToPath(new URL('db/migrations', root))
const versionOf = (name: string) =>
  (JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, root), 'utf8')) as { version: string }).version

t.test('the installed drivers are the versions the seams of db/driver.ts were written against', async (t) => {
  t.match(versionOf('drizzle-orm'), /^0\.45\./,
    'drizzle-orm changed: re-check prepareAs (a builder prepares what its own getSQL answers) and wrapPglite (the PGlite session calls only query and transaction)')
  t.match(versionOf('postgres'), /^3\.4\./,
    'postgres.js changed: re-check gated (Drizzle awaits only unsafe, unsafe().values() and begin; 3.4 pipelining leaves holes in its queue) and max_pipeline in db/client.ts')
})

const PG = TEST_DATABASE_URL ? false : 'PostgreSQL only (TEST_DATABASE_URL)'
const PGLITE = TEST_DATABASE_URL ? 'PGlite only (without TEST_DATABASE_URL)' : false
// Through a transaction pooler nothing is named: the tests of what a connection keeps are the other mode's.
const NAMED = PG || (TEST_POOL_MODE === 'transaction' && 'named statements: DATABASE_POOL_MODE=session only')

/** A table with a key that is not its column's name and a value the driver decodes, to see Drizzle's row mapping. */
const driverRows = pgTable('driver_rows', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  madeAt: timestamp('made_at', { withTimezone: true }).notNull(),
  label: text('label')
})
const createDriverRows = sql`create table driver_rows (id int generated always as identity primary key, made_at timestamptz not null, label text)`

/** `target` seen through a proxy that notes, under `prefix`, each property read; `wrap` may stand in for a method. */
function recording<T extends object> (target: T, prefix: string, read: Set<string>, wrap: (key: string, method: (...args: never[]) => unknown) => unknown = (_, method) => method): T {
  return new Proxy(target, {
    get (target, key) {
      read.add(`${prefix}${String(key)}`)
      const value = Reflect.get(target, key, target) as unknown
      return typeof value === 'function' ? wrap(String(key), value.bind(target) as (...args: never[]) => unknown) : value
    }
  })
}

/** Queries and a transaction of each kind plinth sends through Drizzle, on a database whose migrations ran. */
async function everyKindOfQuery (db: Database) {
  await db.execute(createDriverRows)
  await db.insert(driverRows).values({ madeAt: new Date(), label: 'a' }).returning()
  await db.select().from(driverRows)
  await db.select().from(driverRows).where(eq(driverRows.label, sql.placeholder('label'))).prepare('driver_rows_by_label').execute({ label: 'a' })
  await prepareAs(db.insert(driverRows).values({} as never).returning(), sql`insert into driver_rows (made_at) values (now()) returning id, made_at, label`, 'driver_rows_text').execute()
  await db.update(driverRows).set({ label: 'b' }).where(eq(driverRows.id, 1))
  await db.transaction(async (tx) => {
    await tx.select().from(driverRows)
    await tx.transaction(async (nested) => { await nested.delete(driverRows).where(eq(driverRows.id, 2)) })
  })
}

t.test('Drizzle reaches postgres.js only by awaiting unsafe() or unsafe().values(), by begin, and by its options', { skip: PG }, async (t) => {
  const url = await freshPostgresUrl(t)
  const client = postgres(url, rawOptions)
  t.teardown(() => client.end())
  const read = new Set<string>()
  const seen = recording(client, 'sql.', read, (key, method) =>
    key === 'unsafe' ? (...args: never[]) => recording(method(...args) as object, 'query.', read) : method)
  const db = onPostgres({ client: seen }) as unknown as Database
  await migratePostgres(db as never, { migrationsFolder })
  await everyKindOfQuery(db)
  t.same([...read].sort(), ['query.then', 'query.values', 'sql.begin', 'sql.options', 'sql.unsafe'],
    'what gated() intercepts (unsafe and begin) and forwards (options) is all Drizzle uses, migrations included')
})

t.test('Drizzle reaches PGlite only by query and transaction', { skip: PGLITE }, async (t) => {
  const client = await freshPglite({ migrated: false })
  t.teardown(() => client.close())
  const read = new Set<string>()
  const pglite = (client.db as unknown as { $client: object }).$client
  const db = onPglite({ client: recording(pglite, '', read) as never }) as unknown as Database
  await migratePglite(db as never, { migrationsFolder })
  await everyKindOfQuery(db)
  t.same([...read].sort(), ['query', 'transaction'], 'what wrapPglite() counts and traces is all Drizzle uses, migrations included')
})

/** A database of either driver: Drizzle on a single connection of PostgreSQL's (for what it keeps per connection), else PGlite. */
async function database (t: Test): Promise<{ db: Database, driver: 'pglite' | 'postgres' }> {
  if (!TEST_DATABASE_URL) {
    const client = await freshPglite({ migrated: false })
    t.teardown(() => client.close())
    return { db: client.db, driver: 'pglite' }
  }
  const client = postgres(await freshPostgresUrl(t), rawOptions)
  t.teardown(() => client.end())
  return { db: onPostgres({ client }) as unknown as Database, driver: 'postgres' }
}

interface Kept { name: string, statement: string, runs: number }
const kept = async (db: Database, like: string) => rowsOf<Kept>(await db.execute(sql`select name, statement,
  (generic_plans + custom_plans)::int as runs from pg_prepared_statements where statement like ${like}`))

t.test('a builder whose getSQL is replaced prepares the text given and maps its rows by the builder\'s columns', async (t) => {
  const { db, driver } = await database(t)
  await db.execute(createDriverRows)
  const text = sql`insert into driver_rows (made_at, label) select made_at, label
    from jsonb_populate_recordset(null::driver_rows, ${sql.placeholder('rows')}::jsonb) returning id, made_at, label`
  const statement = prepareAs(db.insert(driverRows).values({} as never).returning(), text, 'driver_rows_insert_0')
  t.match((statement as unknown as { getQuery (): { sql: string } }).getQuery().sql, /^insert into driver_rows \(made_at, label\) select/, 'the text given, not the builder\'s')
  const rows = JSON.stringify([{ made_at: '2026-01-02T03:04:05.678Z', label: 'a' }, { made_at: '2026-02-03T04:05:06.789Z', label: null }])
  t.same(await statement.execute({ rows }), [
    { id: 1, madeAt: new Date('2026-01-02T03:04:05.678Z'), label: 'a' },
    { id: 2, madeAt: new Date('2026-02-03T04:05:06.789Z'), label: null }
  ], 'by position, under the builder\'s keys, timestamps decoded to Date')
  await statement.execute({ rows: '[]' })
  if (driver === 'pglite' || NAMED) return
  const [prepared, ...others] = await kept(db, 'insert into driver_rows (made_at, label) select%')
  t.equal(others.length, 0)
  t.equal(prepared?.runs, 2, 'prepared once on the connection, run twice')
})

t.test('a prepared statement is kept once per connection and reused; a builder run as it is, never', { skip: NAMED }, async (t) => {
  const { db } = await database(t)
  await db.execute(createDriverRows)
  const statements = statementCache('driver_rows', 1)
  const byLabel = statements.one('by_label', (as) => db.select().from(driverRows).where(eq(driverRows.label, sql.placeholder('label'))).prepare(as))
  for (const label of ['a', 'b', 'c']) await byLabel.execute({ label })
  await db.select().from(driverRows).where(eq(driverRows.id, sql.placeholder('id'))).execute({ id: 1 })
  const found = await kept(db, 'select % from "driver_rows" where %')
  t.equal(found.length, 1, 'only the prepared one is kept')
  t.match(found[0], { statement: /"label" = \$1/, runs: 3 }, 'reused for every run')
  t.not(found[0]?.name, 'driver_rows_by_label',
    'postgres.js names statements itself: if ours reach the server, two repositories over one table must not share them')
})

t.test('in transaction pool mode every statement is unnamed: no server connection keeps one, behind a pooler or not', { skip: PG }, async (t) => {
  const client = await connectTo(await freshPostgresUrl(t), { poolMode: 'transaction' })
  t.teardown(() => client.close())
  await client.migrate()
  const db = await oneConnection(t, client)
  const users = createUserRepository(db)
  const made = await users.create({ email: 'unnamed@example.com', hashed_password: 'x' })
  for (let i = 0; i < 3; i++) t.equal((await users.get(made!.id))?.email, 'unnamed@example.com')
  t.same(await kept(db, '%'), [], 'pg_prepared_statements is empty')
  t.equal(client.poolMode, 'transaction')
})

t.test('postgres.js runs unsafe() only once awaited, answers arrays from .values(), and runs begin\'s callback once', { skip: PG }, async (t) => {
  const client = postgres(await freshPostgresUrl(t), rawOptions)
  t.teardown(() => client.end())
  await client.unsafe('create table noted (n int)')
  const insert = client.unsafe('insert into noted values (1)')
  await client.unsafe('select pg_sleep(0.02)')
  t.same(await client.unsafe('select count(*)::int as n from noted'), [{ n: 0 }], 'not sent before it is awaited')
  await insert
  t.same(await client.unsafe('select count(*)::int as n from noted'), [{ n: 1 }])
  t.same(await client.unsafe('select 1 as a, 2 as b').values(), [[1, 2]], 'values() answers each row as an array')
  let calls = 0
  t.equal(await client.begin(async (tx) => { calls++; return (await tx.unsafe('select 3 as n'))[0]?.n }), 3)
  await t.rejects(client.begin(async () => { calls++; throw new Error('rolled back') }), /rolled back/)
  t.equal(calls, 2, 'each callback once')
})

t.test('postgres.js refuses a query with ECONNREFUSED when nothing listens, before it ran', async (t) => {
  const client = postgres('postgres://plinth@127.0.0.1:1/plinth', { max: 1, connect_timeout: 2, onnotice: () => {} })
  t.teardown(() => client.end({ timeout: 0 }))
  await t.rejects(client.unsafe('select 1'), { code: 'ECONNREFUSED' }, 'the code gated() tries once more on')
})

t.test('through gated(), queries and transactions take their turn at the gate, start when awaited and run once', { skip: PG }, async (t) => {
  const url = await freshPostgresUrl(t)
  const client = postgres(url, rawOptions)
  t.teardown(() => client.end())
  const gate = createGate(1)
  const pooled = gated(client, gate)
  await pooled.unsafe('create table noted (n int)')
  const insert = pooled.unsafe('insert into noted values (1)')
  await pooled.unsafe('select pg_sleep(0.02)')
  t.same(await pooled.unsafe('select count(*)::int as n from noted'), [{ n: 0 }], 'not sent before it is awaited')
  // Another connection holds the table, so the read below runs for as long as the test needs, not for a guessed time.
  const blocker = postgres(url, rawOptions)
  let release = () => {}
  t.teardown(() => { release(); return blocker.end() })
  const locked = new Promise<void>((resolve) => {
    blocker.begin(async (tx) => {
      await tx.unsafe('lock table noted')
      resolve()
      await new Promise<void>((resolve) => { release = resolve })
    }).catch(() => {})
  })
  await locked
  const blocked = Promise.resolve(pooled.unsafe('select count(*) from noted').values())
  await until('the read to take the gate', () => gate.load().running === 1 || undefined, 10_000)
  t.same(gate.load(), { running: 1, waiting: 0 }, 'an awaited query holds the gate while it runs')
  release()
  await Promise.all([blocked, insert])
  t.same(await pooled.unsafe('select 1 as a, 2 as b').values(), [[1, 2]])
  let calls = 0
  t.equal(await pooled.begin(async (tx) => { calls++; return (await tx.unsafe('select 3 as n'))[0]?.n }), 3)
  await t.rejects(pooled.begin(async () => { calls++; throw new Error('rolled back') }), /rolled back/)
  t.equal(calls, 2, 'each callback once: only a refused connection is tried again')
  t.same(gate.load(), { running: 0, waiting: 0 })
})

t.test('a query refused before it ran is tried once more, and any other error is the answer', async (t) => {
  let calls = 0
  const answers: unknown[] = [Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), [{ n: 1 }], new Error('syntax'), [{ n: 2 }]]
  const fake = {
    options: {},
    unsafe: () => {
      const answer = answers[calls++]
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer)
    }
  } as unknown as postgres.Sql
  const pooled = gated(fake, createGate(1))
  t.same(await pooled.unsafe('select 1'), [{ n: 1 }])
  t.equal(calls, 2)
  await t.rejects(Promise.resolve(pooled.unsafe('select 2')), /syntax/)
  t.equal(calls, 3)
})

t.test('the statement cache prepares each shape once, names it for its kind, and stops at the bound', async (t) => {
  const named: string[] = []
  const prepare = (name: string) => { named.push(name); return { execute: async () => name } }
  const statements = statementCache('items', 2)
  const list = statements.one('list', prepare)
  t.equal(statements.one('list', prepare), list, 'one statement for a one-shape kind')
  const first = statements.shaped('insert', 'name,price', prepare)
  t.equal(statements.shaped('insert', 'name,price', prepare), first, 'one statement per shape')
  statements.shaped('update', 'name', prepare)
  statements.shaped('insert', 'name', prepare)
  t.equal(statements.shaped('insert', 'price', prepare), undefined, 'past the bound of its kind: run unprepared')
  t.equal(statements.shaped('insert', 'name,price', prepare), first, 'shapes kept before the bound stay')
  statements.shaped('update', 'price', prepare)
  t.same(named, ['items_list', 'items_insert_0', 'items_update_0', 'items_insert_1', 'items_update_1'], 'names unique within the cache\'s prefix')
})
