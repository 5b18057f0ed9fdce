import autocannon from 'autocannon'
import { build } from 'hdr-histogram-js'
import { CONNECTIONS, prepare, type Request } from './load.js'
import { textTable } from './report.js'
import { onPostgres, scenarios } from './scenarios.js'
import type { Server } from './servers.js'

/** Each runs a normal scenario at 10 × the bench's saturating concurrency. */
export const overloadScenarios = [
  { name: 'overload-item-get', base: 'item-get' },
  { name: 'overload-login', base: 'login' }
]
export const overloadNames = overloadScenarios.map((scenario) => scenario.name)

export const OVERLOAD_CONNECTIONS = 10 * CONNECTIONS
// The targets of graceful overload (docs/operations.md, "Overload").
const P99_FACTOR = 5
const RECOVERY_SECONDS = 2
const RECOVERED = 0.9
const RSS_BOUND_MB = onPostgres ? 150 : 300

export interface Phases {
  /** Unmeasured, as the other scenarios' warm-up: a cold process is slower than a saturated one. */
  warmup: number
  saturation: number
  overload: number
  recovery: number
}

export const overloadPhases = (quick: boolean): Phases => quick ? { warmup: 0, saturation: 2, overload: 2, recovery: 3 } : { warmup: 3, saturation: 10, overload: 30, recovery: 10 }

interface Run {
  seconds: number
  ok: number
  shed: number
  /** Answers other than 2xx and 503, and connection errors and timeouts. */
  other: number
  statuses: Record<string, number>
  errors: number
  /** Milliseconds, of the 2xx answers only. */
  p99: number
  okPerSecond: number[]
  peakRss: number
}

/** One autocannon run; latency is recorded for 2xx answers only, so fast 503s do not flatter it. */
async function measure (server: Server, request: Request, connections: number, seconds: number): Promise<Run> {
  const { path, perConnection, expect: _expect, ...rest } = request
  const options: autocannon.Options = { url: server.url + path, connections, duration: seconds, ...rest }
  if (perConnection) options.setupClient = (client) => client.setRequests(perConnection())
  // Microseconds, up to a minute.
  const latency = build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 })
  let ok = 0
  let counted = 0
  const okPerSecond: number[] = []
  let peakRss = await server.rss()
  const sampler = setInterval(() => { server.rss().then((rss) => { peakRss = Math.max(peakRss, rss) }, () => {}) }, 500)
  try {
    const instance = autocannon(options)
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status < 200 || status > 299) return
      ok++
      latency.recordValue(Math.max(1, Math.round(ms * 1000)))
    })
    instance.on('tick', () => {
      okPerSecond.push(ok - counted)
      counted = ok
    })
    const result = await instance
    const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]))
    const shed = statuses['503'] ?? 0
    const others = Object.entries(statuses).filter(([code]) => !code.startsWith('2') && code !== '503').reduce((sum, [, count]) => sum + count, 0)
    return {
      seconds,
      ok,
      shed,
      other: others + result.errors,
      statuses,
      errors: result.errors,
      p99: latency.getValueAtPercentile(99) / 1000,
      okPerSecond,
      peakRss: Math.max(peakRss, await server.rss())
    }
  } finally {
    clearInterval(sampler)
    latency.destroy()
  }
}

export interface OverloadReport {
  name: string
  lines: string[]
  /** Targets missed, and answers that are neither 2xx nor 503. */
  failures: string[]
  /** Answers that are neither 2xx nor 503, and errors: the smoke fails on these. */
  warnings: string[]
}

const mb = (bytes: number) => bytes / 1024 / 1024

/**
 * Saturation (the bench's connections) for its 2xx p99 and throughput; then 10 × the connections,
 * where the server must shed with 503 and keep the p99 of what it accepts, its errors and memory
 * bounded; then the saturating load again, second by second, until throughput is back.
 */
