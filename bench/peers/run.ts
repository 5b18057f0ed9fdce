import { loadavg } from 'node:os'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { failWith, readArgs } from '../flags.js'
import { CONNECTIONS } from '../load.js'
import { median, problems, redact, sum, textTable, toSample, type Sample } from '../report.js'
import { resizeItems } from '../seed-items.js'
import { resizeTasks } from '../seed-tasks.js'
import { killServers, pinCpus, startServer, stopServers, type Server } from '../servers.js'
import { peers, type Target } from './peers.js'

const USAGE = `usage: BENCH_DATABASE_URL=postgres://... npm run bench:peers -- [--quick] [--duration s] [--rounds n] [--items n] [--tasks n]
  --quick      one 3 s round per scenario after a 1 s warm-up (default: 3 rounds of 10 s after 3 s)
  --duration   seconds per measured run      --rounds   rounds per scenario
  --items      rows in the items table (default 10000); the table is emptied and reseeded
  --tasks      rows in the tasks table (default 10000); the table is emptied and reseeded
Peers run when installed (see bench/peers/README.md): FastAPI (Python packages), Platformatic DB 2.x
(PLATFORMATIC_DIR, default /tmp/plinth-peers/platformatic).`

const PAGE = 20

const fail = failWith('bench:peers', USAGE)

function positive (flag: string, value: string | undefined, fallback: number) {
  if (value === undefined) return fallback
  const number = Number(value.replaceAll('_', ''))
  if (!(number > 0)) fail(`--${flag} must be a positive number (got "${value}")`)
  return number
}

function readFlags () {
  const values = readArgs(USAGE, fail, {
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
    rounds: { type: 'string' },
    items: { type: 'string' },
    tasks: { type: 'string' }
  } as const)
  const items = positive('items', values.items, 10_000)
  if (!Number.isInteger(items) || items < PAGE) fail(`--items must be an integer of at least ${PAGE}`)
  // A third of the seeded tasks are open: a full page needs three pages' worth.
  const tasks = positive('tasks', values.tasks, 10_000)
  if (!Number.isInteger(tasks) || tasks < 3 * PAGE) fail(`--tasks must be an integer of at least ${3 * PAGE}`)
  return {
    mode: values.quick ? 'quick' : 'full',
    items,
    tasks,
    warmup: values.quick ? 1 : 3,
    duration: positive('duration', values.duration, values.quick ? 3 : 10),
    rounds: Math.ceil(positive('rounds', values.rounds, values.quick ? 1 : 3))
  }
}

/** Plinth itself, as bench/run.ts starts it: a server child on the same database. */
function plinthTarget (server: Server): Target {
  return {
    name: 'plinth',
    url: server.url,
    itemPath: (id) => `/api/v1/items/${id}`,
    listPath: `/api/v1/items?offset=0&limit=${PAGE}`,
    total: (body) => (body as { total: number }).total,
    // bench/scenarios.ts's tasks-list-10k; no count=exact, so no total.
    tasksPath: `/api/v1/tasks/?status=open&sort=-priority&limit=${PAGE}`,
    rss: () => server.rss()
  }
}

interface Scenario {
  name: string
  /** A fresh path for every request. */
  path (target: Target, items: number): () => string
}

const scenarios: Scenario[] = [
  {
    // A random id per request, so no server answers from one hot row; ids are 1..items after seeding.
    name: 'item-get',
    path: (target, items) => () => target.itemPath(1 + Math.floor(Math.random() * items))
  },
  { name: 'items-list', path: (target) => () => target.listPath },
  { name: 'tasks-list', path: (target) => () => target.tasksPath }
]

