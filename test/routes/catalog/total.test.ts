import { count } from 'drizzle-orm'
import t from 'tap'
import { items } from '../../../db/schema.js'
import { ITEMS, buildCatalog, type ItemBody } from '../../support/catalog.js'

const app = await buildCatalog(t)

const realCount = async () => (await app.plinthDb.db.select({ n: count() }).from(items))[0]!.n
const listedTotal = async (query = '') => (await app.inject({ method: 'GET', url: `${ITEMS}?limit=1${query}` })).json().total
const create = async (name: string): Promise<ItemBody> =>
  (await app.inject({ method: 'POST', url: ITEMS, payload: { name, price: 1 } })).json()
const remove = async (id: number) => (await app.inject({ method: 'DELETE', url: `${ITEMS}/${id}` })).statusCode

t.test('total is exact after 50 creates and 25 deletes running concurrently', async (t) => {
  for (let round = 1; round <= 3; round++) {
    const existing = await Promise.all(Array.from({ length: 25 }, (_, i) => create(`old ${round}.${i}`)))
    const before = await realCount()
    const results = await Promise.all([
      ...Array.from({ length: 50 }, (_, i) => create(`new ${round}.${i}`).then(() => 201)),
      ...existing.map((item) => remove(item.id))
    ])
    t.same(new Set(results), new Set([201, 204]), 'every create and delete succeeded')
    const real = await realCount()
    t.equal(real, before + 25, `round ${round}: 50 created, 25 deleted`)
    t.equal(await listedTotal(), real, `round ${round}: total equals count(*)`)
  }
})

t.test('racing deletes of the same item count it once', async (t) => {
  const item = await create('contested')
  const before = await realCount()
  const statuses = await Promise.all(Array.from({ length: 10 }, () => remove(item.id)))
  t.same(statuses.sort(), [204, ...Array(9).fill(404)], 'exactly one DELETE wins')
  t.equal(await realCount(), before - 1)
  t.equal(await listedTotal(), before - 1)
})

t.test('a rolled-back insert or delete leaves the total as it was', async (t) => {
  const before = await listedTotal()
  await t.rejects(app.plinthDb.db.transaction(async (tx) => {
    await tx.insert(items).values([{ name: 'ghost', price: 1 }, { name: 'ghost', price: 2 }])
    await tx.delete(items)
    throw new Error('roll back')
  }), /roll back/)
  t.equal(await listedTotal(), before)
  t.equal(await realCount(), before)
})

t.test('with ?q=, total counts the matches exactly, also while they change', async (t) => {
  await Promise.all(Array.from({ length: 12 }, (_, i) => create(`Needle ${i}`)))
  t.equal(await listedTotal('&q=needle'), 12)
  const needles = (await app.inject({ method: 'GET', url: `${ITEMS}?q=needle&limit=4` })).json().items as ItemBody[]
  await Promise.all([...needles.map((item) => remove(item.id)), create('another needle')])
  t.equal(await listedTotal('&q=needle'), 9)
})
