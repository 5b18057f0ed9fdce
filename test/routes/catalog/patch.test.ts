import t from 'tap'
import { ITEMS, buildCatalog, createItem } from '../../support/catalog.js'

const app = await buildCatalog(t)
const full = { name: 'lamp', description: 'brass', price: 12.5, in_stock: true }

const patch = (id: number, payload?: unknown) =>
  app.inject({ method: 'PATCH', url: `${ITEMS}/${id}`, ...(payload === undefined ? {} : { payload: payload as object }) })
const read = async (id: number) => (await app.inject({ method: 'GET', url: `${ITEMS}/${id}` })).json()

t.test('PATCH of a single field changes that field and leaves every other one untouched', async (t) => {
  const changes = [{ name: 'desk lamp' }, { description: 'copper' }, { price: 0 }, { price: 99.99 }, { in_stock: false }]
  for (const change of changes) {
    const item = await createItem(app, full)
    const res = await patch(item.id, change)
    t.equal(res.statusCode, 200, JSON.stringify(change))
    t.same(res.json(), { ...item, ...change }, `${JSON.stringify(change)}: the others keep their values`)
    t.same(await read(item.id), { ...item, ...change }, 'as stored')
  }
})

t.test('unsent fields are not reset to their defaults', async (t) => {
  const item = await createItem(app, { ...full, in_stock: false })
  t.same((await patch(item.id, { name: 'renamed' })).json(), { ...item, name: 'renamed' }, 'in_stock stays false, description stays')
})

t.test('null clears the description, and it stays null through later changes', async (t) => {
  const item = await createItem(app, full)
  t.same((await patch(item.id, { description: null })).json(), { ...item, description: null })
  t.same((await patch(item.id, { price: 3 })).json(), { ...item, description: null, price: 3 })
  t.same((await patch(item.id, { description: 'back' })).json(), { ...item, description: 'back', price: 3 })
})

t.test('PATCH of every field at once', async (t) => {
  const item = await createItem(app, full)
  const change = { name: 'rug', description: null, price: 7, in_stock: false }
  t.same((await patch(item.id, change)).json(), { ...item, ...change })
})

t.test('an empty body, or none at all, returns the item unchanged', async (t) => {
  const item = await createItem(app, full)
  for (const payload of [{}, undefined]) {
    const res = await patch(item.id, payload)
    t.equal(res.statusCode, 200, payload === undefined ? 'no body' : '{}')
    t.same(res.json(), item)
  }
  t.same(await read(item.id), item)
})

t.test('id, created_at and unknown fields in a PATCH are stripped, never written', async (t) => {
  const item = await createItem(app, full)
  const res = await patch(item.id, { id: item.id + 1000, created_at: '2000-01-01T00:00:00.000Z', colour: 'red' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), item, 'nothing changed')
  const renamed = await patch(item.id, { name: 'kept id', id: 1 })
  t.same(renamed.json(), { ...item, name: 'kept id' })
})

t.test('PATCH never touches another item', async (t) => {
  const [one, two] = [await createItem(app, full), await createItem(app, full)]
  await patch(one!.id, { name: 'only me', description: null })
  t.same(await read(two!.id), two)
})

t.test('PATCHes racing on one row: none is lost, and the row ends as the last acknowledged one left it', async (t) => {
  const item = await createItem(app, full)
  const acknowledged: Array<{ price: number, etag: string }> = []
  const changes = Array.from({ length: 30 }, (_, i) => i % 3 === 0 ? { price: i, name: `lamp ${i}` } : { price: i })
  await Promise.all(changes.map(async (change) => {
    const res = await patch(item.id, change)
    t.equal(res.statusCode, 200)
    t.equal(res.json().price, change.price, 'each answer shows its own write')
    acknowledged.push({ price: res.json().price, etag: res.headers.etag as string })
  }))
  t.equal(new Set(acknowledged.map((answer) => answer.etag)).size, 30, 'thirty writes, thirty versions: none overwritten unseen')
  const stored = await app.inject({ method: 'GET', url: `${ITEMS}/${item.id}` })
  t.equal(stored.json().price, acknowledged.at(-1)!.price, 'the last acknowledged price')
  t.equal(stored.headers.etag, acknowledged.at(-1)!.etag, 'and its version')
  t.equal(stored.json().name, 'lamp 27', 'the last write that named it')
})
