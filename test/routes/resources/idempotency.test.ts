import { Type } from '@sinclair/typebox'
import { count } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import t from 'tap'
import { API_PREFIX } from '../../../app.js'
import { buildResourceTable } from '../../../db/resource-table.js'
import { resourceTable } from '../../../db/schema.js'
import { newAccount } from '../../support/app.js'
import { idempotencyTests, newKey } from '../../support/idempotency.js'
import { buildResources } from '../../support/resources.js'
import { TaskFields } from '../../support/tasks.js'

const NestedFields = Type.Object({
  title: Type.String(),
  priority: Type.Integer(),
  meta: Type.Object({ source: Type.String(), rank: Type.Integer(), tags: Type.Array(Type.Object({ a: Type.String(), b: Type.String() })) })
})
const app = await buildResources(t, [
  'notes', { name: 'tasks', fields: TaskFields }, { name: 'owned', fields: TaskFields, owner: true }, { name: 'nested', fields: NestedFields }
])
const db = app.plinthDb.db
const rowsOf = (table: PgTable) => async () => (await db.select({ n: count() }).from(table))[0]!.n
let n = 0

t.test('records', async (t) => {
  idempotencyTests(t, app, { url: `${API_PREFIX}/notes/`, body: () => ({ title: `note ${++n}` }), rows: rowsOf(resourceTable('notes')) })
})

t.test('rows defined by fields', async (t) => {
  idempotencyTests(t, app, { url: `${API_PREFIX}/tasks/`, body: () => ({ title: `task ${++n}` }), rows: rowsOf(buildResourceTable('tasks', [], {})) })
})

t.test('an owner\'s rows: a key is per user, whatever the address', async (t) => {
  const [ada, bob] = [await newAccount(app), await newAccount(app)]
  const owned = rowsOf(buildResourceTable('owned', [], { owner: true }))
  idempotencyTests(t, app, { url: `${API_PREFIX}/owned/`, body: () => ({ title: `owned ${++n}` }), rows: owned, headers: ada.session.headers })
  t.test('the same key from two users creates a row for each', async (t) => {
    const key = newKey()
    const before = await owned()
    const answers = await Promise.all([ada, bob].map(({ session }) => app.inject({
      method: 'POST', url: `${API_PREFIX}/owned/`, payload: { title: 'same' }, headers: { ...session.headers, 'idempotency-key': key }
    })))
    t.same(answers.map((res) => res.statusCode), [201, 201])
    t.same(answers.map((res) => res.headers['idempotent-replayed']), [undefined, undefined])
    t.equal(await owned(), before + 2)
  })
})

t.test('a created row has its URL in Location', async (t) => {
  for (const name of ['notes', 'tasks']) {
    const res = await app.inject({ method: 'POST', url: `${API_PREFIX}/${name}/`, payload: { title: 'located' } })
    t.equal(res.headers.location, `${API_PREFIX}/${name}/${res.json().id}`)
    t.equal((await app.inject({ method: 'GET', url: String(res.headers.location) })).statusCode, 200, name)
  }
})

t.test('one key, the same body with its keys in another order (JSON text as sent): a replay, not a 422', async (t) => {
  const key = newKey()
  const post = (payload: string, url = `${API_PREFIX}/tasks/`) =>
    app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', 'idempotency-key': key } })
  const first = await post('{"priority":2,"title":"x"}')
  t.equal(first.statusCode, 201)
  const again = await post('{"title":"x","priority":2}')
  t.equal(again.statusCode, 201, 'not 422')
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.equal(again.json().id, first.json().id, 'the first row, not a second one')
  const other = await post('{"title":"x","priority":3}')
  t.equal(other.statusCode, 422, 'another value is still another request')
})

t.test('key order does not count at any depth, while array order does', async (t) => {
  const key = newKey()
  const url = `${API_PREFIX}/nested/`
  const post = (payload: string) => app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', 'idempotency-key': key } })
  const first = await post('{"title":"n","priority":1,"meta":{"source":"s","rank":2,"tags":[{"a":"1","b":"2"},{"a":"3","b":"4"}]}}')
  t.equal(first.statusCode, 201)
  const again = await post('{"meta":{"tags":[{"b":"2","a":"1"},{"b":"4","a":"3"}],"rank":2,"source":"s"},"priority":1,"title":"n"}')
  t.equal(again.statusCode, 201)
  t.equal(again.headers['idempotent-replayed'], 'true')
  const swapped = await post('{"title":"n","priority":1,"meta":{"source":"s","rank":2,"tags":[{"a":"3","b":"4"},{"a":"1","b":"2"}]}}')
  t.equal(swapped.statusCode, 422, 'another order of the array is another body')
})
