import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { type Database, type DatabaseClient } from '../../db/client.js'
import { isEventId, createChangeFeed, type ChangeFeedOptions } from '../../db/resource-events.js'
import { eventFunctionName, syncEventTrigger, type EventSource } from '../../db/event-triggers.js'
import { resourceJson } from '../../db/resource-json.js'
import { buildResourceTable } from '../../db/resource-table.js'
import { prepareResourceTable } from '../../db/resources.js'
import { users } from '../../db/schema.js'
import { readFields } from '../../schemas/fields.js'
import { movableClock } from '../support/app.js'
import { collector } from '../support/change-collector.js'
import { TEST_DATABASE_URL, freshDatabase, freshPostgresUrl, rowsOf, connectTo } from '../support/database.js'

const fields = readFields({
  type: 'object',
  required: ['title'],
  properties: {
    title: { type: 'string' },
    rank: { type: 'integer', default: 0 },
    secret: { type: 'string', writeOnly: true }
  }
})

const HOUR = 3_600_000

/** A table with a change trigger, and its Drizzle table. */
async function loggedTable (db: Database, table: string, { owner = false } = {}) {
  const source: EventSource = { table, fields, owner }
  await prepareResourceTable(db, source)
  await syncEventTrigger(db, source, true)
  return buildResourceTable(table, fields, { owner })
}

async function listJson (db: Database, table: string, owner = false): Promise<Map<number, string>> {
  const drizzleTable = buildResourceTable(table, fields, { owner })
  const rows = await db.select({ id: drizzleTable.id, json: resourceJson(fields, { owner }) }).from(drizzleTable)
  return new Map(rows.map((row) => [row.id, row.json]))
}

const loggedRows = async (db: Database) => rowsOf<{ id: string, table_name: string, op: string, row_id: number, owner_id: number | null, row: string }>(
  await db.execute(sql`select id::text as id, table_name, op, row_id, owner_id, "row" from resource_events order by resource_events.id`))

/** What a resume is told, without the paging. */
const outcome = ({ events, reset }: { events: unknown[], reset: boolean }) => ({ events, reset })

function feedOf (t: Test, client: DatabaseClient, options: Partial<ChangeFeedOptions> = {}) {
  const errors: unknown[] = []
  const feed = createChangeFeed(client, {
    clock: () => new Date(), pollIntervalMs: 60_000, batch: 100, retentionMs: 24 * HOUR, maxEvents: 1_000_000, onError: (err) => errors.push(err), ...options
  })
  t.teardown(() => feed.close())
  return { feed, errors }
}

t.test('every insert, update and delete is logged with the row as the list shows it, writeOnly fields left out', async (t) => {
  const { db } = await freshDatabase(t)
  const notes = await loggedTable(db, 'owned_notes', { owner: true })
  const [user] = await db.insert(users).values({ email: 'owner@example.com', hashed_password: 'x' }).returning()
  const created = await db.insert(notes).values([1, 2, 3].map((n) => ({ title: `note ${n}`, secret: 'hidden', owner_id: user!.id }) as never)).returning({ id: notes.id })
  const afterCreate = await listJson(db, 'owned_notes', true)
  await db.update(notes).set({ rank: 7 } as never).where(sql`id = ${created[1]!.id}`)
  const afterUpdate = await listJson(db, 'owned_notes', true)
  await db.delete(notes).where(sql`id = ${created[0]!.id}`)

  const logged = await loggedRows(db)
  t.same(logged.map(({ op, row_id: rowId, owner_id: ownerId, table_name: table }) => ({ op, rowId, ownerId, table })), [
    ...created.map(({ id }) => ({ op: 'created', rowId: id, ownerId: user!.id, table: 'owned_notes' })),
    { op: 'updated', rowId: created[1]!.id, ownerId: user!.id, table: 'owned_notes' },
    { op: 'deleted', rowId: created[0]!.id, ownerId: user!.id, table: 'owned_notes' }
  ], 'one event per row, in the order of the rows, with their owner')
  t.same(logged.slice(0, 3).map((event) => event.row), created.map(({ id }) => afterCreate.get(id)), 'created: the row as the list shows it then')
  t.equal(logged[3]!.row, afterUpdate.get(created[1]!.id), 'updated: the new row')
  t.equal(logged[4]!.row, afterUpdate.get(created[0]!.id), 'deleted: the row as it was')
  t.notOk(logged.some((event) => event.row.includes('hidden') || event.row.includes('secret')), 'no writeOnly field')
  t.same(logged.map((event) => BigInt(event.id)), logged.map((_, i) => BigInt(logged[0]!.id) + BigInt(i)), 'ids in order')

  await db.delete(users)
  t.same((await loggedRows(db)).slice(5).map(({ op, row_id: rowId }) => ({ op, rowId })), created.slice(1).map(({ id }) => ({ op: 'deleted', rowId: id })),
    'deleting the owner logs the deletes its cascade made, and the log keeps them')
})

