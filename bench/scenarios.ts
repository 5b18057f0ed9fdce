import type autocannon from 'autocannon'
import { call, times } from './http.js'
import type { Scenario } from './scenario.js'
import { POOL_MODES, pooledName, poolerAvailable } from './pooler.js'
import { authScenarios } from './scenarios-auth.js'
import { resizeItems } from './seed-items.js'
import { resizeTasks } from './seed-tasks.js'

export type { Scenario } from './scenario.js'

const ITEMS = '/api/v1/items'
// The catalog again, without ETags: bench/app-server.ts registers it for the observability pair.
const PLAIN_ITEMS = '/plain/api/v1/items'
const ITEM_BODY = { name: 'bench item', description: 'created by npm run bench', price: 9.99, in_stock: true }
const RECORDS = '/api/v1/records'
const TASKS = '/api/v1/tasks'
// The same variable bench/run.ts hands to the app server.
const database = process.env.BENCH_DATABASE_URL || 'memory://'
export const onPostgres = /^postgres(ql)?:\/\//.test(database)

interface ItemPage { total: number, items: Array<{ id: number }> }

const createItem = (baseUrl: string) =>
  call<{ id: number }>(baseUrl, ITEMS, { method: 'POST', body: { name: 'bench item', price: 9.99 } })

/**
 * Brings the catalog to `count` items. On PostgreSQL straight through the database (one
 * INSERT ... SELECT: a million rows in about 40 s); an in-memory PGlite lives inside the app
 * process, so it is topped up over HTTP, which is only practical for small counts.
 */
async function catalogOf (count: number, baseUrl: string) {
  if (onPostgres) {
    const { before, ms } = await resizeItems(database, count)
    console.error(`items: ${before} -> ${count} (${(ms / 1000).toFixed(1)} s)`)
    return
  }
  const missing = count - (await call<ItemPage>(baseUrl, `${ITEMS}?limit=1`)).total
  await times(missing, 50, () => createItem(baseUrl))
}

/** Up to `count` ids of existing items, walked by keyset pages (the table may have gaps). */
async function itemIds (baseUrl: string, count: number) {
  const ids: number[] = []
  while (ids.length < count) {
    const after = ids.length ? `&after_id=${ids.at(-1)!}` : ''
    const page = await call<ItemPage>(baseUrl, `${ITEMS}?limit=100${after}`)
    if (!page.items.length) break
    ids.push(...page.items.map((item) => item.id))
  }
  return ids
}

// Requests each connection draws: 50 connections' draws cover a 10,000-id table several times.
const DRAWS = 1000

/**
 * GETs of paths drawn at random, each connection its own draws: no single hot row or cached page.
 * They are drawn and built once per connection, because autocannon's per-request rewriting cost
 * its core (which PostgreSQL shares) 7 µs a request that the bare route's fixed path does not.
 */
function randomGets (paths: string[], request: Omit<autocannon.Request, 'path'> = { method: 'GET' }): () => autocannon.Request[] {
  return () => Array.from({ length: DRAWS }, () => ({ ...request, path: paths[Math.floor(Math.random() * paths.length)]! }))
}

/** GETs (or `request`) of `prefix/<id>` with ids drawn at random. */
function randomIds (prefix: string, ids: number[], request?: Omit<autocannon.Request, 'path'>) {
  if (!ids.length) throw new Error(`no ids to request under ${prefix}`)
  return randomGets(ids.map((id) => `${prefix}/${id}`), request)
}

/**
 * Brings the tasks table to `count` rows on PostgreSQL (one INSERT ... SELECT). An in-memory PGlite
 * holds the 10,000 the app seeded at boot, which the scenarios before task-post leave as they are.
 */
async function tasksOf (count: number) {
  if (!onPostgres) return
  const { before, ms } = await resizeTasks(database, count)
  console.error(`tasks: ${before} -> ${count} (${(ms / 1000).toFixed(1)} s)`)
}

