import Fastify from 'fastify'
import t, { type Test } from 'tap'
import dbPlugin from '../../../plugins/db.js'
import catalog from '../../../routes/catalog/index.js'
import { resolveCatalogOptions } from '../../../routes/catalog/options.js'
import { ITEMS, buildCatalog, notFound } from '../../support/catalog.js'
import { freshDatabase } from '../../support/database.js'
import { PROBLEM_TYPE, validationProblem } from '../../support/responses.js'

/** A host app of someone else's: plain Fastify, only the db plugin, then the catalog. */
async function bareApp (t: Test, options = {}) {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(dbPlugin, { client: await freshDatabase(t), migrate: false })
  await app.register(catalog, { prefix: '/api/v1', ...options })
  return app
}

t.test('the catalog works registered on its own in a bare Fastify app', async (t) => {
  const app = await bareApp(t)
  const created = await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'lamp', price: '5' } })
  t.same(created.json(), validationProblem(['/body/price', 'must be number']), 'its body validator does not coerce')
  const ok = await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'lamp', price: 5 } })
  t.equal(ok.statusCode, 201)
  const missing = await app.inject({ method: 'GET', url: `${ITEMS}/2147483647` })
  t.equal(missing.statusCode, 404)
  t.equal(missing.headers['content-type'], PROBLEM_TYPE, 'errors are problem documents without the host registering errors')
  t.same(missing.json(), notFound(2147483647))
  const page = await app.inject({ method: 'GET', url: `${ITEMS}?limit=1000` })
  t.same(page.json(), { items: [ok.json()], total: 1, offset: 0, limit: 100, has_next: false }, 'default maximum 100')
  t.equal((await app.inject({ method: 'GET', url: ITEMS })).json().limit, 20, 'default page size 20')
})

t.test('the catalog needs the db plugin, and says so at boot', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.register(catalog, { prefix: '/api/v1' })
  await t.rejects(async () => app.ready(), /The dependency 'plinth-db' of plugin 'plinth-catalog' is not registered/)
})

t.test('bad page limits fail the boot with a message naming the option', async (t) => {
  const cases: Array<[object, string]> = [
    [{ maxLimit: 0 }, 'catalog plugin: maxLimit must be an integer from 1 to 2147483647 (got 0)'],
    [{ maxLimit: 2.5 }, 'catalog plugin: maxLimit must be an integer from 1 to 2147483647 (got 2.5)'],
    [{ maxLimit: '10' }, 'catalog plugin: maxLimit must be an integer from 1 to 2147483647 (got "10")'],
    [{ defaultLimit: 0 }, 'catalog plugin: defaultLimit must be an integer from 1 to maxLimit (got 0)'],
    [{ defaultLimit: 11, maxLimit: 10 }, 'catalog plugin: defaultLimit must be an integer from 1 to maxLimit (10) (got 11)'],
    [{ requireIfMatch: 'yes' }, 'catalog plugin: requireIfMatch must be a boolean (got "yes")'],
    [{ etags: 'no' }, 'catalog plugin: etags must be a boolean (got "no")'],
    [{ idempotencyTtlHours: 0 }, 'catalog plugin: idempotencyTtlHours must be a whole number of hours from 1 to 8760 (got 0)']
  ]
  for (const [options, message] of cases) {
    t.throws(() => resolveCatalogOptions(options), { message, code: 'CATALOG_INVALID_OPTIONS' }, JSON.stringify(options))
  }
  t.same(resolveCatalogOptions({}), { defaultLimit: 20, maxLimit: 100, requireIfMatch: false, etags: true, idempotencyTtlHours: 24, guards: {} })
  t.same(resolveCatalogOptions({ maxLimit: 10 }), { defaultLimit: 10, maxLimit: 10, requireIfMatch: false, etags: true, idempotencyTtlHours: 24, guards: {} }, 'the default page size never exceeds the maximum')
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(dbPlugin, { client: await freshDatabase(t), migrate: false })
  app.register(catalog, { prefix: '/api/v1', maxLimit: -1 })
  await t.rejects(async () => app.ready(), { code: 'CATALOG_INVALID_OPTIONS', message: /maxLimit must be an integer/ })
})

t.test('the OpenAPI document describes every catalog route, with the page limits in use', async (t) => {
  const app = await buildCatalog(t)
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const operations = Object.entries(doc.paths as Record<string, Record<string, { operationId: string, tags: string[] }>>)
    .filter(([path]) => path.startsWith('/api/v1/items'))
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => `${method} ${path} ${op.operationId} ${op.tags}`))
  t.same(operations.sort(), [
    'delete /api/v1/items/{item_id} deleteItem items',
    'get /api/v1/items listItems items',
    'get /api/v1/items/{item_id} getItem items',
    'patch /api/v1/items/{item_id} updateItem items',
    'post /api/v1/items createItem items'
  ])
  t.ok(doc.components.schemas.Item, 'Item is a named component')
  t.ok(doc.components.schemas.ItemPage, 'ItemPage is a named component')
  const limit = doc.paths['/api/v1/items'].get.parameters.find((p: { name: string }) => p.name === 'limit')
  t.equal(limit.schema.default, 5)
  t.match(limit.description ?? limit.schema.description, /above 10 are reduced to 10/)
  t.ok(doc.paths['/api/v1/items/{item_id}'].delete.responses['204'], '204 documented')
})
