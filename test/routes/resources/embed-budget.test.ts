import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { API_PREFIX } from '../../../app.js'
import { resolveResourceOptions } from '../../../routes/resources/options.js'
import { readResourcesFile } from '../../../settings/resources-file.js'
import { Reference } from '../../../schemas/fields.js'
import { buildResources } from '../../support/resources.js'
import { assertProblem } from '../../support/responses.js'

const NO_EVENTS = { events: false }
const Project = Type.Object({ name: Type.String() })
const Task = Type.Object({ title: Type.String(), project_id: Type.Optional(Reference('projects')) })
const Note = Type.Object({ text: Type.String(), project_id: Type.Optional(Reference('projects')) })

// Small budgets, so that a page at the budget is a few hundred rows; `wide` keeps the default.
const app = await buildResources(t, [
  { name: 'projects', fields: Project, maxEmbedRows: 600, routes: NO_EVENTS },
  { name: 'tasks', fields: Task, maxEmbedRows: 5, routes: NO_EVENTS },
  { name: 'notes', fields: Note, routes: NO_EVENTS },
  { name: 'wide', fields: Project, routes: NO_EVENTS },
  { name: 'wide_tasks', fields: Type.Object({ wide_id: Reference('wide') }), routes: NO_EVENTS }
])
const db = app.plinthDb.db
// 4 projects of 200 tasks each, and 6 tasks without one.
await db.execute(sql`insert into projects (name) select 'p' || n from generate_series(1, 4) n`)
await db.execute(sql`insert into tasks (title, project_id) select 't' || n, 1 + n % 4 from generate_series(0, 799) n`)
await db.execute(sql`insert into tasks (title) select 'loose' || n from generate_series(1, 6) n`)
await db.execute(sql`insert into wide (name) values ('w')`)

const get = (url: string) => app.inject({ method: 'GET', url: `${API_PREFIX}${url}` })
const embeddedRows = (rows: Array<Record<string, unknown>>, name: string) => rows.reduce((sum, row) => sum + (row[name] as unknown[]).length, 0)

t.test('attack: a page of rows each with a thousand embedded rows is refused before any query, naming the parameters and the budget', async (t) => {
  const res = await get('/projects/?limit=4&embed=tasks&tasks.limit=151')
  assertProblem(t, res, 422, 'VALIDATION_FAILED')
  const detail = '/querystring/embed would embed up to 604 rows (limit 4 × (tasks.limit 151)), past the 600 rows one answer of projects may embed (maxEmbedRows): lower limit or tasks.limit, or embed fewer'
  t.equal(res.json().detail, detail)
  t.same(res.json().errors, [{ path: '/querystring/embed', message: detail.slice('/querystring/embed '.length) }])
})

t.test('a request right at the budget passes, with every row it counted', async (t) => {
  const res = await get('/projects/?limit=4&embed=tasks&tasks.limit=150')
  t.equal(res.statusCode, 200)
  t.equal(embeddedRows(res.json(), 'tasks'), 600, '4 pages rows × 150 tasks each')
  t.equal((await get('/projects/?limit=3&embed=tasks&tasks.limit=200')).statusCode, 200, '3 × 200')
  t.equal((await get('/projects/?limit=3&embed=tasks&tasks.limit=201')).statusCode, 422, '3 × 201')
})

t.test('the budget counts the limits as they are reduced: the page\'s and each embed\'s maxLimit', async (t) => {
  const res = await get('/projects/?limit=5000&embed=tasks&tasks.limit=5000')
  t.equal(res.statusCode, 422)
  t.match(res.json().detail, /^\/querystring\/embed would embed up to 1000000 rows \(limit 1000 × \(tasks\.limit 1000\)\)/)
})

t.test('every embed counts: a single row is one per page row, and lists add up', async (t) => {
  t.equal((await get('/tasks/?limit=5&embed=project')).statusCode, 200, '5 × 1')
  const res = await get('/tasks/?limit=6&embed=project')
  t.equal(res.statusCode, 422)
  t.equal(res.json().detail, '/querystring/embed would embed up to 6 rows (limit 6 × (project 1)), past the 5 rows one answer of tasks may embed (maxEmbedRows): lower limit, or embed fewer')
  const both = await get('/projects/?limit=2&embed=tasks,notes&tasks.limit=200&notes.limit=101')
  t.equal(both.statusCode, 422)
  t.match(both.json().detail, /up to 602 rows \(limit 2 × \(tasks\.limit 200 \+ notes\.limit 101\)\).*lower limit or tasks\.limit or notes\.limit, or embed fewer$/)
  t.equal((await get('/projects/?limit=2&embed=tasks,notes&tasks.limit=200&notes.limit=100')).statusCode, 200, '2 × 300')
})

t.test('one row by id counts as a page of one', async (t) => {
  t.equal((await get('/projects/1?embed=tasks&tasks.limit=600')).statusCode, 200)
  const res = await get('/projects/1?embed=tasks&tasks.limit=601')
  t.equal(res.statusCode, 422)
  t.equal(res.json().detail, '/querystring/embed would embed up to 601 rows (1 row × (tasks.limit 601)), past the 600 rows one answer of projects may embed (maxEmbedRows): lower tasks.limit, or embed fewer')
})

t.test('the default budget, 20000, lets the default page embed a default list, and refuses a million rows', async (t) => {
  t.equal((await get('/wide/?embed=wide_tasks')).statusCode, 200, '100 × 100')
  t.equal((await get('/wide/?limit=100&embed=wide_tasks&wide_tasks.limit=200')).statusCode, 200, '100 × 200')
  const res = await get('/wide/?limit=1000&embed=wide_tasks&wide_tasks.limit=1000')
  t.equal(res.statusCode, 422)
  t.match(res.json().detail, /up to 1000000 rows .*past the 20000 rows one answer of wide may embed/)
})

t.test('the OpenAPI document states the budget on the embed parameter', async (t) => {
  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const embed = document.paths[`${API_PREFIX}/projects`].get.parameters.find((parameter: { name: string }) => parameter.name === 'embed')
  t.match(embed.description, /One answer embeds at most 600 rows/)
})

t.test('maxEmbedRows is an option with bounds, in RESOURCES_FILE too', async (t) => {
  t.equal(resolveResourceOptions({ name: 'projects' }).maxEmbedRows, 20000)
  for (const value of [0, 1_000_001, 1.5]) {
    t.throws(() => resolveResourceOptions({ name: 'projects', maxEmbedRows: value }), { code: 'RESOURCE_INVALID_OPTIONS', message: /maxEmbedRows must be an integer from 1 to 1000000/ }, String(value))
  }
  const dir = await mkdtemp(join(tmpdir(), 'plinth-embed-budget-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'resources.json')
  await writeFile(path, JSON.stringify({ projects: { fields: { type: 'object', properties: { name: { type: 'string' } } }, maxEmbedRows: 500 } }))
  t.equal(readResourcesFile(path)[0]!.options.maxEmbedRows, 500)
  await writeFile(path, JSON.stringify({ projects: { fields: { type: 'object', properties: { name: { type: 'string' } } }, maxEmbedRows: 0 } }))
  t.throws(() => readResourcesFile(path), /projects: maxEmbedRows must be an integer from 1 to 1000000/)
})