t.test('a bulk insert of 500 rows is 500 events in row order from one statement', async (t) => {
  const { db } = await freshDatabase(t)
  const notes = await loggedTable(db, 'bulk_notes')
  const created = await db.insert(notes).values(Array.from({ length: 500 }, (_, i) => ({ title: `row ${i}` }) as never)).returning({ id: notes.id })
  const logged = await loggedRows(db)
  t.equal(logged.length, 500)
  t.same(logged.map((event) => event.row_id), created.map((row) => row.id))
  const updated = await db.update(notes).set({ rank: 1 } as never).where(sql`id > 490`).returning({ id: notes.id })
  t.equal((await loggedRows(db)).filter((event) => event.op === 'updated').length, updated.length, 'a statement updating rows logs each')
  await db.update(notes).set({ rank: 2 } as never).where(sql`id < 0`)
  t.equal((await loggedRows(db)).length, 500 + updated.length, 'one touching no row logs nothing')
})

t.test('the trigger follows the fields, is left alone when current, and goes when events are switched off', async (t) => {
  const { db } = await freshDatabase(t)
  const triggers = async () => rowsOf<{ name: string }>(await db.execute(sql`
    select tgname as name from pg_trigger where tgrelid = 'grown_notes'::regclass and not tgisinternal order by 1`)).map((row) => row.name)
  const body = async () => rowsOf<{ body: string | null }>(await db.execute(sql`select prosrc as body from pg_proc where proname = ${eventFunctionName('grown_notes')}`))[0]?.body
  const notes = await loggedTable(db, 'grown_notes')
  t.same(await triggers(), ['plinth_events_delete', 'plinth_events_insert', 'plinth_events_update'])
  const before = await body()
  const oid = async () => rowsOf<{ oid: number }>(await db.execute(sql`select oid::int from pg_trigger where tgname = 'plinth_events_insert' and tgrelid = 'grown_notes'::regclass`))[0]?.oid
  const triggerOid = await oid()
  await syncEventTrigger(db, { table: 'grown_notes', fields }, true)
  t.equal(await oid(), triggerOid, 'a boot with the same fields changes nothing')

  const grown = readFields({ type: 'object', required: ['title'], properties: { title: { type: 'string' }, rank: { type: 'integer', default: 0 }, secret: { type: 'string', writeOnly: true }, due: { type: 'string', format: 'date', default: '2026-01-01' } } })
  await prepareResourceTable(db, { table: 'grown_notes', fields: grown })
  await syncEventTrigger(db, { table: 'grown_notes', fields: grown }, true)
  t.not(await body(), before, 'a new field remakes the function')
  await db.insert(notes).values({ title: 'a' } as never)
  t.match(JSON.parse((await loggedRows(db))[0]!.row), { title: 'a', due: '2026-01-01' }, 'and its rows carry it')

  await syncEventTrigger(db, { table: 'grown_notes', fields: grown }, false)
  t.same(await triggers(), [], 'off: the triggers go')
  t.equal(await body(), undefined, 'and the function')
  await db.insert(notes).values({ title: 'b' } as never)
  t.equal((await loggedRows(db)).length, 1, 'writes are no longer logged')
  await syncEventTrigger(db, { table: 'grown_notes', fields: grown }, false)
  await syncEventTrigger(db, { table: 'no_such_table', fields }, true)
  t.pass('off twice, and a table that does not exist, are no-ops')
})

t.test('the function of a table whose name is too long for PostgreSQL gets a hashed name of its own', async (t) => {
  const long = `t${'x'.repeat(62)}`
  const other = `t${'x'.repeat(61)}y`
  t.ok(eventFunctionName(long).length <= 63)
  t.not(eventFunctionName(long), eventFunctionName(other))
  t.equal(eventFunctionName('notes'), 'plinth_events_notes')
})

