import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { API_PREFIX, buildApp } from '../app.js'
import resourcePlugin from '../routes/resources/index.js'
import { main, type ChildMessage } from './child.js'
import { TaskFields } from './tasks.js'

/**
 * Rows per second created by single POSTs, by JSON arrays (bulk), and by single POSTs through a
 * no-op beforeCreate hook (the transactional path), against one app server child. Standalone:
 *   npm run build:tools && node build/bench/bulk.js                       # PGlite in memory
 *   BENCH_DATABASE_URL=postgres://... node build/bench/bulk.js            # a fresh database beside that one, dropped after
 * BENCH_DURATION (seconds per scenario, default 8).
 */

const task = (i: number) => ({ title: `bulk task ${i}`, priority: 1 + (i % 5), tags: ['bench'], due: '2026-12-01' })

async function server () {
  const app = await buildApp({ DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'memory://', LOG_LEVEL: 'silent', MAX_CONNECTIONS_PER_ADDRESS: 1e9, OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: 0 }, { logger: false })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'hooked_tasks', fields: TaskFields, hooks: { beforeCreate: () => undefined } })
  return app
}

async function start (databaseUrl: string | undefined): Promise<{ child: ChildProcess, port: number }> {
  const child = fork(fileURLToPath(import.meta.url), ['server'], { env: { ...process.env, ...(databaseUrl ? { BENCH_DATABASE_URL: databaseUrl } : {}) } })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the server exited with ${String(code)}`)))
    child.on('message', (message: ChildMessage) => { if (message.type === 'ready') resolve(message.port) })
  })
  return { child, port }
}

interface Scenario { name: string, path: string, rows: number, connections: number }

const SCENARIOS: Scenario[] = [
  { name: 'task-post (1 row, 50 connections)', path: 'tasks', rows: 1, connections: 50 },
  { name: 'task-post, no-op beforeCreate', path: 'hooked_tasks', rows: 1, connections: 50 },
  { name: 'tasks bulk of 100 (8 connections)', path: 'tasks', rows: 100, connections: 8 },
  { name: 'tasks bulk of 1000 (4 connections)', path: 'tasks', rows: 1000, connections: 4 },
  { name: 'tasks bulk of 1000, no-op beforeCreate', path: 'hooked_tasks', rows: 1000, connections: 4 }
]

async function measure (port: number, { path, rows, connections }: Scenario, duration: number) {
  const payload = rows === 1 ? task(0) : Array.from({ length: rows }, (_, i) => task(i))
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${API_PREFIX}/${path}/`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payload),
    connections,
    duration,
    timeout: 30
  })
  const statuses = Object.entries(result.statusCodeStats).filter(([code]) => !code.startsWith('2')).map(([code, { count }]) => `${code}: ${count}`).join(', ')
  return { requests: result.requests.average, rowsPerSecond: result.requests.average * rows, p99: result.latency.p99, bad: result.non2xx + result.errors, statuses }
}

async function freshDatabase (url: string): Promise<{ url: string, drop: () => Promise<void> }> {
  const name = `plinth_bench_bulk_${process.pid}`
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const fresh = new URL(url)
  fresh.pathname = `/${name}`
  return { url: fresh.toString(), drop: async () => { await admin.unsafe(`drop database if exists ${name} with (force)`); await admin.end() } }
}

async function run () {
  const duration = Number(process.env.BENCH_DURATION ?? 8)
  const base = process.env.BENCH_DATABASE_URL
  const database = base ? await freshDatabase(base) : undefined
  const { child, port } = await start(database?.url)
  try {
    console.log(`database: ${base ? 'PostgreSQL' : 'PGlite (memory)'}, ${duration} s per scenario`)
    for (const scenario of SCENARIOS) {
      const { requests, rowsPerSecond, p99, bad, statuses } = await measure(port, scenario, duration)
      console.log(`${scenario.name.padEnd(42)} ${requests.toFixed(1).padStart(8)} req/s ${Math.round(rowsPerSecond).toString().padStart(8)} rows/s  p99 ${p99} ms${bad ? `  ${bad} non-2xx or errors (${statuses})` : ''}`)
    }
  } finally {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
    await database?.drop()
  }
}

if (process.argv[2] === 'server') main(server)
else {
  run().catch((err: unknown) => {
    console.error(err)
    process.exit(1)
  })
}
