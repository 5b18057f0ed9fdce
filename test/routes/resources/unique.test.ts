import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { API_PREFIX, buildApp, type App } from '../../../app.js'
import { rowsOf } from '../../../db/raw-rows.js'
import resourcePlugin, { type ResourceOptions } from '../../../routes/resources/index.js'
import { NO_EVENT_LOOP_SHEDDING, NO_RATE_LIMITS, newAccount } from '../../support/app.js'
import { freshDatabase } from '../../support/database.js'
import { buildResources } from '../../support/resources.js'
import { assertProblem } from '../../support/responses.js'

// The change feed is another part's: these tests are about the tables.
const NO_EVENTS = { events: false }

const Tag = Type.Object({ slug: Type.Optional(Type.String()), kind: Type.String(), title: Type.String() })
const Doc = Type.Object({ slug: Type.String(), code: Type.String(), title: Type.String() })

const app = await buildResources(t, [
  { name: 'tags', fields: Tag, unique: ['slug', ['kind', 'title']], routes: NO_EVENTS },
  { name: 'docs', fields: Doc, owner: true, unique: ['slug', { fields: ['code'], global: true }], routes: NO_EVENTS }
])

const TAGS = `${API_PREFIX}/tags`
const DOCS = `${API_PREFIX}/docs`

async function create (app: App, url: string, payload: object, headers: Record<string, string> = {}) {
  const res = await app.inject({ method: 'POST', url: `${url}/`, payload, headers })
  if (res.statusCode !== 201) throw new Error(`POST ${url}: ${res.statusCode} ${res.payload}`)
  return res.json() as { id: number }
}

/** A 409 RESOURCE_CONFLICT whose detail names the fields and never the value sent. */
function assertConflict (t: Test, res: Awaited<ReturnType<App['inject']>>, detail: string, ...values: string[]) {
  assertProblem(t, res, 409, 'RESOURCE_CONFLICT')
  t.equal(res.json().detail, detail)
  for (const value of values) t.notOk(res.payload.includes(value), `the answer does not tell the value ${value}`)
}

t.test('a duplicate of a unique field is 409 naming the field, never the value', async (t) => {
  await create(app, TAGS, { slug: 'secret-slug', kind: 'a', title: 'One' })
  const res = await app.inject({ method: 'POST', url: `${TAGS}/`, payload: { slug: 'secret-slug', kind: 'b', title: 'Two' } })
  assertConflict(t, res, 'Another row of tags already has this slug', 'secret-slug')
  await create(app, TAGS, { kind: 'c', title: 'no slug' })
  await create(app, TAGS, { kind: 'd', title: 'no slug' })
  t.pass('rows without a value do not collide')
})

t.test('a composite key names every field of it', async (t) => {
  await create(app, TAGS, { kind: 'colour', title: 'Hidden Red' })
  const res = await app.inject({ method: 'POST', url: `${TAGS}/`, payload: { kind: 'colour', title: 'Hidden Red' } })
  assertConflict(t, res, 'Another row of tags already has this kind and title', 'Hidden Red', 'colour')
  await create(app, TAGS, { kind: 'shape', title: 'Hidden Red' })
  t.pass('the same title of another kind is fine')
})

t.test('PATCH and PUT into a duplicate are 409, and change nothing', async (t) => {
  await create(app, TAGS, { slug: 'taken', kind: 'x', title: 'taken' })
  const mine = await create(app, TAGS, { slug: 'mine', kind: 'x', title: 'mine' })
  const url = `${TAGS}/${mine.id}`
  assertConflict(t, await app.inject({ method: 'PATCH', url, payload: { slug: 'taken' } }), 'Another row of tags already has this slug', 'taken')
  assertConflict(t, await app.inject({ method: 'PUT', url, payload: { slug: 'mine', kind: 'x', title: 'taken' } }), 'Another row of tags already has this kind and title')
  t.match((await app.inject({ method: 'GET', url })).json(), { slug: 'mine', kind: 'x', title: 'mine' }, 'the row is as it was')
  t.equal((await app.inject({ method: 'PATCH', url, payload: { slug: 'mine-too' } })).statusCode, 200)
})