t.test('the feed hands each committed event to the subscribers of its table, in id order, once', async (t) => {
  const client = await freshDatabase(t)
  const { db } = client
  const notes = await loggedTable(db, 'feed_notes')
  const others = await loggedTable(db, 'feed_others')
  await db.insert(notes).values({ title: 'before' } as never)
  const { feed, errors } = feedOf(t, client)
  t.equal(feed.position(), '0', 'nothing delivered before the pump starts')
  const mine = collector()
  const second = collector()
  const unsubscribe = feed.subscribe('feed_notes', mine.listener)
  feed.subscribe('feed_notes', second.listener)
  await feed.ready()
  const head = feed.position()
  t.equal(head, (await loggedRows(db)).at(-1)!.id, 'the pump starts at the head of the log: what was before is history')

  const [row] = await db.insert(notes).values({ title: 'live' } as never).returning({ id: notes.id })
  await db.insert(others).values({ title: 'elsewhere' } as never)
  await db.update(notes).set({ title: 'changed' } as never).where(sql`id = ${row!.id}`)
  await mine.until(2)
  await feed.pump()
  const list = await listJson(db, 'feed_notes')
  t.same(mine.events.map(({ op, rowId, table, ownerId }) => ({ op, rowId, table, ownerId })), [
    { op: 'created', rowId: row!.id, table: 'feed_notes', ownerId: null },
    { op: 'updated', rowId: row!.id, table: 'feed_notes', ownerId: null }
  ], 'notified: only its table, in order, each once')
  t.equal(mine.events[1]!.row, list.get(row!.id), 'the row as the list shows it')
  t.ok(mine.events.every((event) => isEventId(event.id) && BigInt(event.id) > BigInt(head)))
  t.same(second.events, mine.events, 'every subscriber gets them')
  t.equal(feed.position(), String(BigInt(head) + 3n), 'position: the last id delivered, another table\'s included')

  unsubscribe()
  await db.delete(notes)
  await second.until(4)
  await feed.pump()
  t.equal(mine.events.length, 2, 'an unsubscribed listener hears no more')
  t.equal(second.events.length, 4, 'the others still do')
  t.same(errors, [])
})

t.test('a subscriber that throws is reported and stops nobody else', async (t) => {
  const client = await freshDatabase(t)
  const notes = await loggedTable(client.db, 'throwing_notes')
  const { feed, errors } = feedOf(t, client)
  const after = collector()
  feed.subscribe('throwing_notes', () => { throw new Error('listener bug') })
  feed.subscribe('throwing_notes', after.listener)
  await feed.ready()
  await client.db.insert(notes).values([{ title: 'a' }, { title: 'b' }] as never)
  await feed.pump()
  t.equal(after.events.length, 2)
  t.match(errors, [{ message: 'listener bug' }, { message: 'listener bug' }])
})

t.test('a rolled-back write leaves a gap in the ids that does not stall the feed', async (t) => {
  const client = await freshDatabase(t)
  const { db } = client
  const notes = await loggedTable(db, 'gap_notes')
  // Transactions of the whole cluster (other databases' too) are waited for: the poll reads again once they end.
  const { feed, errors } = feedOf(t, client, { pollIntervalMs: 20 })
  const seen = collector()
  feed.subscribe('gap_notes', seen.listener)
  await feed.ready()
  await t.rejects(db.transaction(async (tx) => {
    await tx.insert(notes).values({ title: 'rolled back' } as never)
    throw new Error('undo')
  }), { message: 'undo' })
  await db.insert(notes).values({ title: 'kept' } as never)
  await seen.until(1)
  t.same(seen.events.map((event) => JSON.parse(event.row).title), ['kept'])
  t.equal((await loggedRows(db)).length, 1, 'the rolled-back event is not in the log: its id is a gap')
  await db.insert(notes).values({ title: 'next' } as never)
  await seen.until(2)
  t.same(seen.events.map((event) => JSON.parse(event.row).title), ['kept', 'next'])
  t.equal(feed.position(), seen.events[1]!.id)
  t.same(errors, [])
})

