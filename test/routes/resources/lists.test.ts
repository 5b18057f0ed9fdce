import t from 'tap'
import { buildResources } from '../../support/resources.js'
import { TaskFields, createTask } from '../../support/tasks.js'

const app = await buildResources(t, [{ name: 'tasks', fields: TaskFields, indexes: ['priority', 'due'] }])
const TASKS = '/api/v1/tasks/'

const seed = [
  { title: 'Alpha 100%', status: 'open', priority: 1, estimate: 1.5, due: '2026-12-01', tags: ['home'] },
  { title: 'beta_task', status: 'doing', priority: 3, estimate: null, due: '2026-12-05', tags: ['work', 'q4'] },
  { title: 'Gamma', status: 'done', priority: 5, estimate: 8, tags: [] },
  { title: 'delta', status: 'open', priority: 3, estimate: 2, due: '2026-11-30', tags: ['work'] },
  { title: 'ALPHA two', status: 'doing', priority: 2, due: '2026-12-05', tags: ['home', 'work'] }
]
for (const task of seed) await createTask(app, task)

async function titles (query: string) {
  const res = await app.inject({ method: 'GET', url: `${TASKS}?${query}` })
  if (res.statusCode !== 200) throw new Error(`${query}: ${res.statusCode} ${res.payload}`)
  return (res.json() as Array<{ title: string }>).map((task) => task.title)
}

t.test('filters: equality and every operator, typed by the field', async (t) => {
  t.same(await titles('status=open'), ['Alpha 100%', 'delta'])
  t.same(await titles('status[ne]=open'), ['beta_task', 'Gamma', 'ALPHA two'])
  t.same(await titles('priority[gte]=3'), ['beta_task', 'Gamma', 'delta'])
  t.same(await titles('priority[lt]=3'), ['Alpha 100%', 'ALPHA two'])
  t.same(await titles('priority[gt]=1&priority[lte]=3'), ['beta_task', 'delta', 'ALPHA two'], 'filters combine with AND')
  t.same(await titles('status[in]=done,doing'), ['beta_task', 'Gamma', 'ALPHA two'])
  t.same(await titles('priority[in]=1,5'), ['Alpha 100%', 'Gamma'])
  t.same(await titles('title[contains]=alpha'), ['Alpha 100%', 'ALPHA two'], 'case-insensitive')
  t.same(await titles('title[contains]=100%25'), ['Alpha 100%'], '% is a character, not a wildcard')
  t.same(await titles('title[contains]=a_t'), ['beta_task'], '_ is a character, not a wildcard')
  t.same(await titles('estimate[is]=null'), ['beta_task', 'ALPHA two'])
  t.same(await titles('estimate[is]=not_null'), ['Alpha 100%', 'Gamma', 'delta'])
  t.same(await titles('estimate[ne]=2'), ['Alpha 100%', 'beta_task', 'Gamma', 'ALPHA two'], 'ne keeps the rows without a value')
  t.same(await titles('due[lt]=2026-12-02'), ['Alpha 100%', 'delta'])
  t.same(await titles('due[is]=null'), ['Gamma'])
  t.same(await titles('tags[contains]=work'), ['beta_task', 'delta', 'ALPHA two'])
  t.same(await titles('done=false&id[gt]=3'), ['delta', 'ALPHA two'])
})

t.test('a filter on an unknown field, or with an operator its type lacks, is 422 naming it', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['colour=red', '/querystring/colour', /is not a filter: the fields are id, created_at, updated_at, title/],
    ['done[gt]=true', '/querystring/done[gt]', /done \(boolean\) takes done, done\[ne\], done\[is\]/],
    ['meta=x', '/querystring/meta', /meta \(jsonb\) takes meta\[is\]/],
    ['priority=high', '/querystring/priority', /must be integer/],
    ['priority[in]=1,x', '/querystring/priority[in]/1', /must be integer/],
    ['status=later', '/querystring/status', /must be equal to one of the allowed values/],
    ['due[gte]=soon', '/querystring/due[gte]', /must match format "date"/],
    ['estimate[is]=empty', '/querystring/estimate[is]', /must be equal to one of the allowed values/],
    ['sort=colour', '/querystring/sort', /cannot sort by "colour": sortable fields are id, created_at, updated_at, title/],
    ['sort=-tags', '/querystring/sort', /cannot sort by "tags"/],
    ['count=estimated', '/querystring/count', /must be equal to one of the allowed values/],
    ['cursor=garbage', '/querystring/cursor', /./]
  ]
  for (const [query, path, message] of cases) {
    const res = await app.inject({ method: 'GET', url: `${TASKS}?${query}` })
    t.equal(res.statusCode, 422, query)
    t.equal(res.json().errors?.[0]?.path, path, query)
    t.match(res.json().errors?.[0]?.message, message, query)
  }
})

