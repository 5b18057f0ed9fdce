import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { failWith, readArgs } from './flags.js'
import { BARE, CONNECTIONS, load, prepare, type Measured, type Request } from './load.js'
import { formatTable, median, problems, redact, toRow, writeJson, type Row } from './report.js'
import { overloadNames, overloadPhases, runOverload } from './overload.js'
import { POOL_MODES, pooledMode, poolerUrl, poolersMissing } from './pooler.js'
import { allScenarioNames, observability, onPostgres, scenarios } from './scenarios.js'
import { killServers, pinCpus, runPinned, START_FLAGS, startServer, stopServer, stopServers, type Pinning, type Server } from './servers.js'
import { pgliteStartup } from './startup.js'
import { generateKey } from '../plugins/auth/keys.js'
import type { Scenario } from './scenario.js'

const USAGE = `usage: npm run bench -- [--quick] [--only name1,name2] [--observability] [--json] [--duration s] [--rounds n] [--decay s]
  --quick      smoke run under a minute: every scenario once for 1 s, no warm-up, 100k rows for the 1m ones;
               exits 1 if any request failed or answered non-2xx (as every run does)
               (default: 3 rounds of 10 s after a 3 s warm-up)
  --only       run only these scenarios: ${[...allScenarioNames, ...overloadNames].join(', ')}
               (the *-1m ones need BENCH_DATABASE_URL=postgres://..., the *-pooled-* ones BENCH_POOLER_SESSION_URL and
               BENCH_POOLER_TRANSACTION_URL as well; overload-* run 3 s of warm-up and 10 s at
               50 connections, 30 s at 500 and 10 s at 50 again, or 2 s, 2 s and 3 s with --quick)
  --observability  only item-get and item-post with metrics on and ETags computed, against both off
  --json       also write bench/results/latest.json
  --duration   seconds per measured run      --rounds   rounds per scenario
  --decay      seconds of one long item-get run, first 10 s against last 10 s (default 60; quick 0 = off)`

const fail = failWith('bench', USAGE)

function count (flag: string, value: string | undefined, fallback: number, min = 1) {
  if (value === undefined) return fallback
  const number = Number(value)
  if (!(number >= min)) fail(`--${flag} must be a number >= ${min} (got "${value}")`)
  return number
}

function readFlags () {
  const values = readArgs(USAGE, fail, {
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    only: { type: 'string' },
    observability: { type: 'boolean', default: false },
    duration: { type: 'string' },
    rounds: { type: 'string' },
    decay: { type: 'string' }
  } as const)
  if (values.observability && values.only) fail('--observability and --only each choose the scenarios; give one')
  const names = values.observability ? observability.map((s) => s.name) : values.only?.split(',').map((name) => name.trim()).filter(Boolean)
  const unknown = names?.filter((name) => !allScenarioNames.includes(name) && !overloadNames.includes(name)) ?? []
  if (unknown.length) fail(`unknown scenario ${unknown.join(', ')}`)
  const quick = values.quick
  return {
    mode: quick ? 'quick' : 'full',
    quick,
    json: values.json,
    selected: names ? scenarios.filter((s) => names.includes(s.name)) : scenarios,
    // Whether to say why pooled scenarios are missing: only when they were asked for, or all were.
    poolersAsked: names ? names.some((name) => pooledMode(name) !== undefined) : true,
    overload: names ? overloadNames.filter((name) => names.includes(name)) : overloadNames,
    warmup: quick ? 0 : 3,
    duration: count('duration', values.duration, quick ? 1 : 10),
    rounds: Math.ceil(count('rounds', values.rounds, quick ? 1 : 3)),
    decay: count('decay', values.decay, quick || names ? 0 : 60, 0)
  }
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0)

/** argon2id verifies per second with the app's parameters, on the servers' CPU (best of 3 widths). */
async function argon2Bound (pinning: Pinning, seconds: number) {
  const out = await runPinned('argon2-bound', [String(seconds)], pinning, (3 * seconds + 30) * 1000)
  return JSON.parse(out) as { perSecond: number, msPerVerify: number, width: number }
}