t.test('since() reads the log of one table after an id, bounded, and says when the purge passed the resume point', async (t) => {
  const client = await freshDatabase(t)
  const { db } = client
  const notes = await loggedTable(db, 'since_notes')
  const others = await loggedTable(db, 'since_others')
  const moving = movableClock()
  const { feed } = feedOf(t, client, { clock: moving.clock, maxEvents: 1000 })
  await db.insert(notes).values([1, 2, 3, 4].map((n) => ({ title: `n${n}` })) as never)
  await db.insert(others).values({ title: 'other' } as never)
  const ids = (await loggedRows(db)).filter((event) => event.table_name === 'since_notes').map((event) => event.id)

  const all = await feed.since('since_notes', '0', 100)
  t.same(all.events.map((event) => event.id), ids, 'only its table, oldest first')
  t.equal(all.reset, false)
  t.same((await feed.since('since_notes', ids[1]!, 1)).events.map((event) => event.id), [ids[2]], 'after an id, at most limit')
  t.same((await feed.since('since_notes', ids[0]!, 100, ids[2])).events.map((event) => event.id), [ids[1], ids[2]], 'and through an id')
  t.same((await feed.since('since_notes', ids[3]!, 100)).events, [], 'nothing after the last')
  t.equal((await feed.since('since_notes', ids[3]!, 100)).reset, false)
  // The other table's event took the id after the last note's.
  t.same(outcome(await feed.since('since_notes', String(BigInt(ids[3]!) + 2n), 100)), { events: [], reset: true }, 'after an id never issued: reset')

  t.equal(await feed.purge(), 0, 'nothing is old yet')
  moving.advance(25 * HOUR)
  t.equal(await feed.purge(), 5, 'a day later, every event is past the window')
  t.same(outcome(await feed.since('since_notes', '0', 100)), { events: [], reset: true }, 'resuming from before the purge: reset')
  t.same(outcome(await feed.since('since_notes', ids[1]!, 100)), { events: [], reset: true }, 'from the middle of what was purged too')
  t.same(outcome(await feed.since('since_notes', ids[3]!, 100)), { events: [], reset: false }, 'from the last purged event, nothing was missed')
  t.same(outcome(await feed.since('since_others', ids[3]!, 100)), { events: [], reset: true }, 'the horizon is per table')

  await db.insert(notes).values({ title: 'fresh' } as never)
  t.match(await feed.since('since_notes', ids[3]!, 100), { events: [{ op: 'created' }], reset: false }, 'the log goes on above the purged ids')

  for (const bad of ['', '-1', '1.5', 'abc', '01', '9223372036854775808', ' 1']) {
    await t.rejects(feed.since('since_notes', bad, 10), TypeError, `after ${JSON.stringify(bad)} is refused`)
  }
})

t.test('the purge keeps at most maxEvents of the newest events', async (t) => {
  const client = await freshDatabase(t)
  const notes = await loggedTable(client.db, 'capped_notes')
  const { feed } = feedOf(t, client, { maxEvents: 3 })
  await client.db.insert(notes).values([1, 2, 3, 4, 5].map((n) => ({ title: `n${n}` })) as never)
  const ids = (await loggedRows(client.db)).map((event) => event.id)
  t.equal(await feed.purge(), 2)
  t.same((await loggedRows(client.db)).map((event) => event.id), ids.slice(2))
  t.equal((await feed.since('capped_notes', ids[0]!, 10)).reset, true, 'a resume from a purged event is told')
  t.equal((await feed.since('capped_notes', ids[1]!, 10)).reset, false, 'one from the newest purged event is not')
})

t.test('a client without LISTEN cannot start the feed, and says why', async (t) => {
  const client = await freshDatabase(t)
  const { feed, errors } = feedOf(t, { ...client, listen: undefined })
  feed.subscribe('x', () => {})
  await t.rejects(feed.ready(), { message: /cannot LISTEN/ })
  t.match(errors, [{ message: /cannot LISTEN/ }])
  await feed.close()
  await t.rejects(feed.ready(), { message: 'the change feed is closed' })
})

const postgres = { skip: !TEST_DATABASE_URL && 'needs TEST_DATABASE_URL: PGlite runs one transaction at a time, in one process' }

t.test('two transactions committing out of order are both delivered, in id order', postgres, async (t) => {
  const client = await freshDatabase(t)
  const { db } = client
  const notes = await loggedTable(db, 'order_notes')
  const { feed } = feedOf(t, client)
  const seen = collector()
  feed.subscribe('order_notes', seen.listener)
  await feed.ready()

  let commitFirst!: () => void
  let firstWrote!: () => void
  const wrote = new Promise<void>((resolve) => { firstWrote = resolve })
  const first = db.transaction(async (tx) => {
    await tx.insert(notes).values({ title: 'first id, committed last' } as never)
    firstWrote()
    await new Promise<void>((resolve) => { commitFirst = resolve })
  })
  await wrote
  await db.insert(notes).values({ title: 'second id, committed first' } as never)
  await feed.pump()
  t.same(seen.events, [], 'the later id waits for the earlier one, still in flight')
  t.equal(feed.position(), '0', 'position holds at the gap')

  commitFirst()
  await first
  await seen.until(2)
  await feed.pump()
  t.same(seen.events.map((event) => JSON.parse(event.row).title), ['first id, committed last', 'second id, committed first'])
  t.ok(BigInt(seen.events[0]!.id) < BigInt(seen.events[1]!.id), 'in id order')
  t.equal(feed.position(), seen.events[1]!.id)
})

