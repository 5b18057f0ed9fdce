import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { API_PREFIX } from '../../../app.js'
import type { Database } from '../../../db/client.js'
import resourcePlugin, { type ResourceOptions } from '../../../routes/resources/index.js'
import { build, newAccount, superuser } from '../../support/app.js'
import { rowsOf } from '../../support/database.js'
import { isEvent, listening, nextEvent, openStream, type OpenStream, type StreamBlock } from '../../support/event-stream.js'
import { FILTER_CASES, FILTER_ROWS, filterQuery } from '../../support/filter-cases.js'
import { TaskFields, createTask } from '../../support/tasks.js'

const TASKS = `${API_PREFIX}/tasks`

async function serve (t: Test, options: Partial<ResourceOptions> = {}) {
  const app = await build(t)
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, eventHeartbeatSeconds: 0.02, ...options })
  return { app, base: await listening(app) }
}

const head = async (db: Database) => rowsOf<{ id: string }>(await db.execute(sql`select coalesce(max(id), 0)::text as id from resource_events`))[0]!.id

/** The events a stream sends before it tells (by an event's id or an id line alone) that it has passed `through`. */
async function eventsThrough (stream: OpenStream, through: string): Promise<StreamBlock[]> {
  const received: StreamBlock[] = []
  for (;;) {
    const block = await stream.next((each) => each.id !== undefined, `the id ${through}`)
    if (isEvent(block)) received.push(block)
    if (BigInt(block.id!) >= BigInt(through)) return received
  }
}

t.test('a user with no rows resumes past 100,000 events of other owners: none sent, then live', async (t) => {
  const { app, base } = await serve(t, { owner: true })
  const ada = await newAccount(app)
  const { db } = app.plinthDb
  await db.execute(sql`
    insert into resource_events (table_name, op, row_id, owner_id, "row")
    select 'tasks', 'created', g, ${ada.user.id} + 1 + g % 1000, '{"id":' || g || ',"title":"theirs"}' from generate_series(1, 100000) g`)
  const stream = await openStream(t, `${base}${TASKS}/events`, { ...ada.session.headers, 'last-event-id': '0' })
  t.equal(stream.status, 200)
  const passed = await eventsThrough(stream, await head(db))
  t.same(passed, [], 'nothing of theirs')
  const mine = await createTask(app, { title: 'mine' }, ada.session.headers)
  t.equal(JSON.parse((await nextEvent(stream)).data!).id, mine.id, 'then her own, live')
})

t.test('a resume sends the subscriber\'s own events the filters match, past pages of 500, once each, in order', async (t) => {
  const { app, base } = await serve(t, { owner: true })
  const ada = await newAccount(app)
  const bob = await newAccount(app)
  const root = await superuser(app, 'root-resume@example.com')
  const { db } = app.plinthDb
  // One statement, as many events: Ada's and Bob's rows alternate, with priorities 1 to 5.
  await db.execute(sql`
    insert into tasks (title, priority, owner_id)
    select 't' || g, 1 + g % 5, case when g % 2 = 0 then ${ada.user.id}::int else ${bob.user.id}::int end from generate_series(1, 2400) g`)
  const logged = rowsOf<{ id: string, owner_id: number, priority: number }>(await db.execute(sql`
    select id::text as id, owner_id, ("row"::jsonb ->> 'priority')::int as priority from resource_events where table_name = 'tasks' order by resource_events.id`))
  const through = logged.at(-1)!.id

  const adas = await openStream(t, `${base}${TASKS}/events?priority[gte]=4`, { ...ada.session.headers, 'last-event-id': '0' })
  const expected = logged.filter((event) => event.owner_id === ada.user.id && event.priority >= 4).map((event) => event.id)
  t.equal(expected.length, 480)
  const got = await eventsThrough(adas, through)
  t.same(got.map((event) => event.id), expected, 'her events of priority 4 and 5, from 1,200 of hers among 2,400')
  t.ok(got.every((event) => JSON.parse(event.data!).owner_id === ada.user.id))

  const all = await openStream(t, `${base}${TASKS}/events?lastEventId=${logged[99]!.id}`, root.session.headers)
  t.same((await eventsThrough(all, through)).map((event) => event.id), logged.slice(100).map((event) => event.id), 'a superuser resumes through every owner\'s')

  const after = await createTask(app, { title: 'live', priority: 5 }, ada.session.headers)
  t.equal(JSON.parse((await nextEvent(adas)).data!).id, after.id, 'then live')
})

t.test('a resume\'s filters agree with the list\'s', async (t) => {
  const { app, base } = await serve(t)
  for (const row of FILTER_ROWS) await createTask(app, row)
  const through = await head(app.plinthDb.db)
  for (const filters of FILTER_CASES) {
    const query = filterQuery(filters)
    const listed = (await app.inject({ method: 'GET', url: `${TASKS}/?limit=100&${query}` })).json() as Array<{ id: number }>
    const stream = await openStream(t, `${base}${TASKS}/events?lastEventId=0&${query}`)
    const resumed = await eventsThrough(stream, through)
    stream.close()
    t.same(resumed.map((event) => JSON.parse(event.data!).id), listed.map((row) => row.id), decodeURIComponent(query.toString()))
  }
})

t.test('a Last-Event-ID beyond the log\'s head gets a reset to the head, then live', async (t) => {
  const { app, base } = await serve(t)
  await createTask(app, { title: 'first' })
  for (const headers of [{ 'last-event-id': '9223372036854775807' }, {}] as Array<Record<string, string>>) {
    const now = await head(app.plinthDb.db)
    const url = `${base}${TASKS}/events${'last-event-id' in headers ? '' : `?lastEventId=${BigInt(now) + 1n}`}`
    const stream = await openStream(t, url, headers)
    const reset = await nextEvent(stream)
    t.same({ event: reset.event, id: reset.id, data: reset.data }, { event: 'reset', id: now, data: '{}' }, 'a reset whose id is the head')
    const made = await createTask(app, { title: 'next' })
    t.equal(JSON.parse((await nextEvent(stream)).data!).id, made.id, 'then live')
    stream.close()
  }
  const atHead = await openStream(t, `${base}${TASKS}/events`, { 'last-event-id': await head(app.plinthDb.db) })
  await createTask(app, { title: 'last' })
  t.equal((await nextEvent(atHead)).event, 'created', 'the head itself is no reset')
})