/** The ids the filtered list must answer, read straight from the table. */
async function openTaskIds (database: string) {
  const sql = postgres(database, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<Array<{ id: number }>>`select id from tasks where status = 'open' order by priority desc, id desc limit ${PAGE}`
    return rows.map((row) => row.id)
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/** Refuses a target that does not serve the seeded table: the numbers would compare nothing. */
async function check (target: Target, items: number, taskIds: number[]) {
  const item = await fetch(target.url + target.itemPath(items))
  const body = await item.json() as { id?: number }
  if (item.status !== 200 || body.id !== items) throw new Error(`${target.name}: GET item ${items} answered ${item.status} ${JSON.stringify(body)}`)
  const list = await fetch(target.url + target.listPath)
  const page = await list.json() as unknown
  const rows = Array.isArray(page) ? page : (page as { items: unknown[] }).items
  const total = target.total(page, list.headers)
  if (list.status !== 200 || rows.length !== PAGE || total !== items) {
    throw new Error(`${target.name}: the list answered ${list.status} with ${rows.length} rows and total ${total} (expected ${PAGE} and ${items})`)
  }
  const tasks = await fetch(target.url + target.tasksPath)
  const found = await tasks.json() as unknown
  const ids = Array.isArray(found) ? found.map((task: { id?: unknown }) => task.id).join(',') : JSON.stringify(found)
  if (tasks.status !== 200 || ids !== taskIds.join(',')) {
    throw new Error(`${target.name}: the tasks list answered ${tasks.status} with ids ${ids} (expected ${taskIds.join(',')})`)
  }
}

async function load (url: string, next: () => string, seconds: number) {
  // setupRequest rebuilds the request each time, on the load generator's CPU.
  const options = { url, connections: CONNECTIONS, duration: seconds, requests: [{ setupRequest: (request: object) => ({ ...request, path: next() }) }] }
  return toSample(await autocannon(options))
}

const bareLoad = (bare: Server, seconds: number) => load(bare.url, () => '/', seconds)

interface Row { name: string, samples: Sample[], toBare: number[], toPlinth: number[], rss: number }

function formatTable (rows: Row[]) {
  // Three decimals below 0.1, where count(*) on a big table puts the peers' lists.
  const ratio = (values: number[]) => values.length ? median(values).toFixed(median(values) < 0.1 ? 3 : 2) : '-'
  return textTable(['server / scenario', 'req/s', 'p50 ms', 'p99 ms', '× bare', '× plinth', 'non-2xx', 'errors', 'RSS MB'], rows.map((r) => [
    r.name,
    median(r.samples.map((s) => s.reqPerSec)).toFixed(0),
    median(r.samples.map((s) => s.p50)).toFixed(2),
    median(r.samples.map((s) => s.p99)).toFixed(2),
    ratio(r.toBare),
    ratio(r.toPlinth),
    String(sum(r.samples.map((s) => s.non2xx))),
    String(sum(r.samples.map((s) => s.errors))),
    (r.rss / 1024 / 1024).toFixed(1)
  ]))
}

async function main () {
  const flags = readFlags()
  const database = process.env.BENCH_DATABASE_URL ?? ''
  // Every peer needs a real server to share: PGlite lives inside one process.
  if (!/^postgres(ql)?:\/\//.test(database)) fail('BENCH_DATABASE_URL must be a postgres:// URL')

  const detected = peers.map((peer) => ({ peer, detection: peer.detect() }))
  const available = detected.filter((d) => d.detection.available)
  const perTarget = flags.warmup * 2 + flags.rounds * flags.duration * 2
  const budget = 120 + scenarios.length * (2 + available.length) * (perTarget + 10)
  const watchdog = setTimeout(() => {
    console.error(`bench:peers: still running after ${budget} s; stopping`)
    stopServers().finally(() => process.exit(1))
  }, budget * 1000)

  const pinning = pinCpus()
  console.log(`plinth peers (${flags.mode}): ${flags.rounds} round(s) of ${flags.duration} s after ${flags.warmup} s warm-up, ` +
    `${CONNECTIONS} connections, ${flags.items} items, ${flags.tasks} tasks, Node ${process.version}`)
  console.log(`database: ${redact(database)}; CPUs: ${pinning.note}; load average ${loadavg()[0]!.toFixed(2)}`)
  for (const { peer, detection } of detected) console.log(`${peer.name}: ${detection.available ? detection.note : detection.reason}`)

  try {
    // Emptied first, so the ids are exactly 1..items and a random id always exists.
    await resizeItems(database, 0)
    const { ms } = await resizeItems(database, flags.items)
    console.error(`items: ${flags.items} seeded in ${(ms / 1000).toFixed(1)} s`)
    await resizeTasks(database, 0)
    const seeded = await resizeTasks(database, flags.tasks)
    console.error(`tasks: ${flags.tasks} seeded in ${(seeded.ms / 1000).toFixed(1)} s`)
    const taskIds = await openTaskIds(database)

    const [bare, app] = await Promise.all([
      startServer('bare', 'bare-server', pinning),
      startServer('app', 'app-server', pinning, { BENCH_DATABASE_URL: database })
    ])
    const targets: Target[] = [plinthTarget(app)]
    await check(targets[0]!, flags.items, taskIds)
    const failures: string[] = []
    for (const { peer, detection } of available) {
      if (!detection.available) continue
      try {
        const target = await detection.start(database, pinning)
        await check(target, flags.items, taskIds)
        targets.push(target)
      } catch (err) {
        failures.push(`${peer.name}: failed: ${err instanceof Error ? err.message : err}`)
        console.error(failures.at(-1))
      }
    }

    const rows: Row[] = []
    const bareSamples: Sample[] = []
    const warnings: string[] = []
    for (const scenario of scenarios) {
      const next = targets.map((target) => scenario.path(target, flags.items))
      console.error(`${scenario.name}: warm-up`)
      warnings.push(...problems(`bare warm-up before ${scenario.name}`, [await bareLoad(bare, flags.warmup)]))
      for (const [i, target] of targets.entries()) {
        warnings.push(...problems(`${target.name} ${scenario.name} warm-up`, [await load(target.url, next[i]!, flags.warmup)]))
      }
      const samples = targets.map((): Sample[] => [])
      const toBare = targets.map((): number[] => [])
      for (let round = 1; round <= flags.rounds; round++) {
        console.error(`${scenario.name}: round ${round}/${flags.rounds}`)
        // Each target right after its own bare run: drift (thermal, the neighbours) stays out of the ratio.
        for (const [i, target] of targets.entries()) {
          const baseline = await bareLoad(bare, flags.duration)
          const sample = await load(target.url, next[i]!, flags.duration)
          bareSamples.push(baseline)
          samples[i]!.push(sample)
          toBare[i]!.push(sample.reqPerSec / baseline.reqPerSec)
        }
      }
      for (const [i, target] of targets.entries()) {
        rows.push({
          name: `${target.name} ${scenario.name}`,
          samples: samples[i]!,
          toBare: toBare[i]!,
          toPlinth: samples[i]!.map((s, round) => s.reqPerSec / samples[0]![round]!.reqPerSec),
          rss: await target.rss()
        })
        warnings.push(...problems(`${target.name} ${scenario.name}`, samples[i]!))
      }
    }
    warnings.push(...problems('bare', bareSamples))
    rows.unshift({ name: 'bare', samples: bareSamples, toBare: bareSamples.map(() => 1), toPlinth: [], rss: await bare.rss() })

    console.log('\n' + formatTable(rows))
    console.log('\nmedians over rounds; × bare and × plinth compare runs of the same round; non-2xx and errors summed over rounds')
    console.log(`item-get: a random id of 1..${flags.items}; items-list: the first ${PAGE} by id with the total ` +
      '(plinth: a trigger-kept counter; postgres.js, fastapi and platformatic: count(*))')
    console.log(`tasks-list: the first ${PAGE} of ${flags.tasks} tasks with status open by priority descending, then id descending, ` +
      'no total; every server answered the same ids before its load')
    for (const { peer, detection } of detected) if (!detection.available) console.log(`${peer.name}: ${detection.reason}`)
    if (failures.length) console.log(failures.join('\n'))
    if (warnings.length) console.log('\n' + warnings.join('\n'))
    console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  } finally {
    clearTimeout(watchdog)
    await stopServers()
  }
}

process.on('exit', () => {
  killServers()
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\nbench:peers: ${signal}, stopping the servers`)
    stopServers().finally(() => process.exit(130))
  })
}

main().catch((err: unknown) => {
  console.error('bench:peers failed:', err instanceof Error ? err.message : err)
  process.exitCode = 1
})
