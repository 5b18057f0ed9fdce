import { sql } from 'drizzle-orm'
import { integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import t from 'tap'
import { createRepository } from '../../db/crud.js'
import { serverBusy, serverBusyIn } from '../../concurrency/busy.js'
import { isRefusedValue, refusedField } from '../../db/errors.js'
import { items } from '../../db/schema.js'
import { countingDatabase, freshDatabase, oneConnection, rowsOf, TEST_POOL_MODE, unversioned } from '../support/database.js'

const client = await freshDatabase(t)
const repo = createRepository(client.db, items, { batchUpdates: true })

/** A table the migrations never created. */
const brokenTable = pgTable('no_such_table', { id: integer('id').primaryKey() })

t.test('create assigns id and defaults, get reads it back', async (t) => {
  const created = await repo.create({ name: 'lamp', price: 12.5 })
  t.type(created.id, 'number')
  t.equal(created.name, 'lamp')
  t.equal(created.description, null)
  t.equal(created.in_stock, true)
  t.ok(created.created_at instanceof Date, 'created_at is a Date')
  t.same(await repo.get(created.id), created)
})

t.test('get of a missing id is null', async (t) => {
  t.equal(await repo.get(2147483647), null)
})

t.test('concurrent gets share one query and each gets its own row, missing ids null', async (t) => {
  const made = await Promise.all(['a', 'b', 'c'].map((name) => repo.create({ name, price: 1 })))
  const ids = [made[2]!.id, 2147483646, made[0]!.id, made[2]!.id, made[1]!.id]
  const counted = countingDatabase(client)
  const countedRepo = createRepository(counted.db, items)
  const got = await Promise.all(ids.map((id) => countedRepo.get(id)))
  t.same(got, [made[2], null, made[0], made[2], made[1]], 'in the order asked, a repeated id twice')
  t.equal(counted.queries(), 1, 'one round trip for five lookups')
})

/** Enough rows that a plan for one id (an index scan) costs less than PostgreSQL's guess for an unknown array. */
const manyRows = pgTable('many_rows', { id: integer('id').primaryKey().generatedAlwaysAsIdentity(), name: text('name').notNull() })

t.test('lookups by id keep one generic plan instead of planning each batch anew', {
  skip: (client.driver === 'pglite' && 'PGlite keeps no prepared statement: it plans every query') ||
    (TEST_POOL_MODE === 'transaction' && 'a transaction pooler keeps no named statement: each query is planned anew')
}, async (t) => {
  const db = await oneConnection(t, client)
  await db.execute(sql`create table many_rows (id int generated always as identity primary key, name text not null)`)
  await db.execute(sql`insert into many_rows (name) select 'row ' || n from generate_series(1, 10000) n`)
  await db.execute(sql`analyze many_rows`)
  const alone = createRepository(db, manyRows)
  // Batches of one, two and three ids in turn: a plan made for each length would be remade every call.
  for (let call = 0; call < 12; call++) {
    const ids = [1, 5000, 10000].slice(0, 1 + call % 3)
    t.same((await Promise.all(ids.map((id) => alone.get(id)))).map((row) => row?.name), ids.map((id) => `row ${id}`))
  }
  const [plans] = rowsOf<{ generic: number, custom: number }>(await db.execute(sql`select generic_plans::int as generic,
    custom_plans::int as custom from pg_prepared_statements where statement like 'select % from "many_rows" where %'`))
  t.equal(plans?.custom, 5, 'the five custom plans PostgreSQL makes before it weighs the generic one')
  t.equal(plans!.generic, 7, 'then the generic one, every time')
})

t.test('concurrent creates share one INSERT, and each gets back its own row', async (t) => {
  const counted = countingDatabase(client)
  const countedRepo = createRepository(counted.db, items)
  const names = Array.from({ length: 30 }, (_, i) => `batch ${i}`)
  const made = await Promise.all(names.map((name, i) => countedRepo.create({ name, price: i, in_stock: i % 2 === 0 })))
  t.same(made.map((row) => [row.name, row.price, row.in_stock]), names.map((name, i) => [name, i, i % 2 === 0]), 'in the order asked')
  t.equal(new Set(made.map((row) => row.id)).size, 30, 'thirty ids')
  t.equal(counted.queries(), 1, 'one statement')
  for (const row of made) t.same(await repo.get(row.id), row, `${row.name} is stored as returned`)
})

t.test('a batch of mixed shapes, nulls and timestamps stores each row as sent, prepared or not', async (t) => {
  const counted = countingDatabase(client)
  const countedRepo = createRepository(counted.db, items)
  const when = new Date('2026-01-02T03:04:05.678Z')
  const sent = [
    { name: 'plain', price: 1 },
    { name: 'described', price: 2, description: 'text' },
    { name: 'cleared', price: 3, description: null, in_stock: false },
    { name: 'dated', price: 4, created_at: when }
  ]
  for (let round = 0; round < 3; round++) {
    const same = await Promise.all([sent[2]!, sent[2]!].map((row) => countedRepo.create(row)))
    t.same(same.map((row) => [row.description, row.in_stock]), [[null, false], [null, false]], 'one shape with a null, twice')
    const mixed = await Promise.all(sent.map((row) => countedRepo.create(row)))
    t.same(mixed.map((row) => [row.name, row.price, row.description, row.in_stock]), [
      ['plain', 1, null, true], ['described', 2, 'text', true], ['cleared', 3, null, false], ['dated', 4, null, true]
    ])
    t.same(mixed[3]!.created_at, when, 'a Date goes through its column\'s encoder')
  }
  t.equal(counted.queries(), 6, 'one statement per batch')
})

t.test('text that JSON must escape is stored exactly, and a batch the size varies keeps one statement per shape', async (t) => {
  const texts = ['quote " and \\ backslash', 'tab\tnew\nline', 'é ü 漢字 😀', '{"looks": ["like", "json"]}', '\u2028\u2029', ' ']
  for (const size of [1, 2, texts.length]) {
    const made = await Promise.all(texts.slice(0, size).map((name, i) => repo.create({ name, price: i + 0.1 })))
    t.same(made.map((row) => [row.name, row.price]), texts.slice(0, size).map((name, i) => [name, i + 0.1]), `a batch of ${size}, in order`)
    for (const row of made) t.same(await repo.get(row.id), row, 'stored as returned')
  }
})

t.test('a row the JSON form refuses is tried alone and fails with its own error; the others are stored', async (t) => {
  const results = await Promise.allSettled([
    repo.create({ name: 'kept', price: 1 }),
    repo.create({ name: 'nul \u0000 inside', price: 2 })
  ])
  t.equal(results[0]!.status, 'fulfilled')
  t.match((results[1] as PromiseRejectedResult).reason, { cause: { code: '22021' } }, 'the NUL byte, as text refuses it')
  const alone = await repo.create({ name: 'nul \u0000 alone', price: 3 }).catch((err: unknown) => err)
  t.match(alone, { cause: { code: '22021' } }, 'a batch of one is retried too')
})

t.test('a table whose keys are not its column names is inserted through the builder', async (t) => {
  await client.db.execute(sql`create table renamed_columns (id integer generated always as identity primary key, display_name text not null)`)
  const renamed = createRepository(client.db, pgTable('renamed_columns', {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    displayName: text('display_name').notNull()
  }))
  const made = await Promise.all(['one', 'two'].map((displayName) => renamed.create({ displayName })))
  t.same(made.map(unversioned), [{ id: 1, displayName: 'one' }, { id: 2, displayName: 'two' }])
})

t.test('a refused row in a batch fails alone; the others are stored', async (t) => {
  const before = await repo.count()
  const results = await Promise.allSettled([
    repo.create({ name: 'kept 1', price: 1 }),
    repo.create({ name: 'refused', price: -1 }),
    repo.create({ name: 'kept 2', price: 2 }),
    repo.create({ name: 'x'.repeat(129), price: 3 })
  ])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected'])
  t.match((results[1] as PromiseRejectedResult).reason, { cause: { code: '23514' } }, 'the price check')
  t.equal(await repo.count(), before + 2, 'exactly the two good rows')
  const kept = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<{ name: string }>).value.name)
  t.same(kept, ['kept 1', 'kept 2'])
})

