import t from 'tap'
import { ITEMS, buildCatalog, createItem, type ItemBody } from '../../support/catalog.js'

// Default page size 5, maximum 10 (LIMITS in test/support/catalog.ts).
const app = await buildCatalog(t)
const created: ItemBody[] = []
for (let i = 0; i < 23; i++) created.push(await createItem(app, { name: `item ${i}`, price: i }))
const ids = created.map((item) => item.id)
const TOTAL = created.length

const list = async (query = '') => {
  const res = await app.inject({ method: 'GET', url: `${ITEMS}${query ? `?${query}` : ''}` })
  if (res.statusCode !== 200) throw new Error(`GET ?${query}: ${res.statusCode} ${res.payload}`)
  return res.json() as { items: ItemBody[], total: number, offset: number, limit: number, has_next: boolean }
}

t.test('without a query: the first DEFAULT_PAGE_LIMIT items by id, and the envelope', async (t) => {
  const page = await list()
  t.same(Object.keys(page), ['items', 'total', 'offset', 'limit', 'has_next'])
  t.same(page, { items: created.slice(0, 5), total: TOTAL, offset: 0, limit: 5, has_next: true })
})

t.test('limit up to MAX_PAGE_LIMIT is used as given; above it, clamped and never refused', async (t) => {
  t.equal((await list('limit=1')).items.length, 1)
  t.same(await list('limit=10'), { items: created.slice(0, 10), total: TOTAL, offset: 0, limit: 10, has_next: true })
  for (const limit of ['11', '1000', '2147483647', '2147483648', '99999999999999999999']) {
    const page = await list(`limit=${limit}`)
    t.equal(page.limit, 10, `limit=${limit} is clamped`)
    t.same(page.items, created.slice(0, 10))
  }
})

t.test('offset skips items; has_next is false on the last page and past the end', async (t) => {
  t.same(await list('offset=5&limit=3'), { items: created.slice(5, 8), total: TOTAL, offset: 5, limit: 3, has_next: true })
  t.same(await list(`offset=${TOTAL - 2}`), { items: created.slice(-2), total: TOTAL, offset: TOTAL - 2, limit: 5, has_next: false })
  t.same(await list(`offset=${TOTAL - 5}`), { items: created.slice(-5), total: TOTAL, offset: TOTAL - 5, limit: 5, has_next: false })
  t.same(await list(`offset=${TOTAL}`), { items: [], total: TOTAL, offset: TOTAL, limit: 5, has_next: false })
  t.same(await list('offset=2147483647'), { items: [], total: TOTAL, offset: 2147483647, limit: 5, has_next: false })
})

t.test('walking every offset page yields every item exactly once, in id order', async (t) => {
  for (const limit of [1, 3, 5, 10]) {
    const seen: number[] = []
    let page
    let offset = 0
    do {
      page = await list(`offset=${offset}&limit=${limit}`)
      seen.push(...page.items.map((item) => item.id))
      offset += limit
    } while (page.has_next)
    t.same(seen, ids, `limit ${limit}`)
  }
})

t.test('walking keyset pages (after_id = last id seen) yields every item exactly once', async (t) => {
  for (const limit of [1, 4, 10]) {
    const seen: number[] = []
    let page
    let after = 0
    do {
      page = await list(`after_id=${after}&limit=${limit}`)
      t.equal(page.offset, 0)
      t.equal(page.total, TOTAL, 'total counts the whole collection')
      seen.push(...page.items.map((item) => item.id))
      after = page.items.at(-1)?.id ?? after
    } while (page.has_next)
    t.same(seen, ids, `limit ${limit}`)
  }
  t.same(await list(`after_id=${ids[2]}&limit=2`), { items: created.slice(3, 5), total: TOTAL, offset: 0, limit: 2, has_next: true })
  t.same(await list(`after_id=${ids.at(-1)}`), { items: [], total: TOTAL, offset: 0, limit: 5, has_next: false })
  t.same(await list(`after_id=${ids.at(-2)}&offset=0&limit=1`), { items: created.slice(-1), total: TOTAL, offset: 0, limit: 1, has_next: false })
})

t.test('a keyset walk neither skips nor repeats items when others are deleted or added meanwhile', async (t) => {
  const first = await list('after_id=0&limit=5')
  const gone = await createItem(app, { name: 'walk gone', price: 1 })
  await app.inject({ method: 'DELETE', url: `${ITEMS}/${gone.id}` })
  await app.inject({ method: 'DELETE', url: `${ITEMS}/${first.items[1]!.id}` })
  const added = await createItem(app, { name: 'walk added', price: 1 })
  const seen: number[] = []
  let page
  let after = first.items.at(-1)!.id
  do {
    page = await list(`after_id=${after}&limit=10`)
    t.equal(page.total, TOTAL, 'one deleted, one added')
    seen.push(...page.items.map((item) => item.id))
    after = page.items.at(-1)?.id ?? after
  } while (page.has_next)
  t.same(seen, [...ids.slice(5), added.id])
  t.teardown(() => app.inject({ method: 'DELETE', url: `${ITEMS}/${added.id}` }))
})
