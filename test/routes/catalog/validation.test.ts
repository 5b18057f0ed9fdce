import t from 'tap'
import { ITEMS, buildCatalog, createItem } from '../../support/catalog.js'
import { PROBLEM_TYPE, validationProblem } from '../../support/responses.js'

const app = await buildCatalog(t)
const base = { name: 'valid', price: 1 }
const emoji = '\u{1F600}'

t.test('POST accepts every value on the edge of its limit', async (t) => {
  const cases: Array<Record<string, unknown>> = [
    { name: 'a', price: 0 },
    { name: 'n'.repeat(128), price: 1 },
    { name: emoji.repeat(128), price: 1 },
    { name: 'd', price: 1, description: 'd'.repeat(512) },
    { name: 'd', price: 1, description: '' },
    { name: 'd', price: 1, description: null },
    { name: 'p', price: 0.01, in_stock: false },
    { name: 'big', price: 1e300, in_stock: true }
  ]
  for (const payload of cases) {
    const created = await createItem(app, payload)
    t.same(created, { description: null, in_stock: true, ...payload, id: created.id, created_at: created.created_at })
  }
})

// Each bad field value, with the error it gets: POST sends it with valid other fields, PATCH alone.
const invalidFields: Array<[Record<string, unknown>, string, string]> = [
  [{ name: '' }, '/body/name', 'must NOT have fewer than 1 characters'],
  [{ name: 'n'.repeat(129) }, '/body/name', 'must NOT have more than 128 characters'],
  [{ name: emoji.repeat(129) }, '/body/name', 'must NOT have more than 128 characters'],
  [{ name: null }, '/body/name', 'must be string'],
  [{ name: 123 }, '/body/name', 'must be string'],
  [{ name: 'a\u0000b' }, '/body/name', 'must not contain NUL characters'],
  [{ description: 'd'.repeat(513) }, '/body/description', 'must NOT have more than 512 characters'],
  [{ description: 'a\u0000b' }, '/body/description', 'must not contain NUL characters'],
  [{ description: 5 }, '/body/description', 'must be string,null'],
  [{ price: -0.01 }, '/body/price', 'must be >= 0'],
  [{ price: '5' }, '/body/price', 'must be number'],
  [{ price: null }, '/body/price', 'must be number'],
  [{ in_stock: 'true' }, '/body/in_stock', 'must be boolean'],
  [{ in_stock: null }, '/body/in_stock', 'must be boolean']
]

t.test('POST refuses each value past its limit with 422 naming the field', async (t) => {
  const cases: Array<[unknown, string, string]> = [
    ...invalidFields.map(([field, path, message]) => [{ ...base, ...field }, path, message] as [unknown, string, string]),
    [{ price: 1 }, '/body/name', 'is required'],
    [{ name: 'x' }, '/body/price', 'is required'],
    [[base], '/body', 'must be object']
  ]
  for (const [payload, path, message] of cases) {
    const res = await app.inject({ method: 'POST', url: ITEMS, payload: payload as object })
    t.equal(res.statusCode, 422, JSON.stringify(payload).slice(0, 60))
    t.equal(res.headers['content-type'], PROBLEM_TYPE)
    t.same(res.json(), validationProblem([path, message]))
  }
  const total = (await app.inject({ method: 'GET', url: `${ITEMS}?q=valid` })).json().total
  t.equal(total, 0, 'nothing was stored')
})

t.test('PATCH applies the same limits, and refuses null for name, price and in_stock', async (t) => {
  const item = await createItem(app, { name: 'target', description: 'kept', price: 9, in_stock: true })
  const cases: Array<[unknown, string, string]> = [...invalidFields, [[{ name: 'x' }], '/body', 'must be object']]
  for (const [payload, path, message] of cases) {
    const res = await app.inject({ method: 'PATCH', url: `${ITEMS}/${item.id}`, payload: payload as object })
    t.equal(res.statusCode, 422, JSON.stringify(payload).slice(0, 60))
    t.same(res.json(), validationProblem([path, message]))
  }
  t.same((await app.inject({ method: 'GET', url: `${ITEMS}/${item.id}` })).json(), item, 'the item is unchanged')
})

t.test('PATCH accepts every value on the edge of its limit', async (t) => {
  const item = await createItem(app, { name: 'edge', price: 5 })
  for (const change of [{ name: 'n'.repeat(128) }, { name: 'a' }, { description: 'd'.repeat(512) }, { price: 0 }, { in_stock: false }]) {
    const res = await app.inject({ method: 'PATCH', url: `${ITEMS}/${item.id}`, payload: change })
    t.equal(res.statusCode, 200, JSON.stringify(change).slice(0, 40))
    t.match(res.json(), change)
  }
})

t.test('the list query refuses bad values with 422 naming the parameter', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['limit=0', '/querystring/limit', 'must be >= 1'],
    ['limit=-1', '/querystring/limit', 'must be >= 1'],
    ['limit=abc', '/querystring/limit', 'must be integer'],
    ['limit=2.5', '/querystring/limit', 'must be integer'],
    ['limit=1e400', '/querystring/limit', 'must be integer'],
    ['offset=-1', '/querystring/offset', 'must be >= 0'],
    ['offset=1.5', '/querystring/offset', 'must be integer'],
    ['offset=2147483648', '/querystring/offset', 'must be <= 2147483647'],
    ['offset=Infinity', '/querystring/offset', 'must be integer'],
    ['after_id=-1', '/querystring/after_id', 'must be >= 0'],
    ['after_id=x', '/querystring/after_id', 'must be integer'],
    ['after_id=2147483648', '/querystring/after_id', 'must be <= 2147483647'],
    ['after_id=1e400', '/querystring/after_id', 'must be integer'],
    ['after_id=3&offset=1', '/querystring/offset', 'must be 0 when after_id is given'],
    [`q=${'q'.repeat(129)}`, '/querystring/q', 'must NOT have more than 128 characters'],
    ['q=a%00b', '/querystring/q', 'must not contain NUL characters']
  ]
  for (const [query, path, message] of cases) {
    const res = await app.inject({ method: 'GET', url: `${ITEMS}?${query}` })
    t.equal(res.statusCode, 422, query.slice(0, 40))
    t.equal(res.headers['content-type'], PROBLEM_TYPE)
    t.same(res.json(), validationProblem([path, message]), query.slice(0, 40))
  }
})

t.test('unknown query parameters are ignored', async (t) => {
  const res = await app.inject({ method: 'GET', url: `${ITEMS}?sort=name&page=2&limit=1` })
  t.equal(res.statusCode, 200)
  t.equal(res.json().limit, 1)
})