/** A table with an object column, and values of it that JSON.stringify cannot write. */
async function notesRepository (table: string) {
  await client.db.execute(sql.raw(`create table ${table} (id integer generated always as identity primary key, name text not null, data jsonb)`))
  return createRepository(client.db, pgTable(table, { id: integer('id').primaryKey().generatedAlwaysAsIdentity(), name: text('name').notNull(), data: jsonb('data') }), { batchUpdates: true })
}
const cyclic = () => { const value: Record<string, unknown> = {}; value.self = value; return value }
const tooDeep = () => { let value = {}; for (let i = 0; i < 200_000; i++) value = { a: value }; return value }

t.test('a row JSON cannot write (a cycle, too deep) fails alone; the rows batched with it are stored', async (t) => {
  const notes = await notesRepository('notes_serialized')
  const results = await Promise.allSettled([
    notes.create({ name: 'kept 1', data: { n: 1 } }),
    notes.create({ name: 'cycle', data: cyclic() }),
    notes.create({ name: 'deep', data: tooDeep() }),
    notes.create({ name: 'kept 2', data: { n: 2 } })
  ])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled'])
  t.match((results[1] as PromiseRejectedResult).reason, TypeError, 'the cycle, its own error')
  await t.rejects(notes.create({ name: 'alone', data: cyclic() }), TypeError, 'a batch with nothing to send')
  t.same((await notes.list({ offset: 0, limit: 10 })).map((row) => row.name), ['kept 1', 'kept 2'])
})

