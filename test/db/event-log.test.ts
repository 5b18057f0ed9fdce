import { sql } from 'drizzle-orm'
import t from 'tap'
import type { Database } from '../../db/client.js'
import { eventPageQuery, resumeBounds, tableEventPage, type EventScope } from '../../db/event-log.js'
import { freshDatabase, rowsOf } from '../support/database.js'

const OTHERS = 100_000
const ME = 5000

/** `count` events of table `notes`, one statement: owners 1 to 1000 unless `owner` is given, row {"id":n,"rank":n % 10}. */
async function seed (db: Database, count: number, owner?: number) {
  await db.execute(sql`
    insert into resource_events (table_name, op, row_id, owner_id, "row")
    select 'notes', 'created', g, coalesce(${owner ?? null}::int, 1 + g % 1000), '{"id":' || g || ',"rank":' || g % 10 || ',"tags":["t' || g % 3 || '"]}'
    from generate_series(1, ${count}) g`)
}

interface PlanNode { 'Relation Name'?: string, 'Actual Rows': number, 'Actual Loops': number, 'Rows Removed by Filter'?: number, Plans?: PlanNode[] }

/** Rows of resource_events the statement read, from its plan: those passed on and those a filter dropped. */
async function rowsRead (db: Database, query: ReturnType<typeof eventPageQuery>): Promise<number> {
  const [row] = rowsOf<{ 'QUERY PLAN': unknown }>(await db.execute(sql`explain (analyze, format json) ${query}`))
  const plan = row!['QUERY PLAN']
  const [{ Plan: root }] = (typeof plan === 'string' ? JSON.parse(plan) : plan) as [{ Plan: PlanNode }]
  const walk = (node: PlanNode): number => (node['Relation Name'] === 'resource_events' ? node['Actual Rows'] * node['Actual Loops'] + (node['Rows Removed by Filter'] ?? 0) : 0) +
    (node.Plans ?? []).reduce((sum, child) => sum + walk(child), 0)
  return walk(root)
}

t.test('a resume reads only the subscriber\'s own events, however many other owners logged', async (t) => {
  const { db } = await freshDatabase(t)
  await seed(db, OTHERS)
  await seed(db, 3, ME)
  await db.execute(sql`analyze resource_events`)
  const mine: EventScope = { ownerId: ME }
  t.equal(await rowsRead(db, eventPageQuery('notes', '0', 500, undefined, mine)), 3, `3 rows read of ${OTHERS + 3}`)
  const page = await tableEventPage(db, 'notes', '0', 500, undefined, mine)
  t.same(page.events.map((event) => event.ownerId), [ME, ME, ME], 'each of them the subscriber\'s')
  t.equal(page.full, false)
  const filtered = { ...mine, filters: [{ column: 'rank', op: 'gte' as const, value: 100 }], kinds: { rank: 'integer' as const } }
  t.equal(await rowsRead(db, eventPageQuery('notes', '0', 500, undefined, filtered)), 3, 'filters too read only the subscriber\'s events')
  const none = await tableEventPage(db, 'notes', '0', 500, undefined, filtered)
  t.same(none.events, [], 'none matches')
  t.equal(BigInt(none.readThrough), BigInt(OTHERS + 3), 'yet the page moves past them')
  t.ok(await rowsRead(db, eventPageQuery('notes', '0', 500)) <= 500, 'a superuser\'s page reads a page')
})

t.test('a page reads at most its limit of events, and moves past those the filters leave out', async (t) => {
  const { db } = await freshDatabase(t)
  await seed(db, 1200, ME)
  const scope: EventScope = { ownerId: ME, filters: [{ column: 'rank', op: 'eq', value: 7 }], kinds: { rank: 'integer' } }
  const pages = []
  let after = '0'
  for (let full = true; full;) {
    t.ok(await rowsRead(db, eventPageQuery('notes', after, 500, undefined, scope)) <= 500, `the page after ${after} reads at most 500`)
    const page = await tableEventPage(db, 'notes', after, 500, undefined, scope)
    pages.push(page)
    after = page.readThrough
    full = page.full
  }
  t.same(pages.map((page) => page.readThrough), ['500', '1000', '1200'], 'three pages')
  const ids = pages.flatMap((page) => page.events.map((event) => Number(event.id)))
  t.equal(ids.length, 120)
  t.ok(ids.every((id) => id % 10 === 7), 'only the matching events')
  const tagged = await tableEventPage(db, 'notes', '0', 2000, '30', { filters: [{ column: 'tags', op: 'contains', value: 't1' }], kinds: { tags: 'text[]' } })
  t.same(tagged.events.map((event) => Number(event.id)), [1, 4, 7, 10, 13, 16, 19, 22, 25, 28], 'an array\'s contains, through an id')
  t.equal(tagged.readThrough, '30')
})

t.test('resumeBounds: the purge horizon, and the highest id ever taken', async (t) => {
  const { db } = await freshDatabase(t)
  t.same(await resumeBounds(db, 'notes'), { purged: '0', issued: '0' }, 'a new log')
  await seed(db, 5, ME)
  await db.execute(sql`delete from resource_events`)
  t.same(await resumeBounds(db, 'notes'), { purged: '0', issued: '5' }, 'ids deleted stay issued')
})
