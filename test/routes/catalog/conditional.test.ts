import t from 'tap'
import type { App } from '../../../app.js'
import catalog from '../../../routes/catalog/index.js'
import { build } from '../../support/app.js'
import { ITEMS, buildCatalog, createItem } from '../../support/catalog.js'
import { conditionalTests, requiredIfMatchTests } from '../../support/conditional.js'
import { assertProblem } from '../../support/responses.js'

let n = 0
const change = () => ({ price: ++n })

const app = await buildCatalog(t)
conditionalTests(t, app, { create: async () => `${ITEMS}/${(await createItem(app, { name: 'lamp', price: 1 })).id}`, change, table: 'items' })

t.test('a created item carries the ETag a GET then sees', async (t) => {
  const res = await app.inject({ method: 'POST', url: ITEMS, payload: { name: 'desk', price: 3 } })
  t.equal(res.statusCode, 201)
  t.equal((await app.inject({ method: 'GET', url: `${ITEMS}/${res.json().id}` })).headers.etag, res.headers.etag)
})

t.test('the ETag is keyed by SECRET_KEY: processes that share it agree, another key reads it as no version at all', async (t) => {
  const one = await buildCatalog(t, { SECRET_KEY: 'one key shared by two processes, 32+ bytes' })
  const twin = await build(t, { SECRET_KEY: 'one key shared by two processes, 32+ bytes' }, { database: one.plinthDb })
  const stranger = await build(t, { SECRET_KEY: 'another key of another deployment, 32+ bytes' }, { database: one.plinthDb })
  const url = `${ITEMS}/${(await createItem(one, { name: 'lamp', price: 1 })).id}`
  const etagOn = async (app: App) => String((await app.inject({ method: 'GET', url })).headers.etag)
  const etag = await etagOn(one)
  t.equal(await etagOn(twin), etag, 'the same ETag on every process with the key')
  t.not(await etagOn(stranger), etag, 'another key, another ETag for the same row and version')
  assertProblem(t, await stranger.inject({ method: 'PATCH', url, headers: { 'if-match': etag }, payload: { price: 2 } }), 412, 'PRECONDITION_FAILED', 'another key\'s ETag names no version')
  t.equal((await twin.inject({ method: 'PATCH', url, headers: { 'if-match': etag }, payload: { price: 3 } })).statusCode, 200, 'If-Match holds across processes with one key')
})

t.test('If-Match takes an ETag only as the server spelled it', async (t) => {
  const url = `${ITEMS}/${(await createItem(app, { name: 'lamp', price: 1 })).id}`
  const etag = String((await app.inject({ method: 'GET', url })).headers.etag)
  // The last of 22 base64url characters carries 4 bits of the 16 bytes: its 2 low bits decode to nothing.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const respelled = `${etag.slice(0, -2)}${alphabet[alphabet.indexOf(etag.at(-2)!) ^ 1]}"`
  t.same(Buffer.from(respelled.slice(1, -1), 'base64url'), Buffer.from(etag.slice(1, -1), 'base64url'), 'the same bytes')
  assertProblem(t, await app.inject({ method: 'PATCH', url, headers: { 'if-match': respelled }, payload: { price: 2 } }), 412, 'PRECONDITION_FAILED')
  t.equal((await app.inject({ method: 'PATCH', url, headers: { 'if-match': etag }, payload: { price: 3 } })).statusCode, 200)
})

t.test('REQUIRE_IF_MATCH=true: writes without If-Match are 428', async (t) => {
  const strict = await buildCatalog(t, { REQUIRE_IF_MATCH: true })
  await requiredIfMatchTests(t, strict, { create: async () => `${ITEMS}/${(await createItem(strict, { name: 'lamp', price: 1 })).id}`, change })
})

t.test('etags: false: no ETag, If-None-Match and If-Match are not read, and the document says so', async (t) => {
  const host = await build(t)
  const warnings: Error[] = []
  const warned = (warning: Error) => { warnings.push(warning) }
  process.on('warning', warned)
  t.teardown(() => { process.off('warning', warned) })
  await host.register(catalog, { prefix: '/plain', etags: false })
  await host.ready()
  // Fastify warns of a `headers` key left undefined; the warning is emitted on the next tick.
  await new Promise((resolve) => setImmediate(resolve))
  t.same(warnings.map((warning) => warning.message), [], 'routes without conditional headers declare none')
  const created = await host.inject({ method: 'POST', url: '/plain/items', payload: { name: 'lamp', price: 1 } })
  t.equal(created.statusCode, 201)
  t.equal(created.headers.etag, undefined, 'no ETag on a create')
  t.equal(created.headers.location, `/plain/items/${created.json().id}`)
  const url = `/plain/items/${created.json().id}`
  const etag = (await app.inject({ method: 'GET', url: `${ITEMS}/${created.json().id}` })).headers.etag as string
  const read = await host.inject({ method: 'GET', url, headers: { 'if-none-match': etag } })
  t.equal(read.statusCode, 200, 'never 304')
  t.equal(read.headers.etag, undefined)
  const written = await host.inject({ method: 'PATCH', url, headers: { 'if-match': '"stale"' }, payload: { price: 2 } })
  t.equal(written.statusCode, 200, 'If-Match is not read')
  t.equal(written.headers.etag, undefined)
  t.equal((await host.inject({ method: 'DELETE', url, headers: { 'if-match': '"stale"' } })).statusCode, 204)

  const paths = host.swagger().paths as Record<string, Record<string, { responses: Record<string, { headers?: object }>, parameters?: Array<{ name: string }> }>>
  const item = paths['/plain/items/{item_id}']!
  t.notOk(item.get!.responses['304'], 'no 304 documented')
  t.notOk(item.get!.responses['200']!.headers, 'no ETag header documented')
  t.notOk(item.patch!.responses['412'] ?? item.patch!.responses['428'], 'no 412 or 428')
  t.notOk([...item.get!.parameters ?? [], ...item.patch!.parameters ?? []].some((one) => /^if-/.test(one.name)), 'no conditional headers')
})

t.test('requireIfMatch without etags fails the boot', async (t) => {
  const host = await build(t)
  await t.rejects(async () => { await host.register(catalog, { prefix: '/plain', etags: false, requireIfMatch: true }).ready() }, /requireIfMatch needs etags/)
})
