import { availableParallelism, loadavg } from 'node:os'
import postgres from 'postgres'
import { measure, type Shape, type Shot } from './cluster-load.js'
import { killChildren, startCluster, startInstance, startNginx, stopCluster, type Cluster, type Target } from './cluster-topology.js'
import { failWith, readArgs } from './flags.js'
import { median, textTable } from './report.js'
import { resizeItems } from './seed-items.js'

const USAGE = `usage: npm run bench:cluster -- [--quick] [--rounds n] [--duration s] [--rate n]
  Starts scripts/cluster.sh (PostgreSQL, a replica, PgBouncer in session and transaction pooling), five
  node dist/server.js and two nginx in front of them, all on 127.0.0.1, and measures GET /api/v1/items/:id:
  at saturation (50 connections): direct, through nginx to 1 instance and to 3, through each PgBouncer;
  at a fixed rate, evenly paced over up to 10 connections: direct, through nginx, through each PgBouncer.
  Stops everything it started.
  --quick      a smoke run: 1 round of 2 s, no warm-up
  --rounds     paired rounds of each measurement (default 8)
  --duration   seconds per run (default 2)
  --rate       requests per second of the fixed-rate runs (default 500)`

const fail = failWith('bench:cluster', USAGE)
const ITEMS = 10_000
const SATURATION: Shape = { connections: 50 }

function readFlags () {
  const values = readArgs(USAGE, fail, {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    rate: { type: 'string' }
  } as const)
  const number = (flag: string, value: string | undefined, fallback: number) => {
    const parsed = value === undefined ? fallback : Number(value)
    if (!Number.isInteger(parsed) || parsed < 1) fail(`--${flag} must be an integer >= 1 (got "${value}")`)
    return parsed
  }
  return {
    rounds: number('rounds', values.rounds, values.quick ? 1 : 8),
    seconds: number('duration', values.duration, 2),
    rate: number('rate', values.rate, 500),
    warmup: values.quick ? 0 : 2
  }
}

type Runs = Map<string, Shot[]>

let cluster: Cluster | undefined

/** Every target once per round, in turn, so that drift falls on all of them alike. */
async function paired (targets: Target[], paths: string[], shape: Shape, flags: ReturnType<typeof readFlags>): Promise<Runs> {
  const runs: Runs = new Map(targets.map((target) => [target.name, []]))
  if (flags.warmup) for (const target of targets) await measure(target, paths, flags.warmup, shape)
  for (let round = 1; round <= flags.rounds; round++) {
    console.error(`${shape.rate ? `${shape.rate} req/s` : 'saturation'}: round ${round}/${flags.rounds}`)
    for (const target of targets) runs.get(target.name)!.push(await measure(target, paths, flags.seconds, shape))
  }
  return runs
}

const ms = (value: number) => value.toFixed(2)
const of = (runs: Runs, name: string) => runs.get(name)!
const med = (shots: Shot[], key: keyof Shot) => median(shots.map((shot) => shot[key]))

/** Rows of name, what it is paired with (or ''), label. */
function saturationTable (runs: Runs, rows: Array<[string, string, string]>) {
  return textTable(['at saturation (50 connections)', '2xx/s', 'p50 ms', 'p99 ms', 'paired ratio (median; rounds)', 'non-2xx', 'errors'], rows.map(([name, against, label]) => {
    const shots = of(runs, name)
    const ratios = against ? shots.map((shot, i) => shot.okPerSec / of(runs, against)[i]!.okPerSec) : []
    return [label, med(shots, 'okPerSec').toFixed(0), ms(med(shots, 'p50')), ms(med(shots, 'p99')),
      against ? `${median(ratios).toFixed(2)} × ${against} (${ratios.map((r) => r.toFixed(2)).join(' ')})` : '',
      String(shots.reduce((n, s) => n + s.non2xx, 0)), String(shots.reduce((n, s) => n + s.errors, 0))]
  }))
}

function rateTable (runs: Runs, rate: number, rows: Array<[string, string]>) {
  const direct = of(runs, 'direct')
  // Each round's difference from the direct run of the same round, then their median.
  const added = (shots: Shot[], key: 'p50' | 'p99') => median(shots.map((shot, i) => shot[key] - direct[i]![key]))
  return textTable([`at ${rate} req/s, paced (≤ 10 connections)`, '2xx/s', 'p50 ms', 'p99 ms', '+p50 ms', '+p99 ms', 'non-2xx', 'errors'], rows.map(([name, label]) => {
    const shots = of(runs, name)
    return [label, med(shots, 'okPerSec').toFixed(0), ms(med(shots, 'p50')), ms(med(shots, 'p99')),
      name === 'direct' ? '' : ms(added(shots, 'p50')), name === 'direct' ? '' : ms(added(shots, 'p99')),
      String(shots.reduce((n, s) => n + s.non2xx, 0)), String(shots.reduce((n, s) => n + s.errors, 0))]
  }))
}