/** Up to `count` ids of existing tasks, walked by id filter (the table may have gaps). */
async function taskIds (baseUrl: string, count: number) {
  const ids: number[] = []
  while (ids.length < count) {
    const page = await call<Array<{ id: number }>>(baseUrl, `${TASKS}/?limit=100&id[gt]=${ids.at(-1) ?? 0}`)
    if (!page.length) break
    ids.push(...page.map((task) => task.id))
  }
  return ids
}

// Open tasks by priority, highest first: a filter and a sort on a table's own fields.
const TASK_LIST = `${TASKS}/?status=open&sort=-priority&limit=20`
// Every field given, as record-post gives both of its own.
const TASK_BODY = { title: 'bench task', status: 'doing', priority: 4, estimate: 2.5, due: '2025-06-30', remind_at: '2025-06-29T09:00:00.000Z', done: false, tags: ['bench', 'work'] }

const MILLION = 1_000_000
// --quick is a smoke test: every scenario must answer, not measure, and seeding 1M takes ~35 s.
const large = (quick: boolean) => quick ? 100_000 : MILLION

const atOneMillion: Scenario[] = [
  {
    name: 'items-list-1m',
    path: ITEMS,
    postgresOnly: true,
    setup: async (baseUrl, { quick }) => { await catalogOf(large(quick), baseUrl) }
  },
  {
    // The deep page through keyset: the same cost as the first page.
    name: 'items-keyset-1m',
    path: ITEMS,
    postgresOnly: true,
    setup: async (baseUrl, { quick }) => {
      await catalogOf(large(quick), baseUrl)
      const deep = (await call<ItemPage>(baseUrl, `${ITEMS}?offset=${large(quick) - 1000}&limit=1`)).items[0]!.id
      return { path: `${ITEMS}?after_id=${deep}` }
    }
  },
  {
    // A selective ?q= (about 20 matches in the seeded million), served by the trigram index.
    name: 'items-search-1m',
    path: `${ITEMS}?q=desk%201234`,
    postgresOnly: true,
    setup: async (baseUrl, { quick }) => { await catalogOf(large(quick), baseUrl) }
  },
  {
    // A common term: one name in eight contains "desk", so the exact total counts 125,000 matches.
    name: 'items-search-common-1m',
    path: `${ITEMS}?q=desk`,
    postgresOnly: true,
    setup: async (baseUrl, { quick }) => { await catalogOf(large(quick), baseUrl) }
  },
  {
    // The contrast: the same depth through offset, whose cost grows with it.
    name: 'items-offset-1m',
    path: ITEMS,
    postgresOnly: true,
    setup: async (baseUrl, { quick }) => {
      await catalogOf(large(quick), baseUrl)
      return { path: `${ITEMS}?offset=${large(quick) - 1000}` }
    }
  }
]

/** GETs of random items among 10,000, through the catalog at `prefix`. */
const itemGet = (name: string, prefix: string, extra: Partial<Scenario> = {}): Scenario => ({
  name,
  path: prefix,
  setup: async (baseUrl) => {
    await catalogOf(10_000, baseUrl)
    return { perConnection: randomIds(prefix, await itemIds(baseUrl, 10_000)) }
  },
  ...extra
})

const itemPost = (name: string, prefix: string, extra: Partial<Scenario> = {}): Scenario => ({ name, method: 'POST', path: prefix, body: ITEM_BODY, ...extra })

/** Metrics on and ETags computed, against both off: `--observability` runs these four alone. */
export const observability: Scenario[] = [
  itemGet('item-get-plain', PLAIN_ITEMS),
  itemGet('item-get-observed', ITEMS, { server: 'observed', against: 'item-get-plain' }),
  itemPost('item-post-plain', PLAIN_ITEMS),
  itemPost('item-post-observed', ITEMS, { server: 'observed', against: 'item-post-plain' })
]

/** item-get and item-post again through PgBouncer, in each pool mode, in the direct one's rounds. */
const pooled: Scenario[] = POOL_MODES.flatMap((mode) => [
  itemGet(pooledName('item-get', mode), ITEMS, { against: 'item-get', postgresOnly: true }),
  itemPost(pooledName('item-post', mode), ITEMS, { against: 'item-post', postgresOnly: true })
])

const BROWSER_ENCODINGS = 'gzip, deflate, br'