t.test('a write through another client, as another instance would make it, reaches a subscriber here', postgres, async (t) => {
  const url = await freshPostgresUrl(t)
  const here = await connectTo(url)
  t.teardown(() => here.close())
  await here.migrate()
  const elsewhere = await connectTo(url)
  t.teardown(() => elsewhere.close())
  const notes = await loggedTable(here.db, 'shared_notes')
  const { feed } = feedOf(t, here)
  const seen = collector()
  feed.subscribe('shared_notes', seen.listener)
  await feed.ready()
  await elsewhere.db.insert(notes).values({ title: 'from elsewhere' } as never)
  // No pump() here: the notification alone brings it.
  await seen.until(1)
  t.equal(JSON.parse(seen.events[0]!.row).title, 'from elsewhere')
})

t.test('a listener whose connection was cut listens again when renewed (the feed renews at each poll)', postgres, async (t) => {
  const client = await freshDatabase(t)
  const heard: string[] = []
  let onHeard: (() => void) | undefined
  const listening = await client.listen!('cut_channel', (payload) => { heard.push(payload); onHeard?.() })
  t.teardown(() => listening.close())
  t.equal(await listening.renew(), false, 'a live listener has nothing to renew')
  await client.db.execute(sql`select pg_terminate_backend(pid) from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and query = 'listen "cut_channel"'`)
  // The cut reaches the client as its socket closes: renew until it has.
  while (!await listening.renew()) await new Promise((resolve) => setImmediate(resolve))
  const back = new Promise<void>((resolve) => { onHeard = resolve })
  await client.db.execute(sql`select pg_notify('cut_channel', 'back')`)
  await back
  t.same(heard, ['back'], 'notified again on the new connection')
})

t.test('processes booting together make the trigger once, without failing on each other', postgres, async (t) => {
  const url = await freshPostgresUrl(t)
  const clients = await Promise.all([1, 2, 3, 4].map(() => connectTo(url)))
  t.teardown(() => Promise.all(clients.map((client) => client.close())))
  await clients[0]!.migrate()
  await prepareResourceTable(clients[0]!.db, { table: 'raced_notes', fields })
  await Promise.all(clients.map((client) => syncEventTrigger(client.db, { table: 'raced_notes', fields }, true)))
  const [row] = rowsOf<{ n: number }>(await clients[0]!.db.execute(sql`select count(*)::int as n from pg_trigger where tgrelid = 'raced_notes'::regclass and not tgisinternal`))
  t.equal(row!.n, 3)
  await Promise.all(clients.map((client) => syncEventTrigger(client.db, { table: 'raced_notes', fields }, false)))
  const [after] = rowsOf<{ n: number }>(await clients[0]!.db.execute(sql`select count(*)::int as n from pg_trigger where tgrelid = 'raced_notes'::regclass and not tgisinternal`))
  t.equal(after!.n, 0, 'and drop it once')
})

t.test('a gap is not held for a transaction of another database of the cluster', postgres, async (t) => {
  const client = await freshDatabase(t)
  const notes = await loggedTable(client.db, 'cluster_notes')
  const other = await connectTo(await freshPostgresUrl(t))
  t.teardown(() => other.close())
  let release!: () => void
  let began!: () => void
  const open = new Promise<void>((resolve) => { began = resolve })
  // A write transaction elsewhere, open across the gap: it has an id, so every snapshot lists it.
  const elsewhere = other.db.transaction(async (tx) => {
    await tx.execute(sql`create table held (n int)`)
    began()
    await new Promise<void>((resolve) => { release = resolve })
  })
  await open
  const { feed } = feedOf(t, client)
  const seen = collector()
  feed.subscribe('cluster_notes', seen.listener)
  await feed.ready()
  await t.rejects(client.db.transaction(async (tx) => {
    await tx.insert(notes).values({ title: 'rolled back' } as never)
    throw new Error('undo')
  }))
  await client.db.insert(notes).values({ title: 'kept' } as never)
  await feed.pump()
  t.same(seen.events.map((event) => JSON.parse(event.row).title), ['kept'], 'delivered at the first read')
  release()
  await elsewhere
})
