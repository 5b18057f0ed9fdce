import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type autocannon from 'autocannon'

export interface Sample {
  reqPerSec: number
  p50: number
  p99: number
  non2xx: number
  /** Includes timeouts. */
  errors: number
  timeouts: number
  statusCodes: Record<string, number>
}

export interface Row {
  name: string
  reqPerSec: number
  p50: number
  p99: number
  /** Median over rounds of req/s ÷ the bare server's req/s in the same round. */
  ratio: number
  /** Summed over every round, so that none is hidden by the medians. */
  non2xx: number
  errors: number
  rssMB: number
  samples: Sample[]
}

/** With `expect`, that status counts as a success, as a 2xx does. */
export function toSample (result: autocannon.Result, expect?: number): Sample {
  const expected = expect === undefined ? 0 : result.statusCodeStats[String(expect)]?.count ?? 0
  return {
    reqPerSec: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx - expected,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]))
  }
}

export function median (values: number[]) {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

export const sum = (values: number[]) => values.reduce((total, value) => total + value, 0)

export function toRow (name: string, samples: Sample[], ratios: number[], rss: number): Row {
  return {
    name,
    reqPerSec: median(samples.map((s) => s.reqPerSec)),
    p50: median(samples.map((s) => s.p50)),
    p99: median(samples.map((s) => s.p99)),
    ratio: median(ratios),
    non2xx: sum(samples.map((s) => s.non2xx)),
    errors: sum(samples.map((s) => s.errors)),
    rssMB: rss / 1024 / 1024,
    samples
  }
}

/** A line for each sample with non-2xx answers or errors, naming the status codes and timeouts. */
export function problems (name: string, samples: Sample[]) {
  return samples.flatMap((s, i) => {
    if (!s.non2xx && !s.errors) return []
    const codes = Object.entries(s.statusCodes).filter(([code]) => !code.startsWith('2'))
    const detail = [
      ...codes.map(([code, count]) => `${count} × ${code}`),
      ...(s.errors ? [`${s.errors} errors (${s.timeouts} timeouts)`] : [])
    ]
    return [`WARNING ${name}, run ${i + 1}: ${detail.join(', ')}`]
  })
}

/** A plain-text table: the first column left-aligned, the others right-aligned. */
export function textTable (header: string[], lines: string[][]) {
  const widths = header.map((title, i) => Math.max(title.length, ...lines.map((line) => line[i]!.length)))
  const format = (cells: string[]) =>
    cells.map((cell, i) => i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)).join('  ')
  return [format(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(format)].join('\n')
}

export function formatTable (rows: Row[]) {
  return textTable(['scenario', 'req/s', 'p50 ms', 'p99 ms', '× bare', 'non-2xx', 'errors', 'RSS MB'], rows.map((r) => [
    r.name, r.reqPerSec.toFixed(0), r.p50.toFixed(2), r.p99.toFixed(2), r.ratio.toFixed(2),
    String(r.non2xx), String(r.errors), r.rssMB.toFixed(1)
  ]))
}

/** Userinfo out of a database URL: the output may be pasted anywhere. */
export const redact = (url: string) => url.replace(/\/\/[^/@]*@/, '//')

/** Writes bench/results/latest.json in the source tree (git-ignored), returns its path. */
export function writeJson (data: unknown) {
  const folder = new URL('../../bench/results/', import.meta.url)
  mkdirSync(folder, { recursive: true })
  const file = fileURLToPath(new URL('latest.json', folder))
  writeFileSync(file, JSON.stringify(data, null, 2) + '\n')
  return file
}