t.test('an error outside SQL in a batch of mixed shapes gives each row its own answer', async (t) => {
  const notes = await notesRepository('notes_mixed')
  const results = await Promise.allSettled([
    notes.create({ name: 'no data' }),
    notes.create({ name: 'cycle', data: cyclic() }),
    notes.create({ name: 'with data', data: [1] })
  ])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled'])
  t.same((await notes.list({ offset: 0, limit: 10 })).map((row) => row.name), ['no data', 'with data'])
})

t.test('an update JSON cannot write fails alone; the updates batched with it are written', async (t) => {
  const notes = await notesRepository('notes_updated')
  const made = await Promise.all(['a', 'b', 'c'].map((name) => notes.create({ name })))
  const results = await Promise.allSettled([
    notes.update(made[0]!.id, { data: { n: 1 } }),
    notes.update(made[1]!.id, { data: tooDeep() }),
    notes.update(made[2]!.id, { name: 'c2', data: { n: 3 } })
  ])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled'])
  t.same((await notes.list({ offset: 0, limit: 10 })).map((row) => [row.name, row.data]), [['a', { n: 1 }], ['b', null], ['c2', { n: 3 }]])
  await t.rejects(notes.update(made[0]!.id, { data: cyclic() }), TypeError, 'a batch with nothing to send')
})

t.test('a database too busy for a batch is every row\'s answer, asked once, not row by row', async (t) => {
  const notes = await notesRepository('notes_busy')
  const made = await notes.create({ name: 'a' })
  let refused = 0
  client.limitWaiting!({ maxWaiting: -100, refuse: () => { refused++; return serverBusy('database_queue', 1) } })
  t.teardown(() => client.limitWaiting!(undefined))
  const busy = (result: PromiseSettledResult<unknown>) => serverBusyIn((result as PromiseRejectedResult).reason)?.reason
  const creates = await Promise.allSettled([notes.create({ name: 'b' }), notes.create({ name: 'c' })])
  t.same(creates.map(busy), ['database_queue', 'database_queue'])
  const updates = await Promise.allSettled([notes.update(made.id, { name: 'a2' }), notes.update(made.id, { name: 'a3' })])
  t.same(updates.map(busy), ['database_queue', 'database_queue'])
  t.equal(refused, 2, 'one refused statement per batch')
})

t.test('a value the database refuses is named by its field when one value alone raises it', async (t) => {
  const notes = await notesRepository('notes_refused')
  await client.db.execute(sql.raw('alter table notes_refused alter column name type varchar(4)'))
  const [long, kept] = await Promise.allSettled([notes.create({ name: 'too long' }), notes.create({ name: 'ok' })])
  t.match((long as PromiseRejectedResult).reason, { field: 'name', cause: { code: '22001' } })
  t.equal(kept.status, 'fulfilled')
  t.ok(isRefusedValue((long as PromiseRejectedResult).reason))
  t.equal(refusedField((long as PromiseRejectedResult).reason), 'name')
  // A trigger's error is no one value's: the error stays unnamed.
  await client.db.execute(sql.raw('create function refuse_all() returns trigger language plpgsql as $$ begin raise exception \'no\' using errcode = \'22023\'; end $$'))
  await client.db.execute(sql.raw('create trigger refuse_all before insert on notes_refused for each row execute function refuse_all()'))
  const refused = await notes.create({ name: 'ok' }).catch((err: unknown) => err)
  t.ok(isRefusedValue(refused))
  t.equal(refusedField(refused), undefined)
})

