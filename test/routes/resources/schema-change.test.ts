import { Type, type TObject } from '@sinclair/typebox'
import t, { type Test } from 'tap'
import { API_PREFIX, buildApp, type App } from '../../../app.js'
import type { DatabaseClient } from '../../../db/client.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { NO_EVENT_LOOP_SHEDDING, NO_RATE_LIMITS } from '../../support/app.js'
import { enforceContract } from '../../support/contract.js'
import { freshDatabase } from '../../support/database.js'
import { assertProblem } from '../../support/responses.js'

// Every process of one database shares the ETag key, as SECRET_KEY makes it.
const SECRET_KEY = 'schema-change-test-secret-key-32-bytes!'
const NOTES = `${API_PREFIX}/notes`

/** One process of the app on `database`, serving `notes` with these fields: a restart after a change of definition. */
async function boot (t: Test, database: DatabaseClient, fields: TObject): Promise<App> {
  const app = await buildApp({ ...NO_RATE_LIMITS, ...NO_EVENT_LOOP_SHEDDING, SECRET_KEY, RESOURCES: [] }, { logger: false, database })
  t.teardown(() => app.close())
  enforceContract(app)
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'notes', fields })
  await app.ready()
  return app
}

const BEFORE = Type.Object({ title: Type.String() })
const AFTER = Type.Object({ title: Type.String(), priority: Type.Integer({ minimum: 1, maximum: 5, default: 3 }) })

t.test('a field added with a default changes every row\'s ETag: the old one is 200 on If-None-Match and 412 on If-Match', async (t) => {
  const database = await freshDatabase(t)
  const first = await boot(t, database, BEFORE)
  const created = await first.inject({ method: 'POST', url: `${NOTES}/`, payload: { title: 'kept' } })
  const url = `${NOTES}/${created.json().id}`
  const old = created.headers.etag as string
  t.equal((await first.inject({ method: 'GET', url, headers: { 'if-none-match': old } })).statusCode, 304, 'before the change, a cache is fresh')

  const second = await boot(t, database, AFTER)
  const read = await second.inject({ method: 'GET', url, headers: { 'if-none-match': old } })
  t.equal(read.statusCode, 200, 'the body gained a field: the cached one is stale')
  t.same(read.json().priority, 3)
  t.not(read.headers.etag, old)
  t.equal((await second.inject({ method: 'GET', url, headers: { 'if-none-match': read.headers.etag as string } })).statusCode, 304)
  assertProblem(t, await second.inject({ method: 'PATCH', url, headers: { 'if-match': old }, payload: { title: 'lost update' } }), 412, 'PRECONDITION_FAILED')
  t.equal((await second.inject({ method: 'GET', url })).json().title, 'kept', 'nothing was written')
  t.equal((await second.inject({ method: 'PATCH', url, headers: { 'if-match': read.headers.etag as string }, payload: { title: 'new' } })).statusCode, 200)
})

t.test('every process with the same definition gives a row the same ETag', async (t) => {
  const database = await freshDatabase(t)
  const first = await boot(t, database, AFTER)
  const created = await first.inject({ method: 'POST', url: `${NOTES}/`, payload: { title: 'shared' } })
  const second = await boot(t, database, AFTER)
  const url = `${NOTES}/${created.json().id}`
  t.equal((await second.inject({ method: 'GET', url })).headers.etag, created.headers.etag)
  t.equal((await second.inject({ method: 'GET', url, headers: { 'if-none-match': created.headers.etag as string } })).statusCode, 304)
})

t.test('a field whose default its own format refuses fails the boot naming the resource and the field, with or without rows', async (t) => {
  const database = await freshDatabase(t)
  const bad = Type.Object({ title: Type.String(), due: Type.String({ format: 'date', default: '2026-02-30' }) })
  const message = 'resource plugin: "notes": field "due": default "2026-02-30" must match format "date": YYYY-MM-DD, from 0001-01-01 to 9999-12-31'
  await t.rejects(boot(t, database, bad), { code: 'RESOURCE_INVALID_OPTIONS', message }, 'a new table')
  const app = await boot(t, database, BEFORE)
  t.equal((await app.inject({ method: 'POST', url: `${NOTES}/`, payload: { title: 'a row' } })).statusCode, 201)
  await t.rejects(boot(t, database, bad), { code: 'RESOURCE_INVALID_OPTIONS', message }, 'a field added to a table with rows')
  t.same((await app.inject({ method: 'GET', url: `${NOTES}/1` })).json().title, 'a row', 'the table is as it was')
})
