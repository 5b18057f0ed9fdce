import type { Sample } from './soak-probes.js'
import type { Outcome, Ticks } from './soak-traffic.js'

/** How many times each key occurs. */
export function tally (keys: string[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const key of keys) counts[key] = (counts[key] ?? 0) + 1
  return counts
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN

/** One line per route: how many answers of each status (or error), the rate, and latencies in ms. */
export function byRoute (outcomes: Outcome[], seconds: number): string[] {
  const routes = new Map<string, Outcome[]>()
  for (const outcome of outcomes) {
    if (!routes.has(outcome.route)) routes.set(outcome.route, [])
    routes.get(outcome.route)?.push(outcome)
  }
  const lines = [...routes].sort(([a], [b]) => a.localeCompare(b)).map(([route, list]) => {
    const counts = tally(list.map(({ status, error }) => String(status ?? error)))
    const ms = list.map((outcome) => outcome.ms).sort((a, b) => a - b)
    return `${route.padEnd(28)} ${JSON.stringify(counts).padEnd(18)} ${(list.length / seconds).toFixed(2).padStart(6)}/s` +
      `  p50 ${percentile(ms, 0.5).toFixed(0)} p99 ${percentile(ms, 0.99).toFixed(0)} max ${percentile(ms, 1).toFixed(0)} ms`
  })
  return [`${outcomes.length} requests, ${(outcomes.length / seconds).toFixed(1)}/s`, ...lines]
}

/** One line per stream: the rate asked for and the rate its runs were started at. */
export function byStream (ticks: Ticks[], seconds: number): string[] {
  return ticks.map(({ name, perSecond, fired, skipped }) =>
    `${name.padEnd(52)} ${perSecond}/s asked, ${(fired / seconds).toFixed(2)}/s started (${fired} runs, ${skipped} skipped)`)
}

/** A series as its first, largest and last values, then every value. */
export function series (name: string, samples: Array<Sample<number>>): string[] {
  const values = samples.map((sample) => sample.value)
  const first = samples[0]
  const last = samples.at(-1)
  return [
    `${name}: start ${first?.value.toFixed(1)} at ${first?.at.toFixed(0)} s, max ${Math.max(...values).toFixed(1)}, ` +
      `end ${last?.value.toFixed(1)} at ${last?.at.toFixed(0)} s (${values.length} samples)`,
    `  ${samples.map((sample) => sample.value.toFixed(0)).join(' ')}`
  ]
}