const everyScenario: Scenario[] = [
  { name: 'health', path: '/api/v1/health' },
  { name: 'readiness', path: '/api/v1/health/ready' },
  { name: 'openapi', path: '/docs/json' },
  // As Swagger UI fetches it: a browser takes br and gzip.
  { name: 'openapi-browser', path: '/docs/json', headers: { 'accept-encoding': BROWSER_ENCODINGS } },
  {
    // A browser that has it already asks whether it changed: a 304 with no body.
    name: 'openapi-revalidate',
    path: '/docs/json',
    expect: 304,
    setup: async (baseUrl) => {
      const res = await fetch(`${baseUrl}/docs/json`, { headers: { 'accept-encoding': BROWSER_ENCODINGS } })
      await res.arrayBuffer()
      return { headers: { 'accept-encoding': BROWSER_ENCODINGS, 'if-none-match': res.headers.get('etag')! } }
    }
  },
  {
    name: 'items-list-10k',
    path: ITEMS,
    setup: async (baseUrl) => { await catalogOf(10_000, baseUrl) }
  },
  {
    // A page drawn at random among the catalog's 500 per request: no two requests of a turn share
    // a query, so PostgreSQL sets the pace, and requests live long enough to reach V8's old space.
    name: 'items-pages-10k',
    path: ITEMS,
    setup: async (baseUrl) => {
      await catalogOf(10_000, baseUrl)
      return { perConnection: randomGets(Array.from({ length: 500 }, (_, page) => `${ITEMS}?offset=${page * 20}&limit=20`)) }
    }
  },
  itemGet('item-get', ITEMS),
  ...atOneMillion,
  itemPost('item-post', ITEMS),
  ...pooled,
  ...observability,
  {
    name: 'item-patch',
    method: 'PATCH',
    path: ITEMS,
    setup: async (baseUrl) => {
      await catalogOf(10_000, baseUrl)
      const patch = { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ price: 19.99 }) }
      return { perConnection: randomIds(ITEMS, await itemIds(baseUrl, 10_000), patch) }
    }
  },
  {
    // Every connection at one row: PostgreSQL's row lock, and the batch's rounds, put them in turn.
    name: 'item-patch-hot',
    method: 'PATCH',
    path: ITEMS,
    body: { price: 19.99 },
    setup: async (baseUrl) => ({ path: `${ITEMS}/${(await createItem(baseUrl)).id}` })
  },
  {
    name: 'record-get',
    path: RECORDS,
    setup: async (baseUrl) => {
      const ids: number[] = []
      await times(200, 20, async () => {
        ids.push((await call<{ id: number }>(baseUrl, `${RECORDS}/`, { method: 'POST', body: { title: 'bench record' } })).id)
      })
      return { perConnection: randomIds(RECORDS, ids) }
    }
  },
  {
    name: 'record-post',
    method: 'POST',
    path: `${RECORDS}/`,
    body: { title: 'bench record', description: 'created by npm run bench' }
  },
  {
    name: 'task-get',
    path: TASKS,
    against: 'record-get',
    setup: async (baseUrl) => {
      await tasksOf(10_000)
      return { perConnection: randomIds(TASKS, await taskIds(baseUrl, 10_000)) }
    }
  },
  {
    name: 'tasks-list-10k',
    path: TASK_LIST,
    setup: async () => { await tasksOf(10_000) }
  },
  {
    name: 'tasks-list-1m',
    path: TASK_LIST,
    postgresOnly: true,
    setup: async (_, { quick }) => { await tasksOf(large(quick)) }
  },
  {
    // Into the 10k table again, as record-post writes into a small one: the write path, not the table's size.
    name: 'task-post',
    method: 'POST',
    path: `${TASKS}/`,
    body: TASK_BODY,
    against: 'record-post',
    setup: async () => { await tasksOf(10_000) }
  },
  ...authScenarios
]

/** The scenarios this database offers, in run order. */
export const scenarios = everyScenario.filter((s) => (onPostgres || !s.postgresOnly) && poolerAvailable(s.name))
export const allScenarioNames = everyScenario.map((s) => s.name)
