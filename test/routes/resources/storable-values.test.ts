import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { buildResources } from '../../support/resources.js'
import { TaskFields } from '../../support/tasks.js'

const app = await buildResources(t, [
  { name: 'tasks', fields: TaskFields },
  { name: 'documents', fields: Type.Object({ data: Type.Unsafe<object>({ type: 'object' }) }) }
])
const json = { 'content-type': 'application/json' }

/** The status and the first error's path of a POST of this JSON text. */
async function post (resource: string, payload: string) {
  const res = await app.inject({ method: 'POST', url: `/api/v1/${resource}/`, headers: json, payload })
  return { status: res.statusCode, path: res.json().errors?.[0]?.path as string | undefined, body: res.json() }
}

t.test('a date or instant outside what PostgreSQL takes is 422 naming the field, never a 500', async (t) => {
  const cases: Array<[string, string]> = [
    ['due', '0000-01-01'],
    ['remind_at', '0000-06-01T00:00:00Z'],
    // Year 1 with a positive offset is year 0 in UTC; 9999 with a negative one is 10000.
    ['remind_at', '0001-01-01T00:30:00+01:00'],
    ['remind_at', '9999-12-31T23:00:00-05:00'],
    // PostgreSQL rounds to milliseconds: this is 10000-01-01.
    ['remind_at', '9999-12-31T23:59:59.9995Z'],
    ['remind_at', '9999-12-31T23:59:60Z'],
    // PostgreSQL takes offsets up to 15:59.
    ['remind_at', '2026-01-01T00:00:00+16:00'],
    ['remind_at', '2026-01-01T00:00:00-23:59'],
    // PostgreSQL reads only T or a plain space between date and time, and at most 128 characters.
    ['remind_at', '2026-01-01\u200a10:00:00Z'],
    ['remind_at', `2026-01-01T10:00:00.${'1'.repeat(150)}Z`]
  ]
  for (const [field, value] of cases) {
    const { status, path } = await post('tasks', JSON.stringify({ title: 'x', [field]: value }))
    t.same({ status, path }, { status: 422, path: `/body/${field}` }, `${field} ${value}`)
  }
})

t.test('dates and instants at the ends of the range, any offset PostgreSQL takes, and leap seconds are stored', async (t) => {
  const cases: Array<[Record<string, string>, Record<string, string>]> = [
    [{ due: '0001-01-01', remind_at: '0001-01-01T00:00:00Z' }, { due: '0001-01-01', remind_at: '0001-01-01T00:00:00.000Z' }],
    [{ due: '9999-12-31', remind_at: '9999-12-31T23:59:59.999Z' }, { due: '9999-12-31', remind_at: '9999-12-31T23:59:59.999Z' }],
    [{ remind_at: '2026-01-01T00:00:00+15:59' }, { remind_at: '2025-12-31T08:01:00.000Z' }],
    [{ remind_at: '2026-12-31T23:59:60Z' }, { remind_at: '2027-01-01T00:00:00.000Z' }]
  ]
  for (const [sent, stored] of cases) {
    const { status, body } = await post('tasks', JSON.stringify({ title: 'x', ...sent }))
    t.equal(status, 201, JSON.stringify(sent))
    t.match(body, stored)
  }
})

t.test('the same values as filters are 422 naming the parameter, never a 500', async (t) => {
  const cases = [
    'due=0000-01-01',
    'due[gte]=0000-12-31',
    'due[in]=2026-01-01,0000-01-01',
    'remind_at[lt]=0000-01-01T00:00:00Z',
    'remind_at[gt]=2026-01-01T00:00:00%2B16:00',
    'created_at[gte]=9999-12-31T23:59:60Z',
    'updated_at[in]=0001-01-01T00:00:00%2B01:00'
  ]
  for (const query of cases) {
    const res = await app.inject({ method: 'GET', url: `/api/v1/tasks/?${query}` })
    t.equal(res.statusCode, 422, query)
    t.equal(res.json().errors?.[0]?.path.split('/')[2], decodeURIComponent(query.slice(0, query.indexOf('='))), query)
  }
})

t.test('NUL characters and lone surrogates in an object field, its keys or strings nested in it are 422 naming where', async (t) => {
  const cases: Array<[string, string]> = [
    ['{"data":{"note":"a\\u0000b"}}', '/body/data/note'],
    ['{"data":{"a\\u0000b":1}}', '/body/data'],
    ['{"data":{"note":"\\ud800"}}', '/body/data/note'],
    ['{"data":{"\\udc00":1}}', '/body/data'],
    ['{"data":{"deep":{"list":["ok","\\u0000"]}}}', '/body/data/deep/list/1'],
    ['{"data":{"list":[{"\\ud83d":true}]}}', '/body/data/list/0']
  ]
  for (const [payload, path] of cases) {
    t.same(await post('documents', payload).then(({ status, path }) => ({ status, path })), { status: 422, path }, payload)
  }
  const paired = await post('documents', '{"data":{"\\ud83d\\ude00":"\\ud83d\\ude00"}}')
  t.equal(paired.status, 201, 'a surrogate pair is a character like any other')
  t.same(paired.body.data, { '\u{1F600}': '\u{1F600}' })
})

t.test('an object field deeper than 32 levels is 422 naming the field', async (t) => {
  const deep = (depth: number) => `{"data":${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}}`
  t.equal((await post('documents', deep(32))).status, 201, '32 levels are stored')
  const refused = await post('documents', deep(33))
  t.same({ status: refused.status, errors: refused.body.errors }, { status: 422, errors: [{ path: '/body/data', message: 'must be at most 32 levels deep' }] })
  const arrays = await post('documents', `{"data":{"a":${'['.repeat(40)}${']'.repeat(40)}}}`)
  t.equal(arrays.path, '/body/data', 'arrays count as levels too')
})

t.test('a value PostgreSQL refuses anyway (its column narrowed behind the API) is 422 naming the field; the others are stored', async (t) => {
  const drifted = await buildResources(t, [{ name: 'drifted', fields: Type.Object({ title: Type.String(), size: Type.Integer() }) }])
  await drifted.plinthDb.db.execute(sql`alter table drifted alter column title type varchar(5), alter column size type smallint`)
  const create = (payload: object) => drifted.inject({ method: 'POST', url: '/api/v1/drifted/', payload })
  const [tooLong, kept, tooBig] = await Promise.all([create({ title: 'too long', size: 1 }), create({ title: 'kept', size: 2 }), create({ title: 'big', size: 40_000 })])
  t.same([tooLong.statusCode, kept.statusCode, tooBig.statusCode], [422, 201, 422])
  t.same(tooLong.json().errors, [{ path: '/body/title', message: 'is not a value the database accepts' }])
  t.equal(tooLong.json().detail, '/body/title is not a value the database accepts')
  t.same(tooBig.json().errors, [{ path: '/body/size', message: 'is not a value the database accepts' }])
  const patched = await drifted.inject({ method: 'PATCH', url: `/api/v1/drifted/${kept.json().id}`, payload: { size: 40_000 } })
  t.same({ status: patched.statusCode, errors: patched.json().errors }, { status: 422, errors: [{ path: '/body/size', message: 'is not a value the database accepts' }] })
  const filtered = await drifted.inject({ method: 'GET', url: '/api/v1/drifted/?size=40000' })
  t.same({ status: filtered.statusCode, errors: filtered.json().errors }, { status: 422, errors: [{ path: '/querystring', message: 'is not a value the database accepts' }] })
})