t.test('sort: several fields, either direction, ties broken by id in the last field\'s direction', async (t) => {
  t.same(await titles('sort=-priority'), ['Gamma', 'delta', 'beta_task', 'ALPHA two', 'Alpha 100%'])
  t.same(await titles('sort=-priority,id'), ['Gamma', 'beta_task', 'delta', 'ALPHA two', 'Alpha 100%'], 'unless the sort names id')
  t.same(await titles('sort=priority,-title'), ['Alpha 100%', 'ALPHA two', 'delta', 'beta_task', 'Gamma'])
  t.same(await titles('sort=due'), ['delta', 'Alpha 100%', 'beta_task', 'ALPHA two', 'Gamma'], 'rows without a value come last ascending')
  t.same(await titles('sort=-due'), ['Gamma', 'ALPHA two', 'beta_task', 'Alpha 100%', 'delta'], 'and first descending')
})

t.test('pages: limit and offset, a Link to the next page by cursor, and the total on request', async (t) => {
  const first = await app.inject({ method: 'GET', url: `${TASKS}?sort=-priority&limit=2&count=exact&status[ne]=done` })
  t.same(first.json().map((task: { title: string }) => task.title), ['delta', 'beta_task'])
  t.equal(first.headers['x-total-count'], '4')
  const link = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link))?.[1]
  t.ok(link, 'a next link')
  t.match(link, /^\/api\/v1\/tasks\/\?.*cursor=/)
  t.match(link, /status%5Bne%5D=done|status\[ne\]=done/, 'the filters carry over')
  const second = await app.inject({ method: 'GET', url: link! })
  t.same(second.json().map((task: { title: string }) => task.title), ['ALPHA two', 'Alpha 100%'])
  t.equal(second.headers.link, undefined, 'the last page has no next link')
  t.same(await titles('sort=-priority&limit=2&offset=2&status[ne]=done'), ['ALPHA two', 'Alpha 100%'], 'offset pages agree')
  t.equal((await app.inject({ method: 'GET', url: `${TASKS}?limit=2` })).headers['x-total-count'], undefined, 'no count unless asked')
  const cursor = new URL(link!, 'http://x').searchParams.get('cursor')
  const foreign = await app.inject({ method: 'GET', url: `${TASKS}?sort=title&cursor=${cursor!}` })
  t.equal(foreign.statusCode, 422, 'a cursor from another sort is refused')
})

t.test('walking every page by cursor gives every row once, for any sort', async (t) => {
  for (let i = 0; i < 25; i++) await createTask(app, { title: `bulk ${i}`, priority: 1 + (i % 5), estimate: i % 3 === 0 ? null : i })
  const all = (await app.inject({ method: 'GET', url: `${TASKS}?limit=1000` })).json().length
  for (const sort of ['id', '-priority', 'estimate,-title', '-estimate,priority', 'due,-id', '-updated_at']) {
    const seen: number[] = []
    let url: string | undefined = `${TASKS}?sort=${sort}&limit=4`
    while (url !== undefined) {
      const res: { json (): Array<{ id: number }>, headers: Record<string, unknown> } = await app.inject({ method: 'GET', url })
      seen.push(...res.json().map((task: { id: number }) => task.id))
      url = /^<([^>]+)>/.exec(String(res.headers.link ?? ''))?.[1]
    }
    const ordered = (await app.inject({ method: 'GET', url: `${TASKS}?sort=${sort}&limit=1000` })).json().map((task: { id: number }) => task.id)
    t.same(seen, ordered, `${sort}: the pages are the full list, in order`)
    t.equal(new Set(seen).size, all, `${sort}: every row once`)
  }
})