t.test('a sequence at its end is the server\'s limit, not a value the client sent', async (t) => {
  await client.db.execute(sql.raw('create sequence short_sequence maxvalue 2'))
  for (let i = 0; i < 2; i++) await client.db.execute(sql.raw('select nextval(\'short_sequence\')'))
  const error = await client.db.execute(sql.raw('select nextval(\'short_sequence\')')).catch((err: unknown) => err)
  t.match(error, { cause: { code: '2200H' } })
  t.notOk(isRefusedValue(error))
})

t.test('rows given their own ids are inserted alone, each returned to its caller', async (t) => {
  await client.db.execute(sql`create table explicit_ids (id integer primary key, name text not null)`)
  const explicit = createRepository(client.db, pgTable('explicit_ids', { id: integer('id').primaryKey(), name: text('name').notNull() }))
  const made = await Promise.all([[5, 'five'], [3, 'three'], [4, 'four']].map(([id, name]) => explicit.create({ id: id as number, name: name as string })))
  t.same(made.map(unversioned), [{ id: 5, name: 'five' }, { id: 3, name: 'three' }, { id: 4, name: 'four' }])
})

t.test('a get sees a write acknowledged before it was asked', async (t) => {
  const created = await repo.create({ name: 'fresh', price: 2 })
  const [before] = await Promise.all([repo.get(created.id), repo.get(1)])
  t.equal(before?.name, 'fresh')
  await repo.update(created.id, { name: 'renamed' })
  t.equal((await repo.get(created.id))?.name, 'renamed', 'no stale copy is kept')
  await repo.delete(created.id)
  t.equal(await repo.get(created.id), null)
})

t.test('a failed batch rejects every lookup in it, and the next batch works', async (t) => {
  const broken = createRepository(client.db, brokenTable)
  const results = await Promise.allSettled([broken.get(1), broken.get(2)])
  t.same(results.map((r) => r.status), ['rejected', 'rejected'])
  t.match((results[0] as PromiseRejectedResult).reason, { cause: { code: '42P01' } }, 'the table does not exist')
  t.not(await repo.get(1), undefined)
})

t.test('update writes only the given fields', async (t) => {
  const created = await repo.create({ name: 'chair', description: 'oak', price: 40, in_stock: false })
  const renamed = await repo.update(created.id, { name: 'stool', description: undefined })
  t.same(unversioned(renamed), { ...unversioned(created), name: 'stool' }, 'description, price and in_stock untouched')
  const cleared = await repo.update(created.id, { description: null })
  t.equal(cleared?.description, null, 'null sets a nullable field to null')
  t.equal(cleared?.name, 'stool')
})

t.test('updates of any set of columns, in any key order, with nulls and values their column encodes', async (t) => {
  await client.db.execute(sql`create table events (id integer generated always as identity primary key, title text not null, happened_at timestamptz)`)
  const events = pgTable('events', {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    title: text('title').notNull(),
    happened_at: timestamp('happened_at', { withTimezone: true, mode: 'date' })
  })
  const eventRepo = createRepository(client.db, events)
  const first = new Date('2026-01-02T03:04:05.678Z')
  const second = new Date('2026-05-06T07:08:09.123Z')
  const created = await eventRepo.create({ title: 'a', happened_at: first })
  t.same(unversioned(await eventRepo.update(created.id, { happened_at: null, title: 'b' })), { id: created.id, title: 'b', happened_at: null },
    'a timestamp set to null (its encoder never sees the null)')
  t.same(unversioned(await eventRepo.update(created.id, { title: 'c', happened_at: second })), { id: created.id, title: 'c', happened_at: second },
    'the same columns with a Date: encoded by the column')
  t.same(unversioned(await eventRepo.update(created.id, { happened_at: first, title: 'd' })), { id: created.id, title: 'd', happened_at: first },
    'the same columns in the other order')
  t.same(unversioned(await eventRepo.update(created.id, { nope: 1 } as never)), { id: created.id, title: 'd', happened_at: first },
    'a key that is no column writes nothing')
  t.same(unversioned(await eventRepo.get(created.id)), { id: created.id, title: 'd', happened_at: first })

  const item = await repo.create({ name: 'vase', price: 3 })
  await t.rejects(repo.update(item.id, { price: -1 }), { cause: { code: '23514' } }, 'the check constraint refuses it')
  t.same(unversioned(await repo.update(item.id, { price: 4 })), { ...unversioned(item), price: 4 }, 'and the same statement then works')
})

