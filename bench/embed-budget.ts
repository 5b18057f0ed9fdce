/**
 * The embed budget over HTTP: the worst `?embed=` request a user can send, with and without a budget that refuses it.
 *
 *   npx tsx bench/embed-budget.ts postgres://...   # or TEST_DATABASE_URL: a database made for the run, then dropped
 *   MAX_EMBED_ROWS=1000000 npx tsx bench/embed-budget.ts ...   # a budget that lets a million rows through, as before it
 *
 * Seeds 1000 projects of 1000 tasks each, listens on 127.0.0.1, and prints status, bytes, time and the process's peak
 * resident memory for each request (one at a time, then CONCURRENCY at once).
 */
import { randomBytes } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { API_PREFIX, buildApp } from '../app.js'
import resourcePlugin from '../routes/resources/index.js'
import { Reference } from '../schemas/fields.js'

const PROJECTS = 1000
const TASKS_PER_PROJECT = 1000
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 3)
const MAX_EMBED_ROWS = process.env.MAX_EMBED_ROWS === undefined ? undefined : Number(process.env.MAX_EMBED_ROWS)

async function scratchDatabase (url: string): Promise<{ url: string, drop: () => Promise<void> }> {
  const name = `plinth_bench_budget_${randomBytes(4).toString('hex')}`
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const scratch = new URL(url)
  scratch.pathname = `/${name}`
  return { url: scratch.toString(), drop: async () => { await admin.unsafe(`drop database if exists ${name} with (force)`); await admin.end() } }
}

let peak = 0
const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 5)

async function timed (base: string, url: string) {
  const start = performance.now()
  const res = await fetch(`${base}${API_PREFIX}${url}`, { signal: AbortSignal.timeout(120_000) })
  const bytes = (await res.arrayBuffer()).byteLength
  return { status: res.status, bytes, ms: performance.now() - start }
}

async function main () {
  const given = process.argv[2] ?? process.env.TEST_DATABASE_URL
  if (!given) throw new Error('give a PostgreSQL URL')
  const scratch = await scratchDatabase(given)
  const app = await buildApp({ DATABASE_URL: scratch.url, LOG_LEVEL: 'silent', OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: 0 }, { logger: false })
  try {
    const budget = MAX_EMBED_ROWS === undefined ? {} : { maxEmbedRows: MAX_EMBED_ROWS }
    await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'projects', fields: Type.Object({ name: Type.String() }), routes: { events: false }, ...budget })
    await app.register(resourcePlugin, {
      prefix: API_PREFIX, name: 'tasks', fields: Type.Object({ title: Type.String(), project_id: Reference('projects') }), routes: { events: false }
    })
    const db = app.plinthDb.db
    await db.execute(sql`insert into projects (name) select 'project ' || g from generate_series(1, ${PROJECTS}::int) g`)
    await db.execute(sql`insert into tasks (title, project_id) select 'task ' || g, 1 + g % ${PROJECTS}::int from generate_series(0, ${PROJECTS * TASKS_PER_PROJECT - 1}::int) g`)
    await db.execute(sql`analyze`)
    const base = await app.listen({ host: '127.0.0.1', port: 0 })
    console.log(`PostgreSQL, ${PROJECTS} projects of ${TASKS_PER_PROJECT} tasks; maxEmbedRows ${MAX_EMBED_ROWS ?? 'default (20000)'}`)
    for (const url of ['/projects/?limit=1000&embed=tasks&tasks.limit=1000', '/projects/?limit=20&embed=tasks&tasks.limit=1000', '/projects/?limit=100&embed=tasks&tasks.limit=100']) {
      peak = process.memoryUsage().rss
      const one = await timed(base, url)
      console.log(`  ${url}: ${one.status}, ${one.bytes} bytes, ${one.ms.toFixed(0)} ms, peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`)
      peak = process.memoryUsage().rss
      const start = performance.now()
      const all = await Promise.all(Array.from({ length: CONCURRENCY }, () => timed(base, url)))
      console.log(`    ${CONCURRENCY} at once: ${all.map((each) => each.status).join(',')}, ${(performance.now() - start).toFixed(0)} ms, peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`)
    }
  } finally {
    clearInterval(sampler)
    await app.close()
    await scratch.drop()
  }
}

await main()
