import t from 'tap'
import { ITEMS, buildCatalog, createItem } from '../../support/catalog.js'
import { conditionalTests, requiredIfMatchTests } from '../../support/conditional.js'

let n = 0
const change = () => ({ price: ++n })

const app = await buildCatalog(t)
conditionalTests(t, app, { create: async () => `${ITEMS}/${(await createItem(app, { name: 'lamp', price: 1 })).id}`, change })

t.test('a created item carries the ETag a GET then sees', async (t) => {
  const res = await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'desk', price: 3 } })
  t.equal(res.statusCode, 201)
  t.equal((await app.inject({ method: 'GET', url: `${ITEMS}/${res.json().id}` })).headers.etag, res.headers.etag)
})

t.test('REQUIRE_IF_MATCH=true: writes without If-Match are 428', async (t) => {
  const strict = await buildCatalog(t, { REQUIRE_IF_MATCH: true })
  await requiredIfMatchTests(t, strict, { create: async () => `${ITEMS}/${(await createItem(strict, { name: 'lamp', price: 1 })).id}`, change })
})