t.test('an empty update returns the row unchanged, a missing row null', async (t) => {
  const created = await repo.create({ name: 'desk', price: 100 })
  t.same(await repo.update(created.id, {}), created)
  t.equal(await repo.update(2147483647, { name: 'x' }), null)
  t.equal(await repo.update(2147483647, {}), null)
})

t.test('delete removes once, then reports nothing matched', async (t) => {
  const created = await repo.create({ name: 'bin', price: 1 })
  t.equal(await repo.delete(created.id), true)
  t.equal(await repo.get(created.id), null)
  t.equal(await repo.delete(created.id), false)
})

t.test('list pages by id ascending and count counts every row', async (t) => {
  const fresh = await freshDatabase(t)
  const pageRepo = createRepository(fresh.db, items)
  for (let i = 1; i <= 7; i++) await pageRepo.create({ name: `item ${i}`, price: i })
  t.equal(await pageRepo.count(), 7)
  const seen: number[] = []
  for (let offset = 0; offset < 10; offset += 3) {
    const page = await pageRepo.list({ offset, limit: 3 })
    t.ok(page.length <= 3)
    seen.push(...page.map((row) => row.id))
  }
  t.same(seen, [1, 2, 3, 4, 5, 6, 7], 'every row exactly once, in id order')
  t.same(await pageRepo.list({ offset: 7, limit: 3 }), [])
})

t.test('every operation runs inside a transaction, and a rollback undoes it', async (t) => {
  const before = await repo.count()
  await t.rejects(client.db.transaction(async (tx) => {
    const created = await repo.create({ name: 'ghost', price: 1 }, { tx })
    t.same(await repo.get(created.id, { tx }), created, 'visible inside the transaction')
    t.equal(await repo.count({ tx }), before + 1)
    t.equal((await repo.list({ offset: 0, limit: 1000 }, { tx })).length, before + 1)
    await repo.update(created.id, { name: 'ghost 2' }, { tx })
    await repo.delete(created.id, { tx })
    throw new Error('roll back')
  }), /roll back/)
  t.equal(await repo.count(), before, 'nothing was written')
})

t.test('the database refuses what the schema forbids', async (t) => {
  await t.rejects(repo.create({ name: 'neg', price: -1 }), 'price check constraint')
  await t.rejects(repo.create({ name: 'x'.repeat(129), price: 1 }), 'name length')
})