async function main () {
  const flags = readFlags()
  const load = () => loadavg().map((l) => l.toFixed(2)).join(' ')
  // Set-up (cluster, instances, seeding) within 150 s, then every run, warm-ups included, with slack.
  const budget = 150 + 9 * (flags.warmup + flags.rounds * flags.seconds) + 60
  const watchdog = setTimeout(() => {
    console.error(`bench:cluster: still running after ${budget} s; stopping`)
    stopCluster(cluster).finally(() => process.exit(1))
  }, budget * 1000)
  try {
    console.error('starting scripts/cluster.sh, five instances and two nginx')
    cluster = await startCluster()
    const onPrimary = { DATABASE_URL: cluster.primaryUrl }
    // The first migrates the empty database alone; the items are seeded before the others start.
    const first = await startInstance(cluster, 'direct', onPrimary)
    await resizeItems(cluster.primaryUrl, ITEMS)
    const sql = postgres(cluster.primaryUrl, { max: 1, onnotice: () => {} })
    const ids = (await sql<Array<{ id: number }>>`select id from items`).map((row) => row.id)
    const [{ server_version: version }] = await sql<[{ server_version: string }]>`show server_version`
    await sql.end()
    const [second, third, session, transaction] = await Promise.all([
      startInstance(cluster, 'direct-2', onPrimary),
      startInstance(cluster, 'direct-3', onPrimary),
      startInstance(cluster, 'pgbouncer-session', { DATABASE_URL: cluster.sessionUrl }),
      startInstance(cluster, 'pgbouncer-transaction', { DATABASE_URL: cluster.transactionUrl, DATABASE_POOL_MODE: 'transaction' })
    ])
    const nginx1 = await startNginx(cluster, 'nginx-1', [first])
    const nginx3 = await startNginx(cluster, 'nginx-3', [first, second, third])
    const paths = ids.map((id) => `/api/v1/items/${id}`)

    console.log(`plinth bench:cluster: ${flags.rounds} paired round(s) of ${flags.seconds} s, GET /api/v1/items/:id of ${ids.length} items, Node ${process.version}`)
    console.log(`topology, all on 127.0.0.1: PostgreSQL ${version} primary (its streaming replica idle), PgBouncer session (pool 60) and transaction (pool 20) ` +
      'in front of it, five node dist/server.js (three on the primary directly, one per PgBouncer), nginx (1 worker, keepalive 32, access log on) ' +
      'in front of instance 1 and another in front of instances 1-3')
    console.log(`CPUs: ${availableParallelism()}, unpinned: the instances, nginx, PgBouncer, PostgreSQL and the load generator share them; load average ${load()}`)

    const saturation = await paired([first, nginx1, nginx3, session, transaction], paths, SATURATION, flags)
    const fixed = await paired([first, nginx1, session, transaction], paths, { connections: 10, rate: flags.rate }, flags)

    console.log('\n' + saturationTable(saturation, [
      ['direct', '', 'direct to 1 instance'],
      ['nginx-1', 'direct', 'nginx → 1 instance'],
      ['nginx-3', 'nginx-1', 'nginx → 3 instances'],
      ['pgbouncer-session', 'direct', 'PgBouncer session'],
      ['pgbouncer-transaction', 'direct', 'PgBouncer transaction']
    ]))
    console.log('\n' + rateTable(fixed, flags.rate, [
      ['direct', 'direct to 1 instance'],
      ['nginx-1', 'nginx → the same instance'],
      ['pgbouncer-session', 'PgBouncer session'],
      ['pgbouncer-transaction', 'PgBouncer transaction']
    ]))
    console.log('\nmedians over rounds; latencies of 2xx answers; +p50/+p99 = median over rounds of the difference from direct in the same round; ' +
      'PgBouncer rows: one instance whose DATABASE_URL is that PgBouncer (transaction: DATABASE_POOL_MODE=transaction)')
    console.log(`All on one machine of ${availableParallelism()} CPUs: the instances, nginx, PostgreSQL and the load generator take turns on its cores, ` +
      'so nginx → 3 instances shows what spreading costs here, not what three machines would serve.')
    console.log(`load average after: ${load()}`)
    const failed = [...saturation.values(), ...fixed.values()].flat().some((shot) => shot.non2xx || shot.errors)
    if (failed) {
      console.log('\nWARNING: some requests failed or answered non-2xx (the non-2xx and errors columns)')
      process.exitCode = 1
    }
  } finally {
    clearTimeout(watchdog)
    await stopCluster(cluster)
  }
}

process.on('exit', killChildren)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\nbench:cluster: ${signal}, stopping`)
    stopCluster(cluster).finally(() => process.exit(130))
  })
}

main().catch((err: unknown) => {
  console.error('bench:cluster failed:', err instanceof Error ? err.message : err)
  process.exitCode = 1
})