/**
 * The same login requests against bench/login-floor-server.js: Fastify, the form body and one
 * verify, without the database and the tokens. How close any Fastify login gets to the bound.
 */
async function loginFloor (pinning: Pinning, request: Request, warmup: number, seconds: number) {
  const floor = await startServer('login floor', 'login-floor-server', pinning)
  try {
    if (warmup) await load(floor, request, warmup)
    return await load(floor, request, seconds)
  } finally {
    await stopServer(floor)
  }
}

/** Throughput of one long run, second by second: does it hold or decay? */
async function decayCheck (app: Server, seconds: number) {
  const scenario = scenarios.find((s) => s.name === 'item-get')!
  const run = await load(app, await prepare(scenario, app.url, false), seconds)
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length)
  // The last tick is the partial second at the stop: left out.
  const full = run.perSecond.slice(0, seconds)
  const first = mean(full.slice(0, 10))
  const last = mean(full.slice(-10))
  const tens = Array.from({ length: Math.ceil(full.length / 10) }, (_, i) => mean(full.slice(i * 10, i * 10 + 10)).toFixed(0))
  return { run, line: `decay (item-get, ${seconds} s): req/s per 10 s ${tens.join(' ')}; last 10 s / first 10 s = ${(last / first).toFixed(2)}; peak RSS ${mb(run.peakRss)} MB` }
}

/**
 * The scenarios in the order they run, each in a group of its own, except that one measured
 * `against` another that is also selected joins that one's group, to be measured in the same rounds.
 */
function pairedGroups (selected: Scenario[]): Scenario[][] {
  const groups = new Map<string, Scenario[]>()
  for (const scenario of selected) {
    const against = scenario.against !== undefined && selected.some((s) => s.name === scenario.against) ? groups.get(scenario.against) : undefined
    if (against) against.push(scenario)
    else groups.set(scenario.name, [scenario])
  }
  return [...groups.values()]
}

