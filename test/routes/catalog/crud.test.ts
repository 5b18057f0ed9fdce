import t from 'tap'
import { ISO_UTC, ITEMS, buildCatalog, createItem, notFound } from '../../support/catalog.js'
import { JSON_TYPE, PROBLEM_TYPE, validationProblem } from '../../support/responses.js'

const app = await buildCatalog(t)
const FIELDS = ['name', 'description', 'price', 'in_stock', 'id', 'created_at']

t.test('POST creates an item: 201 with its public shape and server-assigned id and created_at', async (t) => {
  const before = Date.now()
  const res = await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'lamp', price: 12.5 } })
  t.equal(res.statusCode, 201)
  t.equal(res.headers['content-type'], JSON_TYPE)
  const body = res.json()
  t.same(Object.keys(body), FIELDS, 'exactly the ItemPublic fields, in order')
  t.same(body, { name: 'lamp', description: null, price: 12.5, in_stock: true, id: body.id, created_at: body.created_at })
  t.ok(Number.isInteger(body.id) && body.id > 0, 'integer id')
  t.match(body.created_at, ISO_UTC, 'ISO 8601 in UTC')
  t.ok(Math.abs(Date.parse(body.created_at) - before) < 60_000, 'created now')
})

t.test('POST stores every field it is given, and GET reads it back unchanged', async (t) => {
  const created = await createItem(app, { name: 'chair', description: 'oak', price: 40, in_stock: false })
  t.same(created, { name: 'chair', description: 'oak', price: 40, in_stock: false, id: created.id, created_at: created.created_at })
  const res = await app.inject({ method: 'GET', url: `${ITEMS}/${created.id}` })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], JSON_TYPE)
  t.same(res.json(), created)
  t.same(Object.keys(res.json()), FIELDS)
})

t.test('id, created_at and unknown fields are stripped on create, never stored', async (t) => {
  const created = await createItem(app, {
    name: 'sneaky', price: 1, id: 999999, created_at: '2000-01-01T00:00:00.000Z', owner: 'me', is_superuser: true
  })
  t.not(created.id, 999999)
  t.not(created.created_at, '2000-01-01T00:00:00.000Z')
  t.same(Object.keys(created), FIELDS, 'no extra field in the response')
  t.equal((await app.inject({ method: 'GET', url: `${ITEMS}/999999` })).statusCode, 404, 'no item under the sent id')
  t.same((await app.inject({ method: 'GET', url: `${ITEMS}/${created.id}` })).json(), created)
})

t.test('a missing item is 404 CATALOG_ITEM_NOT_FOUND on GET, PATCH and DELETE', async (t) => {
  const created = await createItem(app, { name: 'ghost', price: 1 })
  await app.inject({ method: 'DELETE', url: `${ITEMS}/${created.id}` })
  for (const id of [created.id, 2147483647]) {
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await app.inject({ method, url: `${ITEMS}/${id}`, ...(method === 'PATCH' ? { payload: { name: 'x' } } : {}) })
      t.equal(res.statusCode, 404, `${method} ${id}`)
      t.equal(res.headers['content-type'], PROBLEM_TYPE)
      t.same(res.json(), notFound(id))
    }
  }
})

t.test('DELETE answers 204 with no body; the item is gone and a second DELETE is 404', async (t) => {
  const created = await createItem(app, { name: 'bin', price: 3 })
  const res = await app.inject({ method: 'DELETE', url: `${ITEMS}/${created.id}` })
  t.equal(res.statusCode, 204)
  t.equal(res.payload, '')
  t.equal(res.headers['content-length'], undefined)
  t.equal(res.headers['content-type'], undefined)
  t.equal((await app.inject({ method: 'GET', url: `${ITEMS}/${created.id}` })).statusCode, 404)
  t.same((await app.inject({ method: 'DELETE', url: `${ITEMS}/${created.id}` })).json(), notFound(created.id))
})

t.test('a bad item id is 422 on GET, PATCH and DELETE, never a driver error', async (t) => {
  const cases: Array<[string, string]> = [
    ['0', 'must be >= 1'],
    ['-1', 'must be >= 1'],
    ['2147483648', 'must be <= 2147483647'],
    ['1.5', 'must be integer'],
    ['abc', 'must be integer'],
    ['1e400', 'must be integer']
  ]
  for (const [id, message] of cases) {
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await app.inject({ method, url: `${ITEMS}/${id}`, ...(method === 'PATCH' ? { payload: {} } : {}) })
      t.equal(res.statusCode, 422, `${method} ${id}`)
      t.equal(res.headers['content-type'], PROBLEM_TYPE)
      t.same(res.json(), validationProblem(['/params/item_id', message]), `${method} ${id}`)
    }
  }
})

t.test('every route answers with and without a trailing slash', async (t) => {
  const created = await createItem(app, { name: 'slash', price: 2 })
  t.equal((await app.inject({ method: 'POST', url: `${ITEMS}/`, payload: { name: 'slash 2', price: 2 } })).statusCode, 201)
  t.equal((await app.inject({ method: 'GET', url: `${ITEMS}/` })).statusCode, 200)
  t.same((await app.inject({ method: 'GET', url: `${ITEMS}/${created.id}/` })).json(), created)
  t.equal((await app.inject({ method: 'PATCH', url: `${ITEMS}/${created.id}/`, payload: { price: 3 } })).json().price, 3)
  t.equal((await app.inject({ method: 'DELETE', url: `${ITEMS}/${created.id}/` })).statusCode, 204)
})

t.test('a body that is not JSON is 400, and a price sent as text is 422 (bodies are not coerced)', async (t) => {
  const bad = await app.inject({ method: 'POST', url: ITEMS, headers: { 'content-type': 'application/json' }, payload: '{"name": "a",' })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'MALFORMED_BODY')
  const text = await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'a', price: '5' } })
  t.same(text.json(), validationProblem(['/body/price', 'must be number']))
})
