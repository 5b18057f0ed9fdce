import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import Fastify from 'fastify'
import postgres from 'postgres'
import { connect } from '../db/client.js'
import { dbPlugin, resourcePlugin } from '../index.js'

/**
 * `?q=` at a million rows, on PostgreSQL: seeds `articles` in its own database with one
 * INSERT ... SELECT, builds the GIN index, then times GET /articles/?q= (through Fastify's
 * inject: routing, validation, the list and serialization, no socket) for a few kinds of query.
 * Drops its database at the end (BENCH_KEEP=1 keeps it). Usage: `npx tsx bench/search.ts [rows]`;
 * BENCH_ADMIN_URL chooses the cluster (default the dev cluster), BENCH_SECONDS the time per kind.
 */

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://plinth@127.0.0.1:55432/plinth'
const DATABASE = 'plinth_search_bench'
const ROWS = Number(process.argv[2] ?? 1_000_000)
// Per kind: this many requests, or this long, whichever ends first.
const REQUESTS = 200
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15)

// Words drawn with a skew (random()^3): the first are common, the last rare, as in real text.
const VOCABULARY = [
  'the', 'project', 'team', 'report', 'meeting', 'update', 'client', 'design', 'review', 'plan',
  'budget', 'release', 'issue', 'customer', 'feature', 'server', 'deploy', 'test', 'schedule', 'garden',
  'kitchen', 'invoice', 'contract', 'library', 'shipment', 'warehouse', 'delivery', 'sprint', 'roadmap', 'launch',
  'marketing', 'campaign', 'analytics', 'dashboard', 'database', 'backup', 'migration', 'security', 'audit', 'policy',
  'travel', 'booking', 'hotel', 'flight', 'conference', 'workshop', 'training', 'onboarding', 'hiring', 'interview',
  'payroll', 'expense', 'receipt', 'quarterly', 'annual', 'forecast', 'revenue', 'profit', 'margin', 'pricing',
  'supplier', 'vendor', 'inventory', 'catalog', 'product', 'prototype', 'feedback', 'survey', 'research', 'patent',
  'gardener', 'gardening', 'garage', 'statue', 'marble', 'granite', 'plinth', 'pedestal', 'column', 'facade',
  'window', 'roof', 'plumbing', 'electrical', 'heating', 'painting', 'flooring', 'carpentry', 'masonry', 'insulation',
  'network', 'router', 'firewall', 'certificate', 'domain', 'mailbox', 'calendar', 'reminder', 'deadline', 'milestone'
]
const RARE = 'zephyrine'

const ArticleFields = Type.Object({
  title: Type.String(),
  body: Type.Optional(Type.String())
})

// Ranked unless the kind asks for a sort.
const KINDS: Array<[kind: string, q: string, also?: string]> = [
  ['rare word', RARE],
  ['common word', 'project'],
  ['two words', 'marble statue'],
  ['prefix', 'garde'],
  ['phrase', '"granite plinth"'],
  ['rare, by id', RARE, '&sort=-id'],
  ['common, by id', 'project', '&sort=-id']
]

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!
const ms = (value: number) => value.toFixed(1).padStart(8)
const load = () => loadavg().map((value) => value.toFixed(2)).join(' ')

async function timed<T> (what: string, run: () => Promise<T>): Promise<T> {
  const start = performance.now()
  const result = await run()
  console.log(`${what}: ${((performance.now() - start) / 1000).toFixed(1)} s`)
  return result
}

async function main () {
  console.log(`load average at start (1, 5, 15 min): ${load()}; other work runs on this machine`)
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists ${DATABASE}`)
  await admin.unsafe(`create database ${DATABASE}`)
  const url = new URL(ADMIN_URL)
  url.pathname = `/${DATABASE}`
  const client = await connect(url.toString())
  const app = Fastify({ logger: false })
  try {
    await client.migrate()
    await app.register(dbPlugin, { client })
    await app.register(resourcePlugin, { prefix: '/api/v1', name: 'articles', fields: ArticleFields, search: ['title', 'body'] })
    await app.ready()
    const { db } = client
    // The plugin made the index on an empty table: drop it for the load, and make it again as the plugin did.
    const [index] = await db.execute(sql`select indexname, indexdef from pg_indexes where tablename = 'articles' and indexdef ilike '%using gin%'`) as unknown as Array<{ indexname: string, indexdef: string }>
    if (index === undefined) throw new Error('the resource plugin made no GIN index on articles: the search DDL is missing')
    await db.execute(sql.raw(`drop index "${index.indexname}"`))
    const words = `array[${VOCABULARY.map((word) => `'${word}'`).join(',')}]`
    const pick = `(${words})[1 + floor(${VOCABULARY.length} * random() ^ 3)::int]`
    await timed(`seed ${ROWS.toLocaleString('en')} rows (one INSERT ... SELECT)`, () => db.execute(sql.raw(`
      insert into articles (title, body)
      select (select string_agg(${pick}, ' ') from generate_series(1, 3 + g % 4)),
             (select string_agg(${pick}, ' ') from generate_series(1, 12 + g % 9))
               || case when g % 9973 = 0 then ' ${RARE}' else '' end
      from generate_series(1, ${ROWS}) as g`)))
    await db.execute(sql.raw('set maintenance_work_mem = \'256MB\''))
    await timed(`create ${index.indexname}`, () => db.execute(sql.raw(index.indexdef)))
    await timed('vacuum analyze', () => db.execute(sql.raw('vacuum analyze articles')))

    console.log(`\n${'kind'.padEnd(14)} ${'q'.padEnd(18)} ${'matches'.padStart(8)} ${'count ms'.padStart(9)} ${'runs'.padStart(5)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'max ms'.padStart(8)}`)
    for (const [kind, q, also = ''] of KINDS) {
      const path = `/api/v1/articles/?q=${encodeURIComponent(q)}&limit=20${also}`
      const countStart = performance.now()
      const counted = await app.inject({ method: 'GET', url: `${path}&count=exact` })
      const countMs = performance.now() - countStart
      if (counted.statusCode !== 200) throw new Error(`${path}: ${counted.statusCode} ${counted.payload}`)
      const latencies: number[] = []
      const end = performance.now() + SECONDS * 1000
      while (latencies.length < REQUESTS && performance.now() < end) {
        const start = performance.now()
        const res = await app.inject({ method: 'GET', url: path })
        latencies.push(performance.now() - start)
        if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${res.payload}`)
      }
      latencies.sort((a, b) => a - b)
      console.log(`${kind.padEnd(14)} ${q.padEnd(18)} ${String(counted.headers['x-total-count']).padStart(8)} ${ms(countMs).padStart(9)} ${String(latencies.length).padStart(5)} ` +
        `${ms(percentile(latencies, 0.5))} ${ms(percentile(latencies, 0.99))} ${ms(latencies.at(-1)!)}`)
    }
    console.log(`\nload average at end (1, 5, 15 min): ${load()}`)
  } finally {
    await app.close()
    await client.close()
    if (process.env.BENCH_KEEP !== '1') await admin.unsafe(`drop database if exists ${DATABASE}`)
    await admin.end()
  }
}

await main()