export async function runOverload (name: string, app: Server, phases: Phases, quick: boolean): Promise<OverloadReport> {
  const spec = overloadScenarios.find((scenario) => scenario.name === name)!
  const scenario = scenarios.find((one) => one.name === spec.base)!
  const request = await prepare(scenario, app.url, quick)
  if (phases.warmup) {
    console.error(`${name}: warm-up, ${CONNECTIONS} connections, ${phases.warmup} s`)
    await measure(app, request, CONNECTIONS, phases.warmup)
  }
  console.error(`${name}: saturation, ${CONNECTIONS} connections, ${phases.saturation} s`)
  const saturation = await measure(app, request, CONNECTIONS, phases.saturation)
  console.error(`${name}: overload, ${OVERLOAD_CONNECTIONS} connections, ${phases.overload} s`)
  const overload = await measure(app, request, OVERLOAD_CONNECTIONS, phases.overload)
  console.error(`${name}: recovery, ${CONNECTIONS} connections, ${phases.recovery} s`)
  const recovery = await measure(app, request, CONNECTIONS, phases.recovery)

  const rate = (run: Run) => run.ok / run.seconds
  const baseline = rate(saturation)
  const back = recovery.okPerSecond.findIndex((ok) => ok >= RECOVERED * baseline)
  const recoverySeconds = back === -1 ? Infinity : back + 1
  const rssMB = mb(Math.max(overload.peakRss, recovery.peakRss))
  const checks: Array<[string, boolean]> = [
    [`no 503 at saturation (${saturation.shed})`, saturation.shed === 0],
    [`sheds with 503 under overload (${overload.shed})`, overload.shed > 0],
    [`accepted p99 ${overload.ok ? `${overload.p99.toFixed(1)} ms` : '(no 2xx)'} <= ${P99_FACTOR} × saturation p99 ${saturation.p99.toFixed(1)} ms`, overload.ok > 0 && overload.p99 <= P99_FACTOR * saturation.p99],
    [`no answer but 2xx and 503, no errors (${overload.other + recovery.other + saturation.other})`, overload.other + recovery.other + saturation.other === 0],
    [`peak RSS ${rssMB.toFixed(0)} MB < ${RSS_BOUND_MB} MB`, rssMB < RSS_BOUND_MB],
    [`throughput back to ${RECOVERED} × saturation within ${RECOVERY_SECONDS} s (${Number.isFinite(recoverySeconds) ? `${recoverySeconds} s` : 'not within the run'})`, recoverySeconds <= RECOVERY_SECONDS]
  ]
  const table = textTable(['phase', 'conns', '2xx/s', '503', 'other', 'p99 2xx ms', 'RSS MB'], [
    ['saturation', String(CONNECTIONS), baseline.toFixed(0), String(saturation.shed), String(saturation.other), saturation.p99.toFixed(1), mb(saturation.peakRss).toFixed(0)],
    ['overload', String(OVERLOAD_CONNECTIONS), rate(overload).toFixed(0), String(overload.shed), String(overload.other), overload.p99.toFixed(1), mb(overload.peakRss).toFixed(0)],
    ['recovery', String(CONNECTIONS), rate(recovery).toFixed(0), String(recovery.shed), String(recovery.other), recovery.p99.toFixed(1), mb(recovery.peakRss).toFixed(0)]
  ])
  const lines = [
    `${name} (${spec.base}; ${phases.saturation} s, ${phases.overload} s, ${phases.recovery} s):`,
    table,
    `recovery 2xx per second: ${recovery.okPerSecond.join(' ')}`,
    ...checks.map(([what, pass]) => `${pass ? 'PASS' : 'FAIL'} ${what}`)
  ]
  const unexpected = (phase: string, run: Run) => run.other === 0
    ? []
    : [`WARNING ${name} ${phase}: ${Object.entries(run.statuses).filter(([code]) => !code.startsWith('2') && code !== '503').map(([code, count]) => `${count} × ${code}`).concat(run.errors ? [`${run.errors} errors`] : []).join(', ')}`]
  return {
    name,
    lines,
    failures: checks.filter(([, pass]) => !pass).map(([what]) => `${name}: ${what}`),
    warnings: [...unexpected('saturation', saturation), ...unexpected('overload', overload), ...unexpected('recovery', recovery)]
  }
}
