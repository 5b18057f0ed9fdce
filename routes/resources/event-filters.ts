import type { Filter } from '../../db/resource-lists.js'
import type { FieldKind } from '../../schemas/fields.js'

/**
 * The list's filters (db/resource-lists.ts) evaluated on a row's JSON, for the change feed, which
 * cannot ask the database about each event. Where JavaScript and PostgreSQL could differ, this
 * follows PostgreSQL:
 * - NULL (a member absent or null) matches only `ne` (IS DISTINCT FROM) and `is=null`.
 * - text orders by code point, as the C collation does (plinth's databases and PGlite's); a
 *   database with a linguistic collation (en_US.UTF-8) orders `lt`..`gte` differently.
 * - `contains` on text folds case with toLowerCase, as ILIKE does under a UTF-8 ctype (PGlite's,
 *   en_US.UTF-8); under ctype C, PostgreSQL folds ASCII letters only.
 * - numbers: NaN equals NaN and sorts above every number, as double precision does.
 * - instants compare to the microsecond of the filter's value, as timestamptz does; rows hold milliseconds.
 * An `in` list is compiled once into a Set of keys, each key equal where the comparison says equal.
 */
export type RowMatcher = (row: Record<string, unknown>) => boolean

type Compare = (a: unknown, b: unknown) => number

const NON_FINITE: Record<string, number> = { NaN, Infinity, '-Infinity': -Infinity }

const numberOf = (value: unknown) => typeof value === 'string' ? NON_FINITE[value] ?? NaN : value as number

function compareNumbers (a: unknown, b: unknown): number {
  const [x, y] = [numberOf(a), numberOf(b)]
  if (Number.isNaN(x) || Number.isNaN(y)) return Number(Number.isNaN(x)) - Number(Number.isNaN(y))
  return x < y ? -1 : x > y ? 1 : 0
}

/** Code point order: UTF-16 order differs from it where a surrogate pair meets U+E000..U+FFFF. */
function compareText (a: unknown, b: unknown): number {
  const [x, y] = [a as string, b as string]
  if (x === y) return 0
  for (let i = 0; i < x.length && i < y.length; i++) {
    if (x.charCodeAt(i) === y.charCodeAt(i)) continue
    const [p, q] = [x.codePointAt(i)!, y.codePointAt(i)!]
    return p < q ? -1 : 1
  }
  return x.length - y.length
}

const DATE_TIME = /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d\d)(?::?(\d\d))?)$/
// Date.UTC reads years 0 to 99 as 1900 to 1999: computed 400 years (a whole Gregorian cycle) later.
const CYCLE_MS = 146_097 * 86_400_000

/** An instant as [milliseconds, microseconds past them], PostgreSQL's precision; the rows' own text has milliseconds. */
function instantOf (value: unknown): [number, number] {
  const [, year, month, day, hour, minute, second, fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = DATE_TIME.exec(value as string) ?? []
  if (year === undefined) return [NaN, 0]
  const micros = Math.round(Number(`0.${fraction}`) * 1e6)
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes))
  const ms = Date.UTC(Number(year) + 400, Number(month) - 1, Number(day), Number(hour), Number(minute) - offset, Number(second)) - CYCLE_MS
  return [ms + Math.floor(micros / 1000), micros % 1000]
}

function compareInstants (a: unknown, b: unknown): number {
  const [[x, xs], [y, ys]] = [instantOf(a), instantOf(b)]
  return x !== y ? x - y : xs - ys
}

const COMPARE: Partial<Record<FieldKind, Compare>> = {
  integer: compareNumbers,
  number: compareNumbers,
  text: compareText,
  // YYYY-MM-DD, four-digit years: text order is date order.
  date: compareText,
  timestamp: compareInstants,
  boolean: (a, b) => Number(a) - Number(b)
}

const same = (value: unknown) => value

/** A value's key for an `in` Set: two keys are the same (SameValueZero: NaN is NaN, 0 is -0) exactly when COMPARE says 0. */
const KEY: Partial<Record<FieldKind, (value: unknown) => unknown>> = {
  integer: numberOf,
  number: numberOf,
  text: same,
  date: same,
  timestamp: (value) => {
    const [ms, micros] = instantOf(value)
    // Not an instant: equal to nothing, as compareInstants says.
    return Number.isNaN(ms) ? undefined : `${ms}.${micros}`
  },
  boolean: (value) => Number(value)
}

const WITH_ORDER: Partial<Record<Filter['op'], (order: number) => boolean>> = {
  eq: (order) => order === 0,
  lt: (order) => order < 0,
  lte: (order) => order <= 0,
  gt: (order) => order > 0,
  gte: (order) => order >= 0
}

function condition (kind: FieldKind, { column, op, value }: Filter): RowMatcher {
  const is = (row: Record<string, unknown>) => row[column] ?? null
  if (op === 'is') return value === 'null' ? (row) => is(row) === null : (row) => is(row) !== null
  if (op === 'contains' && kind === 'text[]') return (row) => Array.isArray(row[column]) && (row[column] as unknown[]).includes(value)
  if (op === 'contains') {
    const needle = (value as string).toLowerCase()
    return (row) => typeof row[column] === 'string' && (row[column] as string).toLowerCase().includes(needle)
  }
  const compare = COMPARE[kind]
  if (compare === undefined) throw new Error(`${column} (${kind}) has no ${op} filter`)
  if (op === 'ne') return (row) => is(row) === null || compare(is(row), value) !== 0
  if (op === 'in') {
    const key = KEY[kind]!
    // Each value once, in a Set: an event costs one lookup per stream, not one comparison per value.
    const keys = new Set<unknown>((value as unknown[]).map(key).filter((each) => each !== undefined))
    return (row) => is(row) !== null && keys.has(key(is(row)))
  }
  const test = WITH_ORDER[op]!
  return (row) => is(row) !== null && test(compare(is(row), value))
}

/** Whether a row, as the list shows it, passes every filter: the list's `where` in JavaScript. */
export function rowMatcher (filters: Filter[], kinds: Record<string, FieldKind>): RowMatcher {
  const conditions = filters.map((filter) => {
    const kind = kinds[filter.column]
    if (kind === undefined) throw new Error(`no column ${filter.column}`)
    return condition(kind, filter)
  })
  return (row) => conditions.every((matches) => matches(row))
}