async function main () {
  const flags = readFlags()
  if (!existsSync(new URL('../db/migrations/meta/_journal.json', import.meta.url))) {
    throw new Error('build/db/migrations is missing: build with `npm run build:tools` (tsc alone does not copy it)')
  }
  // Without BENCH_DATABASE_URL, PGlite as the server runs it by default: in a data folder, the
  // one the start-up measurement leaves created and migrated. (A folder's first start runs
  // initdb, whose garbage, up to 400 MB, stays resident until a major GC: not the steady state.)
  const folder = mkdtempSync(join(tmpdir(), 'plinth-bench-db-'))
  const database = process.env.BENCH_DATABASE_URL || `pglite://${folder}`
  const pinning = pinCpus()
  const perScenario = 2 * flags.warmup + 2 * flags.rounds * flags.duration
  // Generous, but a stuck run still ends: startup, setups, seeding and RSS queries are not counted above.
  const phases = overloadPhases(flags.quick)
  const budget = 150 + flags.decay + flags.selected.length * (perScenario + 30) +
    flags.overload.length * (phases.warmup + phases.saturation + phases.overload + phases.recovery + 60)
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${budget} s; stopping`)
    stopServers().finally(() => process.exit(1))
  }, budget * 1000)

  console.log(`plinth bench (${flags.mode}): ${flags.rounds} round(s) of ${flags.duration} s after ${flags.warmup} s warm-up, ` +
    `${CONNECTIONS} connections, Node ${process.version}, servers run with ${START_FLAGS.join(' ') || 'no flags'} (as npm start)`)
  // Other processes on these CPUs skew every number: the load average says how busy the host was.
  console.log(`database: ${redact(database)}; CPUs: ${pinning.note}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  const notes: string[] = []
  const warnings: string[] = []

  try {
    const startup = await pgliteStartup(pinning, folder)
    notes.push(`PGlite start to healthy on an existing folder: ${startup.healthyMs.toFixed(0)} ms (first start with migrations ${startup.firstMs.toFixed(0)} ms), RSS ${mb(startup.rss)} MB`)
    // PostgreSQL is sized by each scenario's set-up; PGlite (in the app's process) starts with its 10k of each.
    // A PGlite folder is one process's: each app server gets its own copy of the migrated one.
    const appEnv = (copy: string) => {
      if (!onPostgres) cpSync(folder, `${folder}-${copy}`, { recursive: true })
      return { BENCH_DATABASE_URL: onPostgres ? database : `pglite://${folder}-${copy}`, BENCH_SEED_ITEMS: onPostgres ? '0' : '10000', BENCH_SEED_TASKS: onPostgres ? '0' : '10000' }
    }
    const wanted = (server: Scenario['server']) => flags.selected.some((scenario) => scenario.server === server)
    const [bare, app, eddsa, stateless, observed] = await Promise.all([
      startServer('bare', 'bare-server', pinning),
      startServer('app', 'app-server', pinning, appEnv('app')),
      wanted('eddsa') ? startServer('app (EdDSA)', 'app-server', pinning, { ...appEnv('eddsa'), BENCH_JWT_PRIVATE_KEY: JSON.stringify(generateKey('EdDSA')) }) : undefined,
      wanted('stateless') ? startServer('app (SESSION_CHECK=false)', 'app-server', pinning, { ...appEnv('stateless'), BENCH_STATELESS: '1' }) : undefined,
      wanted('observed') ? startServer('app (metrics on)', 'app-server', pinning, { ...appEnv('observed'), BENCH_OBSERVED: '1' }) : undefined
    ])
    const servers = { eddsa, stateless, observed }
    // The app server again with its DATABASE_URL the pooler's; transaction pooling takes unnamed statements only.
    const pooled = Object.fromEntries(await Promise.all(POOL_MODES.filter((mode) => flags.selected.some((s) => pooledMode(s.name) === mode)).map(async (mode) =>
      [mode, await startServer(`app (PgBouncer, ${mode} pooling)`, 'app-server', pinning, {
        BENCH_DATABASE_URL: poolerUrl(mode)!, BENCH_DATABASE_POOL_MODE: mode, BENCH_SEED_ITEMS: '0', BENCH_SEED_TASKS: '0'
      })] as const)))
    const missing = flags.poolersAsked ? poolersMissing(onPostgres) : undefined
    if (missing) notes.push(missing)
    const rows: Row[] = []
    const baseline: Measured[] = []
    for (const group of pairedGroups(flags.selected)) {
      const runs = []
      for (const scenario of group) {
        const mode = pooledMode(scenario.name)
        const server = mode ? pooled[mode]! : scenario.server ? servers[scenario.server]! : app
        const request = await prepare(scenario, server.url, flags.quick)
        const bound = scenario.bound ? await argon2Bound(pinning, flags.quick ? 1 : 5) : undefined
        const floor = scenario.bound ? await loginFloor(pinning, request, flags.warmup, flags.duration) : undefined
        runs.push({ scenario, server, request, bound, floor, samples: [] as Measured[] })
      }
      if (flags.warmup) {
        warnings.push(...problems(`bare warm-up before ${group[0]!.name}`, [await load(bare, BARE, flags.warmup)]))
        for (const { scenario, server, request } of runs) {
          console.error(`${scenario.name}: warm-up`)
          await scenario.beforeRun?.()
          warnings.push(...problems(`${scenario.name} warm-up`, [await load(server, request, flags.warmup)]))
        }
      }
      const bareSamples: Measured[] = []
      // Alternating keeps drift (thermal, noisy neighbours) out of the ratios: bare, then each of the group, every round.
      for (let round = 1; round <= flags.rounds; round++) {
        console.error(`${group.map((s) => s.name).join(', ')}: round ${round}/${flags.rounds}`)
        bareSamples.push(await load(bare, BARE, flags.duration))
        for (const { scenario, server, request, samples } of runs) {
          await scenario.beforeRun?.()
          samples.push(await load(server, request, flags.duration))
        }
      }
      for (const { scenario, bound, floor, samples } of runs) {
        const ratios = samples.map((s, i) => s.reqPerSec / bareSamples[i]!.reqPerSec)
        const row = toRow(scenario.name, samples, ratios, Math.max(...samples.map((s) => s.peakRss)))
        rows.push(row)
        if (bound) {
          notes.push(`${scenario.name}: ${row.reqPerSec.toFixed(0)} req/s = ${(row.reqPerSec / bound.perSecond).toFixed(2)} × the argon2id verify bound ` +
            `measured just before on the same CPU (${bound.perSecond.toFixed(0)} verifies/s, ${bound.width} at a time, ${bound.msPerVerify.toFixed(1)} ms each)`)
        }
        if (bound && floor) {
          notes.push(`${scenario.name} floor (Fastify, the form body and one verify; no database, no tokens): ` +
            `${floor.reqPerSec.toFixed(0)} req/s = ${(floor.reqPerSec / bound.perSecond).toFixed(2)} × the bound; ${scenario.name} = ${(row.reqPerSec / floor.reqPerSec).toFixed(2)} × the floor`)
          warnings.push(...problems(`${scenario.name} floor`, [floor]))
        }
        warnings.push(...problems(scenario.name, samples))
      }
      warnings.push(...problems(`bare before ${group[0]!.name}`, bareSamples))
      baseline.push(...bareSamples)
    }
    for (const scenario of flags.selected) {
      const [samples, others] = [scenario.name, scenario.against].map((name) => rows.find((row) => row.name === name)?.samples)
      if (!samples || !others) continue
      // Measured in the same rounds, one after the other: each round's own ratio, then their median.
      const ratios = samples.map((s, i) => s.reqPerSec / others[i]!.reqPerSec)
      notes.push(`${scenario.name}: ${median(ratios).toFixed(2)} × ${scenario.against} (median of ${ratios.length} paired rounds: ` +
        `${ratios.map((r) => r.toFixed(2)).join(' ')}; ${median(samples.map((s) => s.reqPerSec)).toFixed(0)} against ${median(others.map((s) => s.reqPerSec)).toFixed(0)} req/s)`)
    }
    if (baseline.length) rows.unshift(toRow('bare', baseline, baseline.map(() => 1), Math.max(...baseline.map((s) => s.peakRss))))
    if (flags.decay) {
      console.error(`decay: one ${flags.decay} s run of item-get`)
      const { run, line } = await decayCheck(app, flags.decay)
      notes.push(line)
      warnings.push(...problems('decay', [run]))
    }

    const overloads = []
    for (const name of flags.overload) {
      const report = await runOverload(name, app, phases, flags.quick)
      overloads.push(report)
      warnings.push(...report.warnings)
    }

    if (rows.length) console.log('\n' + formatTable(rows))
    console.log('\nmedians over rounds; × bare = req/s ÷ bare req/s of the same round; non-2xx and errors summed over rounds; ' +
      'RSS = the server\'s peak during the runs')
    console.log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
    if (notes.length) console.log('\n' + notes.join('\n'))
    for (const report of overloads) console.log('\n' + report.lines.join('\n'))
    if (warnings.length) {
      console.log('\n' + warnings.join('\n'))
      // The CI smoke: every scenario must answer 2xx without errors.
      process.exitCode = 1
    }
    if (flags.json) {
      const file = writeJson({
        date: new Date().toISOString(),
        node: process.version,
        ...flags,
        selected: flags.selected.map((s) => s.name),
        connections: CONNECTIONS,
        database: redact(database),
        cpus: pinning.note,
        loadavg: loadavg(),
        rows,
        overload: overloads,
        notes,
        warnings
      })
      console.log(`\nwrote ${file}`)
    }
  } finally {
    clearTimeout(watchdog)
    await stopServers()
    for (const copy of ['', '-app', '-eddsa', '-stateless', '-observed']) rmSync(`${folder}${copy}`, { recursive: true, force: true })
  }
}

process.on('exit', killServers)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\nbench: ${signal}, stopping the servers`)
    stopServers().finally(() => process.exit(130))
  })
}

main().catch((err: unknown) => {
  console.error('bench failed:', err instanceof Error ? err.message : err)
  process.exitCode = 1
})
