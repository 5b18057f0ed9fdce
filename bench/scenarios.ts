import { resizeItems } from './seed-items.js'

/** One request shape to load the app with. Adding a scenario is adding an entry below. */
export interface Scenario {
  name: string
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** Starts with `/`; always requested on 127.0.0.1. */
  path: string
  /** Objects are sent as JSON. */
  body?: unknown
  headers?: Record<string, string>
  /**
   * Runs once before the scenario's rounds, against the app at `baseUrl` (e.g. to create a
   * user and log in); what it returns is merged into the request (e.g. an Authorization header).
   */
  setup?: (baseUrl: string) => Promise<Partial<Pick<Scenario, 'path' | 'body' | 'headers'>> | void>
}

const ITEMS = '/api/v1/items'
// The same variable bench/run.ts hands to the app server.
const database = process.env.BENCH_DATABASE_URL || 'memory://'
const onPostgres = /^postgres(ql)?:\/\//.test(database)

async function call (baseUrl: string, path: string, init: { method?: string, body?: unknown } = {}) {
  const res = await fetch(baseUrl + path, {
    method: init.method ?? 'GET',
    ...(init.body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(init.body) })
  })
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${await res.text()}`)
  return res.json() as Promise<{ id: number, total: number, items: Array<{ id: number }> }>
}

const createItem = (baseUrl: string) => call(baseUrl, ITEMS, { method: 'POST', body: { name: 'bench item', price: 9.99 } })

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
  let missing = count - (await call(baseUrl, `${ITEMS}?limit=1`)).total
  while (missing > 0) {
    const batch = Math.min(missing, 50)
    await Promise.all(Array.from({ length: batch }, () => createItem(baseUrl)))
    missing -= batch
  }
}

/** The id at `offset` (one slow offset query at setup, so the keyset scenario can start deep). */
const idAt = async (baseUrl: string, offset: number) => (await call(baseUrl, `${ITEMS}?offset=${offset}&limit=1`)).items[0]!.id

const MILLION = 1_000_000

// Need PostgreSQL: a million rows do not fit the PGlite-over-HTTP top-up.
const atOneMillion: Scenario[] = [
  {
    name: 'items-list-1m',
    path: ITEMS,
    setup: async (baseUrl) => { await catalogOf(MILLION, baseUrl) }
  },
  {
    name: 'items-keyset-1m',
    path: ITEMS,
    setup: async (baseUrl) => {
      await catalogOf(MILLION, baseUrl)
      return { path: `${ITEMS}?after_id=${await idAt(baseUrl, MILLION - 1000)}` }
    }
  },
  {
    // A selective ?q= (about 20 matches in the seeded million), served by the trigram index.
    name: 'items-search-1m',
    path: `${ITEMS}?q=desk%201234`,
    setup: async (baseUrl) => { await catalogOf(MILLION, baseUrl) }
  },
  {
    // The contrast: the same depth through offset, whose cost grows with it.
    name: 'items-offset-1m',
    path: `${ITEMS}?offset=${MILLION - 1000}`,
    setup: async (baseUrl) => { await catalogOf(MILLION, baseUrl) }
  }
]

export const scenarios: Scenario[] = [
  { name: 'health', path: '/api/v1/health' },
  { name: 'readiness', path: '/api/v1/health/ready' },
  { name: 'openapi', path: '/docs/json' },
  {
    name: 'item-get',
    path: ITEMS,
    setup: async (baseUrl) => ({ path: `${ITEMS}/${(await createItem(baseUrl)).id}` })
  },
  {
    name: 'items-list-10k',
    path: ITEMS,
    setup: async (baseUrl) => { await catalogOf(10_000, baseUrl) }
  },
  ...(onPostgres ? atOneMillion : []),
  {
    name: 'item-post',
    method: 'POST',
    path: ITEMS,
    body: { name: 'bench item', description: 'created by npm run bench', price: 9.99, in_stock: true }
  },
  {
    name: 'item-patch',
    method: 'PATCH',
    path: ITEMS,
    body: { price: 19.99 },
    setup: async (baseUrl) => ({ path: `${ITEMS}/${(await createItem(baseUrl)).id}` })
  }
]
