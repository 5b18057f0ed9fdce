import Fastify from 'fastify'
import t, { type Test } from 'tap'
import type { DatabaseClient } from '../../db/client.js'
import dbPlugin from '../../plugins/db.js'
import { ETAG_KEY_WARNING } from '../../http/etag-key.js'
import etagsPlugin from '../../plugins/etags.js'
import catalog from '../../routes/catalog/index.js'
import { captureLogs } from '../support/app.js'
import { items } from '../../db/schema.js'
import { freshDatabase } from '../support/database.js'

const SECRET = 'the etags test secret, 32 bytes or more'

/** A host app with the catalog on `database`; with etagsPlugin and these options unless `etags` is false. */
async function host (t: Test, database: DatabaseClient, etags: false | { secret?: string }) {
  const { lines, logger } = captureLogs()
  const app = Fastify({ logger })
  t.teardown(() => app.close())
  await app.register(dbPlugin, { client: database })
  if (etags !== false) await app.register(etagsPlugin, etags)
  await app.register(catalog, { prefix: '/api' })
  const warned = () => lines.filter((line) => line.level === 40 && line.msg === ETAG_KEY_WARNING).length
  return { app, warned }
}

const etagOf = async (app: Awaited<ReturnType<typeof host>>['app'], url: string) => String((await app.inject({ method: 'GET', url })).headers.etag)

t.test('without etagsPlugin, or without its secret, ETags are keyed per process, with a warning', async (t) => {
  const database = await freshDatabase(t)
  const alone = await host(t, database, false)
  const url = `/api/items/${(await alone.app.inject({ method: 'POST', url: '/api/items', payload: { name: 'lamp', price: 1 } })).json().id}`
  const etag = await etagOf(alone.app, url)
  t.equal((await alone.app.inject({ method: 'GET', url, headers: { 'if-none-match': etag } })).statusCode, 304, 'they still work in the process')
  t.equal(alone.warned(), 1, 'the first profile keyed by the process warns')
  t.equal((await host(t, database, false)).warned(), 0, 'once per process')
  const unkeyed = await host(t, database, {})
  t.equal(unkeyed.warned(), 1, 'etagsPlugin without a secret warns')
  t.not(await etagOf(unkeyed.app, url), etag, 'its key is its own')
})

t.test('one secret gives every host the same ETags, and each takes the others\' If-Match', async (t) => {
  const database = await freshDatabase(t)
  const [one, two] = [await host(t, database, { secret: SECRET }), await host(t, database, { secret: SECRET })]
  t.equal(one.warned() + two.warned(), 0, 'no warning with a secret')
  const url = `/api/items/${(await one.app.inject({ method: 'POST', url: '/api/items', payload: { name: 'lamp', price: 1 } })).json().id}`
  const etag = await etagOf(one.app, url)
  t.equal(await etagOf(two.app, url), etag)
  t.equal((await two.app.inject({ method: 'PATCH', url, headers: { 'if-match': etag }, payload: { price: 2 } })).statusCode, 200)
})

t.test('a secret shorter than 32 bytes fails the boot, its length told and never itself', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(etagsPlugin, { secret: 'short etag secret' }).ready() },
    { code: 'ETAGS_INVALID_OPTIONS', message: 'etags plugin: secret must be at least 32 bytes (got 17)' })
})

t.test('an ETag names its row: the tag of a row written in the same transaction fails If-Match on another', async (t) => {
  const database = await freshDatabase(t)
  const { app } = await host(t, database, { secret: SECRET })
  // One statement, one transaction: both rows have the same version.
  const [lamp, desk] = await database.db.insert(items).values([{ name: 'lamp', price: 1 }, { name: 'desk', price: 2 }]).returning()
  const lampTag = await etagOf(app, `/api/items/${lamp!.id}`)
  const patch = (id: number) => app.inject({ method: 'PATCH', url: `/api/items/${id}`, headers: { 'if-match': lampTag }, payload: { price: 9 } })
  t.equal((await patch(desk!.id)).statusCode, 412, 'the lamp\'s tag does not write the desk')
  t.equal((await patch(lamp!.id)).statusCode, 200, 'it writes the lamp')
})