t.test('in owner mode a key is per owner, unless global', async (t) => {
  const alice = await newAccount(app)
  const bob = await newAccount(app)
  await create(app, DOCS, { slug: 'readme', code: 'A-1', title: 'alice' }, alice.session.headers)
  await create(app, DOCS, { slug: 'readme', code: 'B-1', title: 'bob' }, bob.session.headers)
  t.pass('two owners may each have the slug')
  const again = await app.inject({ method: 'POST', url: `${DOCS}/`, payload: { slug: 'readme', code: 'A-2', title: 'twice' }, headers: alice.session.headers })
  assertConflict(t, again, 'Another row of docs already has this slug', 'readme')
  const global = await app.inject({ method: 'POST', url: `${DOCS}/`, payload: { slug: 'other', code: 'A-1', title: 'bob' }, headers: bob.session.headers })
  assertConflict(t, global, 'Another row of docs already has this code', 'A-1')
  const indexes = rowsOf<{ def: string }>(await app.plinthDb.db.execute(sql`select indexdef as def from pg_indexes where tablename = 'docs' and indexname in ('docs_code_key', 'docs_slug_key') order by indexname`))
  t.match(indexes.map((row) => row.def), [/UNIQUE INDEX docs_code_key .*\(code\)/, /UNIQUE INDEX docs_slug_key .*\(owner_id, slug\)/])
})

t.test('20 racing creates of one slug: one 201, nineteen 409 RESOURCE_CONFLICT, and one row', async (t) => {
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    app.inject({ method: 'POST', url: `${TAGS}/`, payload: { slug: 'raced', kind: 'race', title: `racer ${i}` } })))
  const statuses = answers.map((res) => res.statusCode)
  t.equal(statuses.filter((status) => status === 201).length, 1, 'exactly one created')
  const refused = answers.filter((res) => res.statusCode === 409)
  t.equal(refused.length, 19, 'every other one refused')
  t.ok(refused.every((res) => res.json().code === 'RESOURCE_CONFLICT' && res.json().detail === 'Another row of tags already has this slug'))
  const stored = rowsOf<{ n: number }>(await app.plinthDb.db.execute(sql`select count(*)::int as n from tags where slug = 'raced'`))
  t.same(stored, [{ n: 1 }], 'one row stored')
})

t.test('a unique key added to a table whose rows collide fails the boot, naming the fields and how to find them', async (t) => {
  const database = await freshDatabase(t)
  const boot = async (options: Partial<ResourceOptions>) => {
    const app = await buildApp({ ...NO_RATE_LIMITS, ...NO_EVENT_LOOP_SHEDDING, RESOURCES: [] }, { logger: false, database })
    t.teardown(() => app.close())
    await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tags', fields: Tag, routes: NO_EVENTS, ...options })
    await app.ready()
    return app
  }
  const first = await boot({})
  for (const slug of ['dup', 'dup', 'single']) await create(first, TAGS, { slug, kind: 'k', title: slug })
  await t.rejects(boot({ unique: ['slug'] }), {
    code: 'RESOURCE_TABLE_INVALID',
    message: 'tags: the unique key (slug) cannot be added: rows already stored share a slug; find them with SELECT "slug", count(*) FROM "tags" ' +
      'GROUP BY "slug" HAVING count(*) > 1, change or delete all but one of each, and restart; or remove the key'
  })
  t.equal((await create(first, TAGS, { slug: 'dup', kind: 'k', title: 'third' })).id, 4, 'the table is as it was: no key')
  await first.inject({ method: 'DELETE', url: `${TAGS}/1` })
  await first.inject({ method: 'DELETE', url: `${TAGS}/4` })
  const second = await boot({ unique: ['slug'] })
  assertConflict(t, await second.inject({ method: 'POST', url: `${TAGS}/`, payload: { slug: 'dup', kind: 'k', title: 'again' } }), 'Another row of tags already has this slug')
})