t.test('update shapes past the bound of prepared ones run unprepared, and each stores what it sets', async (t) => {
  const db = await oneConnection(t, client)
  await db.execute(sql`create table many_shapes (id int generated always as identity primary key, a text, b text, c text, d text)`)
  // A key that is not its column's name: every update goes alone, one statement per shape.
  const shapes = createRepository(db, pgTable('many_shapes', {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(), first: text('a'), b: text('b'), c: text('c'), d: text('d')
  }))
  const row = await shapes.create({ first: 'x' })
  const keys = ['first', 'b', 'c', 'd'] as const
  const sent: Array<Record<string, string | null>> = []
  const stored: unknown[] = []
  // Each key left out, set or cleared: 80 shapes.
  for (let code = 1; code < 81; code++) {
    const change = Object.fromEntries(keys.map((key, i) => [key, [undefined, `v${code}`, null][Math.floor(code / 3 ** i) % 3]])
      .filter(([, value]) => value !== undefined))
    sent.push(change)
    const updated = await shapes.update(row.id, change)
    stored.push(Object.fromEntries(Object.keys(change).map((key) => [key, (updated as Record<string, unknown> | null)?.[key]])))
  }
  t.same(stored, sent, 'every update answered with what it set')
  if (client.driver === 'pglite') return
  const [kept] = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from pg_prepared_statements where statement like 'update "many_shapes"%'`))
  if (TEST_POOL_MODE === 'transaction') t.equal(kept?.n, 0, 'through a transaction pooler, none prepared')
  else t.equal(kept?.n, 64, 'the first 64 shapes prepared on the connection, the others not')
})

t.test('concurrent updates share one statement; each sets its own columns and gets its own row, or null', async (t) => {
  const made = await Promise.all(['u1', 'u2', 'u3', 'u4'].map((name, i) => repo.create({ name, price: i, description: 'kept' })))
  const counted = countingDatabase(client)
  const countedRepo = createRepository(counted.db, items, { batchUpdates: true })
  const [renamed, repriced, cleared, missing, stale] = await Promise.all([
    countedRepo.update(made[0]!.id, { name: 'u1 renamed' }),
    countedRepo.update(made[1]!.id, { price: 9.5, in_stock: false }),
    countedRepo.update(made[2]!.id, { description: null }, { ifVersions: [made[2]!.version] }),
    countedRepo.update(2147483647, { name: 'nobody' }),
    countedRepo.update(made[3]!.id, { name: 'stale' }, { ifVersions: ['1'] })
  ])
  t.equal(counted.queries(), 1, 'one statement for five updates')
  t.same([renamed?.name, renamed?.price, renamed?.description], ['u1 renamed', 0, 'kept'], 'only the name changed')
  t.same([repriced?.name, repriced?.price, repriced?.in_stock], ['u2', 9.5, false])
  t.same([cleared?.description, cleared?.name], [null, 'u3'], 'a null is written, under a matching version')
  t.not(cleared?.version, made[2]!.version, 'a new version')
  t.equal(missing, null, 'a missing row')
  t.equal(stale, null, 'a stale version writes nothing')
  t.equal((await repo.get(made[3]!.id))?.name, 'u4', 'the stale write left the row as it was')
  for (const row of [renamed, repriced, cleared]) t.same(await repo.get(row!.id), row, `${row!.name} is stored as returned`)
})

t.test('without batchUpdates, concurrent updates go one statement each, each answered with its own row', async (t) => {
  const made = await Promise.all(['s1', 's2'].map((name) => repo.create({ name, price: 1 })))
  const counted = countingDatabase(client)
  const alone = createRepository(counted.db, items)
  const answers = await Promise.all([alone.update(made[0]!.id, { price: 2 }), alone.update(made[1]!.id, { name: 's2 renamed' })])
  t.equal(counted.queries(), 2, 'one statement per update')
  t.same(answers.map((row) => [row?.name, row?.price]), [['s1', 2], ['s2 renamed', 1]])
})

t.test('concurrent updates of one row apply in order, each answered with the row after its own write', async (t) => {
  const row = await repo.create({ name: 'hot', price: 0 })
  const prices = Array.from({ length: 20 }, (_, i) => i + 1)
  const answers = await Promise.all(prices.map((price) => repo.update(row.id, price % 2 ? { price } : { price, name: `hot ${price}` })))
  t.same(answers.map((answer) => answer?.price), prices, 'each sees its own price')
  t.same(answers.map((answer) => answer?.name), prices.map((price) => `hot ${price % 2 ? price - 1 || '' : price}`.trim()), 'and the name the writes before it left')
  t.equal(new Set(answers.map((answer) => answer?.version)).size, 20, 'twenty versions')
  const stored = await repo.get(row.id)
  t.same(stored, answers.at(-1), 'the row is the last acknowledged write')
})

t.test('a refused update in a batch fails alone with its own error; the others are written', async (t) => {
  const made = await Promise.all(['r1', 'r2', 'r3'].map((name) => repo.create({ name, price: 1 })))
  const results = await Promise.allSettled([
    repo.update(made[0]!.id, { price: 2 }),
    repo.update(made[1]!.id, { price: -1 }),
    repo.update(made[2]!.id, { name: 'x'.repeat(129) })
  ])
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected'])
  t.match((results[1] as PromiseRejectedResult).reason, { cause: { code: '23514' } }, 'the price check')
  t.match((results[2] as PromiseRejectedResult).reason, { cause: { code: '22001' } }, 'the name is too long')
  t.same((await Promise.all(made.map((row) => repo.get(row.id)))).map((row) => [row?.name, row?.price]), [['r1', 2], ['r2', 1], ['r3', 1]])
})
