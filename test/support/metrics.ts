/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4): what a scrape would
 * refuse fails the test, with its line. Every sample belongs to the family declared just before it,
 * appears once, and a histogram's buckets are cumulative up to `+Inf`, which equals its `_count`.
 */

export interface Sample { name: string, labels: Record<string, string>, value: number }
export interface Family { name: string, type: string, help: string, samples: Sample[] }
export type Metrics = Map<string, Family>

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const SUFFIXES: Record<string, string[]> = {
  counter: [''], gauge: [''], untyped: [''], histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count']
}
// As Prometheus reads a value (Go's ParseFloat): NaN and Inf in any case.
const NUMBER = /^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|infinity|nan)$/i

const unescape = (text: string, quotes: boolean) => text.replace(quotes ? /\\(["\\n])/g : /\\([\\n])/g, (_, char: string) => char === 'n' ? '\n' : char)

function readSample (line: string, fail: (why: string) => Error): Sample {
  const name = /^[^{ ]+/.exec(line)?.[0] ?? ''
  if (!METRIC_NAME.test(name)) throw fail('bad metric name')
  let rest = line.slice(name.length)
  const labels: Record<string, string> = {}
  if (rest.startsWith('{')) {
    const match = /^\{((?:\s*[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"\s*,?)*)\s*\}/.exec(rest)
    if (!match) throw fail('bad labels')
    for (const [, label = '', value = ''] of match[1]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      if (!LABEL_NAME.test(label) || label.startsWith('__')) throw fail(`bad label name ${label}`)
      if (label in labels) throw fail(`label ${label} twice`)
      labels[label] = unescape(value, true)
    }
    rest = rest.slice(match[0].length)
  }
  const [, value = '', timestamp] = /^ +(\S+)(?: +(-?\d+))?$/.exec(rest) ?? []
  if (!NUMBER.test(value) || (timestamp !== undefined && !/^-?\d+$/.test(timestamp))) throw fail('bad value or timestamp')
  return { name, labels, value: /^[+-]?inf/i.test(value) ? (value.startsWith('-') ? -Infinity : Infinity) : /nan/i.test(value) ? NaN : Number(value) }
}

const seriesKey = (labels: Record<string, string>, without?: string) =>
  JSON.stringify(Object.entries(labels).filter(([name]) => name !== without).sort(([a], [b]) => a.localeCompare(b)))

function checkHistogram (family: Family) {
  const series = new Map<string, { buckets: Array<[number, number]>, count?: number }>()
  for (const sample of family.samples) {
    const key = seriesKey(sample.labels, 'le')
    const entry = series.get(key) ?? { buckets: [] }
    series.set(key, entry)
    if (sample.name.endsWith('_count')) entry.count = sample.value
    if (sample.name.endsWith('_bucket')) {
      if (sample.labels.le === undefined) throw new Error(`${family.name}: a bucket without le`)
      entry.buckets.push([Number(sample.labels.le.replace('Inf', 'Infinity')), sample.value])
    }
  }
  for (const [key, { buckets, count }] of series) {
    const sorted = [...buckets].sort(([a], [b]) => a - b)
    if (sorted.at(-1)?.[0] !== Infinity || sorted.at(-1)?.[1] !== count) throw new Error(`${family.name} ${key}: the +Inf bucket is not the count`)
    if (sorted.some(([, value], i) => i > 0 && value < sorted[i - 1]![1])) throw new Error(`${family.name} ${key}: buckets are not cumulative`)
  }
}

/** The families of a text exposition, by name. */
export function readMetrics (text: string): Metrics {
  if (!text.endsWith('\n')) throw new Error('an exposition ends with a line feed')
  const families: Metrics = new Map()
  const seen = new Set<string>()
  let current: Family | undefined
  text.slice(0, -1).split('\n').forEach((line, i) => {
    const fail = (why: string) => new Error(`line ${i + 1}: ${why}: ${line}`)
    if (line === '') return
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line)
    if (meta) {
      const [, kind, name = '', rest = ''] = meta
      if (!METRIC_NAME.test(name)) throw fail('bad metric name')
      const family = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] }
      if (family.samples.length > 0 || (current && current !== family && families.has(name))) throw fail('a family declared twice or after its samples')
      if (kind === 'TYPE') {
        if (!(rest in SUFFIXES)) throw fail('unknown type')
        family.type = rest
      } else {
        family.help = unescape(rest, false)
      }
      families.set(name, family)
      current = family
      return
    }
    if (line.startsWith('#')) return
    const sample = readSample(line, fail)
    const owner = current && SUFFIXES[current.type]!.some((suffix) => sample.name === current!.name + suffix) ? current : undefined
    if (!owner) throw fail('a sample outside the family declared before it')
    const key = `${sample.name}${seriesKey(sample.labels)}`
    if (seen.has(key)) throw fail('a series given twice')
    seen.add(key)
    owner.samples.push(sample)
  })
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family)
  return families
}

/**
 * The sum of a family's samples named `sample` (the family's own name, or a histogram's `_count`)
 * whose labels include `labels`.
 */
export function valueOf (metrics: Metrics, name: string, labels: Record<string, string> = {}, sample?: string): number {
  const family = metrics.get(name)
  if (!family) throw new Error(`no metric ${name} among ${[...metrics.keys()].join(', ')}`)
  const wanted = sample ?? (family.type === 'histogram' ? `${name}_count` : name)
  return family.samples
    .filter((one) => one.name === wanted && Object.entries(labels).every(([label, value]) => one.labels[label] === value))
    .reduce((sum, one) => sum + one.value, 0)
}
