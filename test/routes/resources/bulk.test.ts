import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { rowsOf } from '../../../db/raw-rows.js'
import { Reference } from '../../../schemas/fields.js'
import { newAccount } from '../../support/app.js'
import { newKey } from '../../support/idempotency.js'
import { buildResources } from '../../support/resources.js'
import { TaskFields } from '../../support/tasks.js'

const ProjectFields = Type.Object({ name: Type.String() })
const ItemFields = Type.Object({ title: Type.String(), project_id: Type.Optional(Reference('projects')) })

const app = await buildResources(t, [
  'notes',
  { name: 'tasks', fields: TaskFields },
  { name: 'small', fields: TaskFields, maxBatch: 3 },
  { name: 'owned', fields: TaskFields, owner: true },
  { name: 'projects', fields: ProjectFields },
  { name: 'entries', fields: ItemFields }
])
const db = app.plinthDb.db
const count = async (table: string) => Number(rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from ${sql.identifier(table)}`))[0]!.n)
const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: `/api/v1/${url}/`, payload: payload as object, headers })
const validation = (errors: Array<[string, string]>) => ({
  type: 'about:blank',
  title: 'Unprocessable Entity',
  status: 422,
  code: 'VALIDATION_FAILED',
  detail: errors.map(([path, message]) => `${path} ${message}`).join('; '),
  errors: errors.map(([path, message]) => ({ path, message }))
})

t.test('an array creates every row, answered in its order with ascending ids, without Location or ETag', async (t) => {
  const res = await post('tasks', [{ title: 'one' }, { title: 'two', priority: 5, due: '2026-12-01' }, { title: 'three', tags: ['a'] }])
  t.equal(res.statusCode, 201)
  t.match(res.headers['content-type'], /^application\/json/)
  t.equal(res.headers.location, undefined)
  t.equal(res.headers.etag, undefined)
  const rows = res.json() as Array<{ id: number, title: string, priority: number, status: string, due?: string, tags: string[] }>
  t.same(rows.map((row) => row.title), ['one', 'two', 'three'])
  t.same(rows.map((row) => row.id), [...rows.map((row) => row.id)].sort((a, b) => a - b), 'ids ascend in the array\'s order')
  t.same([rows[0]!.status, rows[0]!.priority, rows[1]!.priority, rows[1]!.due, rows[2]!.tags], ['open', 3, 5, '2026-12-01', ['a']], 'defaults and values as a single create stores them')
  for (const row of rows) {
    const read = await app.inject({ method: 'GET', url: `/api/v1/tasks/${row.id}` })
    t.same(read.json(), row, 'each row reads back as it was answered')
  }
})

t.test('a resource of records takes arrays too', async (t) => {
  const res = await post('notes', [{ title: 'a' }, { title: 'b', description: 'two' }])
  t.equal(res.statusCode, 201)
  t.match(res.json(), [{ title: 'a', description: null }, { title: 'b', description: 'two' }])
  const bad = await post('notes', [{ title: 'a' }, { description: 'no title' }])
  t.same(bad.json(), validation([['/body/1/title', 'is required']]))
})

t.test('one object is still a single create, with its Location and ETag', async (t) => {
  const res = await post('tasks', { title: 'alone' })
  t.equal(res.statusCode, 201)
  t.equal(res.headers.location, `/api/v1/tasks/${res.json().id}`)
  t.ok(res.headers.etag)
})

t.test('a 422 names every bad row by its index and field, and nothing is stored', async (t) => {
  const before = await count('tasks')
  const res = await post('tasks', [{ title: 'fine' }, { title: '' }, { priority: 2 }, { title: 'ok', priority: 9 }, { title: 'fine too' }])
  t.equal(res.statusCode, 422)
  t.same(res.json(), validation([
    ['/body/1/title', 'must NOT have fewer than 1 characters'],
    ['/body/2/title', 'is required'],
    ['/body/3/priority', 'must be <= 5']
  ]))
  t.equal(await count('tasks'), before, 'the valid rows were not stored either')
})

t.test('an empty array, or one over maxBatch, is 422 naming the limit; maxBatch rows are created', async (t) => {
  const empty = await post('small', [])
  t.equal(empty.statusCode, 422)
  t.same(empty.json(), validation([['/body', 'must hold at least one row']]))
  const over = await post('small', [{ title: 'a' }, { title: 'b' }, { title: 'c' }, { title: 'd' }])
  t.equal(over.statusCode, 422)
  t.same(over.json(), validation([['/body', 'must hold at most 3 rows, the most one request may create']]))
  t.equal(await count('small'), 0)
  const full = await post('small', [{ title: 'a' }, { title: 'b' }, { title: 'c' }])
  t.equal(full.statusCode, 201)
  t.equal(full.json().length, 3)
  const scalar = await post('small', [7])
  t.same(scalar.json(), validation([['/body/0', 'must be object']]), 'a row that is not an object is named too')
})

t.test('the default maxBatch, 1000 rows, goes in one request, in order', async (t) => {
  const before = await count('tasks')
  const payload = Array.from({ length: 1000 }, (_, i) => i % 3 === 0 ? { title: `row ${i}`, estimate: i } : { title: `row ${i}` })
  const res = await post('tasks', payload)
  t.equal(res.statusCode, 201)
  const rows = res.json() as Array<{ id: number, title: string, estimate?: number }>
  t.same(rows.map((row) => row.title), payload.map((row) => row.title), 'rows of mixed shapes keep their order')
  t.same(rows.filter((row) => typeof row.estimate === 'number').length, 334)
  t.ok(rows.every((row, i) => i === 0 || row.id > rows[i - 1]!.id))
  t.equal(await count('tasks'), before + 1000)
  t.equal((await post('tasks', Array.from({ length: 1001 }, () => ({ title: 'x' })))).statusCode, 422)
})

t.test('Idempotency-Key: a replayed array gets the same rows and creates none', async (t) => {
  const key = newKey()
  const payload = [{ title: 'kept 1' }, { title: 'kept 2' }]
  const first = await post('tasks', payload, { 'idempotency-key': key })
  t.equal(first.statusCode, 201)
  const before = await count('tasks')
  const again = await post('tasks', payload, { 'idempotency-key': key })
  t.equal(again.statusCode, 201)
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.same(again.json(), first.json(), 'the same rows, ids included')
  t.equal(await count('tasks'), before, 'nothing created')
  const other = await post('tasks', [...payload, { title: 'kept 3' }], { 'idempotency-key': key })
  t.equal(other.statusCode, 422, 'another array is another request')
})

t.test('owner mode stamps every row with the writer, whatever the bodies say', async (t) => {
  const [ada, bob] = [await newAccount(app), await newAccount(app)]
  t.equal((await post('owned', [{ title: 'x' }])).statusCode, 401)
  const res = await post('owned', [{ title: 'a', owner_id: bob.user.id }, { title: 'b' }], ada.session.headers)
  t.equal(res.statusCode, 201)
  t.same(res.json().map((row: { owner_id: number }) => row.owner_id), [ada.user.id, ada.user.id])
  const bobs = await app.inject({ method: 'GET', url: '/api/v1/owned/', headers: bob.session.headers })
  t.same(bobs.json(), [])
})

t.test('a duplicate in a bulk is 409 for the whole request, and nothing is stored', async (t) => {
  await db.execute(sql.raw('create unique index small_title_unique on small (title)'))
  const before = await count('small')
  const taken = await post('small', [{ title: 'new one' }, { title: 'a' }])
  t.equal(taken.statusCode, 409)
  t.equal(taken.json().status, 409)
  const twice = await post('small', [{ title: 'same' }, { title: 'same' }])
  t.equal(twice.statusCode, 409, 'two rows of one array that collide')
  t.equal(await count('small'), before)
})

t.test('a reference to a missing row names each row and field, and nothing is stored', async (t) => {
  const project = (await post('projects', { name: 'p' })).json() as { id: number }
  const before = await count('entries')
  const res = await post('entries', [
    { title: 'ok', project_id: project.id }, { title: 'missing', project_id: 999_999 }, { title: 'none' }, { title: 'missing too', project_id: 999_998 }
  ])
  t.equal(res.statusCode, 422)
  const body = res.json()
  t.same(body.errors.map((error: { path: string }) => error.path), ['/body/1/project_id', '/body/3/project_id'])
  t.match(body.errors[0].message, /^must match a row of projects \(foreign key constraint/)
  t.equal(await count('entries'), before)
  const fine = await post('entries', [{ title: 'a', project_id: project.id }, { title: 'b' }])
  t.equal(fine.statusCode, 201)
  t.same(fine.json().map((row: { project_id?: number }) => row.project_id), [project.id, undefined])
})
