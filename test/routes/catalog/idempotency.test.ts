import t from 'tap'
import { ITEMS, buildCatalog } from '../../support/catalog.js'
import { idempotencyTests, newKey } from '../../support/idempotency.js'

const app = await buildCatalog(t)
let n = 0
const rows = async () => (await app.inject({ method: 'GET', url: `${ITEMS}?limit=1` })).json().total as number

idempotencyTests(t, app, { url: ITEMS, body: () => ({ name: `lamp ${++n}`, price: n }), rows })

t.test('a key is per client: another address with the same key creates its own item', async (t) => {
  const key = newKey()
  const payload = { name: 'shared key', price: 1 }
  const before = await rows()
  const post = (remoteAddress: string) => app.inject({ method: 'POST', url: ITEMS, payload, headers: { 'idempotency-key': key }, remoteAddress })
  const [a, b] = [await post('127.0.0.1'), await post('10.0.0.7')]
  t.not(a.json().id, b.json().id)
  t.equal(await rows(), before + 2)
})

t.test('a created item has its URL in Location', async (t) => {
  const res = await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'located', price: 1 } })
  t.equal(res.headers.location, `${ITEMS}/${res.json().id}`)
  t.equal((await app.inject({ method: 'GET', url: String(res.headers.location) })).statusCode, 200)
})

t.test('a key is 1 to 255 visible characters', async (t) => {
  for (const key of ['', 'x'.repeat(256), 'tab\there']) {
    const res = await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'k', price: 1 }, headers: { 'idempotency-key': key } })
    t.equal(res.statusCode, 422, JSON.stringify(key))
    t.match(res.json().detail, /idempotency-key/)
  }
})
