import { count, gt, sql } from 'drizzle-orm'
import t from 'tap'
import { seedItems } from '../../bench/seed-items.js'
import { containsPattern, createItemRepository } from '../../db/items.js'
import { itemCounts, items } from '../../db/schema.js'
import { countingDatabase, freshDatabase } from '../support/database.js'

const client = await freshDatabase(t)
const { db } = client
const repo = createItemRepository(db)
const realCount = async () => (await db.select({ n: count() }).from(items))[0]!.n

/**
 * EXPLAIN output as one string, whichever driver answers (postgres.js: rows; PGlite: { rows }).
 * Sequential scans are off: on a test-sized table they are cheaper, and the question is only
 * whether an index can serve the query.
 */
async function plan (query: ReturnType<typeof sql>) {
  return db.transaction(async (tx) => {
    await tx.execute(sql`set local enable_seqscan = off`)
    const result = await tx.execute(sql`explain ${query}`) as unknown as Array<Record<string, string>> | { rows: Array<Record<string, string>> }
    return (Array.isArray(result) ? result : result.rows).map((row) => row['QUERY PLAN']).join('\n')
  })
}

t.test('containsPattern escapes the LIKE wildcards and the escape character', async (t) => {
  t.equal(containsPattern('lamp'), '%lamp%')
  t.equal(containsPattern('100%'), '%100\\%%')
  t.equal(containsPattern('a_b'), '%a\\_b%')
  t.equal(containsPattern('a\\b'), '%a\\\\b%')
  t.equal(containsPattern('%_\\'), '%\\%\\_\\\\%')
})

t.test('the migrations create 16 counter shards', async (t) => {
  t.equal((await db.select({ n: count() }).from(itemCounts))[0]!.n, 16)
})

t.test('count comes from the counter and equals count(*) through every kind of change', async (t) => {
  t.equal(await repo.count(), 0)
  const one = await repo.create({ name: 'one', price: 1 })
  t.equal(await repo.count(), 1)
  await db.insert(items).values(Array.from({ length: 30 }, (_, i) => ({ name: `bulk ${i}`, price: i })))
  t.equal(await repo.count(), 31, 'a multi-row insert counts every row')
  await db.delete(items).where(gt(items.price, 19))
  t.equal(await repo.count(), await realCount(), 'a multi-row delete')
  t.equal(await repo.delete(one.id), true)
  t.equal(await repo.delete(one.id), false)
  t.equal(await repo.count(), await realCount(), 'a delete that matched nothing changes nothing')
  await db.update(items).set({ price: 5 })
  t.equal(await repo.count(), await realCount(), 'updates leave it alone')
  await db.execute(sql`truncate items`)
  t.equal(await repo.count(), 0, 'truncate resets it')
  await db.transaction(async (tx) => {
    await repo.create({ name: 'in tx', price: 1 }, { tx })
    t.equal(await repo.count({ tx }), 1, 'visible inside the transaction')
  })
  t.equal(await repo.count(), 1)
})

t.test('seedItems appends generated items in one statement, counted and searchable', async (t) => {
  const before = await repo.count()
  await seedItems(db, 20_000)
  t.equal(await repo.count(), before + 20_000)
  t.equal(await realCount(), before + 20_000)
  const sample = await repo.listAfter(0, 5)
  t.equal(sample.length, 5)
  for (const item of await repo.searchByName('desk 1', { limit: 50 })) t.match(item.name, /^(red|green|blue|oak|steel|linen|brass|glass) desk \d*1\d*$/)
  await seedItems(db, 0)
  t.equal(await repo.count(), before + 20_000, 'zero is a no-op')
  await t.rejects(seedItems(db, -1), RangeError)
  await t.rejects(seedItems(db, 1.5), RangeError)
})

t.test('name search and deep keyset pages use their indexes', async (t) => {
  const search = await plan(sql`select count(*) from items where name ilike ${containsPattern('desk 1234')} escape '\\'`)
  t.match(search, /items_name_trgm_idx/, 'the trigram index serves ?q=')
  const keyset = await plan(sql`select * from items where id > 19000 order by id limit 21`)
  t.match(keyset, /Index Scan using items_pkey/, 'keyset pages seek the primary key')
})

t.test('searchByName: case-insensitive substring, literal wildcards, by id, 20 by default', async (t) => {
  await db.execute(sql`truncate items`)
  const names = ['50% OFF', '50 percent off', 'a_b', 'axb', 'c\\d', 'cd']
  for (const name of names) await repo.create({ name, price: 1 })
  for (let i = 0; i < 25; i++) await repo.create({ name: `Widget ${i}`, price: i })
  t.same((await repo.searchByName('% off')).map((item) => item.name), ['50% OFF'])
  t.same((await repo.searchByName('_')).map((item) => item.name), ['a_b'])
  t.same((await repo.searchByName('\\')).map((item) => item.name), ['c\\d'])
  const widgets = await repo.searchByName('WIDGET')
  t.equal(widgets.length, 20, 'limit defaults to 20')
  t.same(widgets.map((item) => item.name), Array.from({ length: 20 }, (_, i) => `Widget ${i}`), 'ordered by id')
  t.equal((await repo.searchByName('widget', { limit: 3 })).length, 3)
  t.equal(await repo.countByName('widget'), 25)
  t.equal(await repo.countByName('%'), 1)
})

