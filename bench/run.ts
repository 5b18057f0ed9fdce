import { existsSync } from 'node:fs'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import autocannon from 'autocannon'
import { formatTable, problems, toRow, toSample, writeJson, type Row, type Sample } from './report.js'
import { scenarios, type Scenario } from './scenarios.js'
import { killServers, pinCpus, startServer, stopServers, type Server } from './servers.js'

const USAGE = `usage: npm run bench -- [--quick] [--only name1,name2] [--json] [--duration s] [--rounds n]
  --quick      one 3 s round per scenario after a 1 s warm-up (default: 3 rounds of 10 s after 3 s)
  --only       run only these scenarios: ${scenarios.map((s) => s.name).join(', ')}
  --json       also write bench/results/latest.json
  --duration   seconds per measured run      --rounds   rounds per scenario`

const CONNECTIONS = 50

interface Request { method: string, path: string, headers: Record<string, string>, body?: string }

const BARE: Request = { method: 'GET', path: '/', headers: {} }

function fail (message: string): never {
  console.error(`bench: ${message}\n${USAGE}`)
  process.exit(2)
}

function positive (flag: string, value: string | undefined, fallback: number) {
  if (value === undefined) return fallback
  const number = Number(value)
  if (!(number > 0)) fail(`--${flag} must be a positive number (got "${value}")`)
  return number
}

function readFlags () {
  let values
  try {
    values = parseArgs({
      options: {
        quick: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        only: { type: 'string' },
        duration: { type: 'string' },
        rounds: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false }
      }
    }).values
  } catch (err) {
    fail((err as Error).message)
  }
  if (values.help) {
    console.log(USAGE)
    process.exit(0)
  }
  const names = values.only?.split(',').map((name) => name.trim()).filter(Boolean)
  const unknown = names?.filter((name) => !scenarios.some((s) => s.name === name)) ?? []
  if (unknown.length) fail(`unknown scenario ${unknown.join(', ')}`)
  return {
    mode: values.quick ? 'quick' : 'full',
    json: values.json,
    selected: names ? scenarios.filter((s) => names.includes(s.name)) : scenarios,
    warmup: values.quick ? 1 : 3,
    duration: positive('duration', values.duration, values.quick ? 3 : 10),
    rounds: Math.ceil(positive('rounds', values.rounds, values.quick ? 1 : 3))
  }
}

async function prepare (scenario: Scenario, baseUrl: string): Promise<Request> {
  const extra = (await scenario.setup?.(baseUrl)) ?? {}
  const { path, body, headers } = { ...scenario, ...extra }
  if (!path.startsWith('/')) throw new Error(`scenario ${scenario.name}: path must start with / (got "${path}")`)
  const json = body !== undefined && typeof body !== 'string'
  return {
    method: scenario.method ?? 'GET',
    path,
    headers: { ...(json ? { 'content-type': 'application/json' } : {}), ...headers },
    body: json ? JSON.stringify(body) : body as string | undefined
  }
}

async function load (server: Server, request: Request, seconds: number) {
  const { path, ...rest } = request
  return toSample(await autocannon({ url: server.url + path, connections: CONNECTIONS, duration: seconds, ...rest }))
}

/** Userinfo out of a database URL: the output may be pasted anywhere. */
const redact = (url: string) => url.replace(/\/\/[^/@]*@/, '//')

async function main () {
  const flags = readFlags()
  if (!existsSync(new URL('../db/migrations/meta/_journal.json', import.meta.url))) {
    throw new Error('dist/db/migrations is missing: build with `npm run build` (tsc alone does not copy it)')
  }
  const database = process.env.BENCH_DATABASE_URL || 'memory://'
  const pinning = pinCpus()
  const perScenario = 2 * flags.warmup + 2 * flags.rounds * flags.duration
  // Generous, but a stuck run still ends: startup, setups and RSS queries are not counted above.
  const budget = 90 + flags.selected.length * (perScenario + 30)
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${budget} s; stopping`)
    stopServers().finally(() => process.exit(1))
  }, budget * 1000)

  console.log(`plinth bench (${flags.mode}): ${flags.rounds} round(s) of ${flags.duration} s after ${flags.warmup} s warm-up, ` +
    `${CONNECTIONS} connections, Node ${process.version}`)
  // Other processes on these CPUs skew every number: the load average says how busy the host was.
  console.log(`database: ${redact(database)}; CPUs: ${pinning.note}; load average ${loadavg()[0]!.toFixed(2)}`)

  try {
    const [bare, app] = await Promise.all([
      startServer('bare', 'bare-server', pinning),
      startServer('app', 'app-server', pinning, { BENCH_DATABASE_URL: database })
    ])
    const rows: Row[] = []
    const baseline: Sample[] = []
    const warnings: string[] = []
    for (const scenario of flags.selected) {
      const request = await prepare(scenario, app.url)
      console.error(`${scenario.name}: warm-up`)
      warnings.push(...problems(`bare warm-up before ${scenario.name}`, [await load(bare, BARE, flags.warmup)]))
      warnings.push(...problems(`${scenario.name} warm-up`, [await load(app, request, flags.warmup)]))
      const bareSamples: Sample[] = []
      const samples: Sample[] = []
      // Alternating keeps drift (thermal, noisy neighbours) out of the ratio.
      for (let round = 1; round <= flags.rounds; round++) {
        console.error(`${scenario.name}: round ${round}/${flags.rounds}`)
        bareSamples.push(await load(bare, BARE, flags.duration))
        samples.push(await load(app, request, flags.duration))
      }
      const ratios = samples.map((s, i) => s.reqPerSec / bareSamples[i]!.reqPerSec)
      rows.push(toRow(scenario.name, samples, ratios, await app.rss()))
      warnings.push(...problems(`bare before ${scenario.name}`, bareSamples), ...problems(scenario.name, samples))
      baseline.push(...bareSamples)
    }
    rows.unshift(toRow('bare', baseline, baseline.map(() => 1), await bare.rss()))

    console.log('\n' + formatTable(rows))
    console.log('\nmedians over rounds; × bare = req/s ÷ bare req/s of the same round; non-2xx and errors summed over rounds')
    if (warnings.length) console.log('\n' + warnings.join('\n'))
    if (flags.json) {
      const file = writeJson({
        date: new Date().toISOString(),
        node: process.version,
        ...flags,
        selected: flags.selected.map((s) => s.name),
        connections: CONNECTIONS,
        database: redact(database),
        cpus: pinning.note,
        rows,
        warnings
      })
      console.log(`\nwrote ${file}`)
    }
  } finally {
    clearTimeout(watchdog)
    await stopServers()
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