t.test('page and pageAfter return the rows with the whole total, with or without q', async (t) => {
  const all = await repo.list({ offset: 0, limit: 100 })
  const widgets = all.filter((item) => item.name.startsWith('Widget'))
  t.same(await repo.page({ offset: 2, limit: 3 }), { rows: all.slice(2, 5), total: all.length })
  t.same(await repo.page({ q: 'widget', offset: 20, limit: 10 }), { rows: widgets.slice(20), total: 25 })
  t.same(await repo.pageAfter({ afterId: all[3]!.id, limit: 2 }), { rows: all.slice(4, 6), total: all.length })
  t.same(await repo.pageAfter({ q: 'widget', afterId: widgets[23]!.id, limit: 5 }), { rows: widgets.slice(24), total: 25 })
  t.same(await repo.listAfter(all.at(-1)!.id, 10), [])
  await db.transaction(async (tx) => {
    t.same(await repo.pageAfter({ q: 'widget', afterId: 0, limit: 1 }, { tx }), { rows: widgets.slice(0, 1), total: 25 }, 'inside a transaction')
    t.same(await repo.page({ offset: 0, limit: 1 }, { tx }), { rows: all.slice(0, 1), total: all.length })
  })
})

t.test('the same page asked for at once is read once; other pages get their own rows', async (t) => {
  const counted = countingDatabase(client)
  const shared = createItemRepository(counted.db)
  const all = await repo.list({ offset: 0, limit: 100 })
  const asks = [
    shared.page({ offset: 0, limit: 5 }), shared.page({ offset: 0, limit: 5 }), shared.page({ offset: 5, limit: 5 }),
    shared.pageAfter({ afterId: all[1]!.id, limit: 2 }), shared.pageAfter({ afterId: all[1]!.id, limit: 2 }),
    shared.page({ q: 'widget', offset: 0, limit: 2 }), shared.page({ q: 'widget', offset: 0, limit: 2 })
  ]
  const [first, again, second, after, afterAgain, search, searchAgain] = await Promise.all(asks)
  const total = all.length
  t.same(first, { rows: all.slice(0, 5), total })
  t.equal(again, first, 'the two identical asks share one answer')
  t.same(second, { rows: all.slice(5, 10), total })
  t.same(after, { rows: all.slice(2, 4), total })
  t.equal(afterAgain, after)
  t.same(search?.total, 25)
  t.equal(searchAgain, search)
  t.equal(counted.queries(), 2 + 1 + 2, 'one query per distinct page: two offset pages, a keyset page, a search (rows and count)')
})

t.test('a short search page tells its total without counting; an empty page past the end still counts', async (t) => {
  const counted = countingDatabase(client)
  const shared = createItemRepository(counted.db)
  const widgets = (await repo.list({ offset: 0, limit: 100 })).filter((item) => item.name.startsWith('Widget'))
  t.same(await shared.page({ q: 'widget', offset: 20, limit: 10 }), { rows: widgets.slice(20), total: 25 })
  t.equal(counted.queries(), 1, 'the last page is its own count')
  t.same(await shared.page({ q: 'no such name', offset: 0, limit: 10 }), { rows: [], total: 0 })
  t.equal(counted.queries(), 2, 'an empty first page means no match')
  t.same(await shared.page({ q: 'widget', offset: 30, limit: 10 }), { rows: [], total: 25 }, 'past the end, the matches are counted')
  t.equal(counted.queries(), 4)
})

t.test('a shared page is read after the writes acknowledged before it, and an error reaches every caller', async (t) => {
  const before = await repo.page({ offset: 0, limit: 1 })
  const created = await repo.create({ name: 'just made', price: 1 })
  const [a, b] = await Promise.all([repo.page({ offset: 0, limit: 1 }), repo.page({ offset: 0, limit: 1 })])
  t.equal(a!.total, before.total + 1, 'the new item is counted')
  t.equal(b!.total, before.total + 1)
  await repo.delete(created.id)
  const bad = await Promise.allSettled([repo.page({ offset: -1, limit: 1 }), repo.page({ offset: -1, limit: 1 })])
  t.same(bad.map((r) => r.status), ['rejected', 'rejected'], 'OFFSET must not be negative')
  t.same(await repo.page({ offset: 0, limit: 1 }), { rows: before.rows, total: before.total }, 'the next page works')
})
