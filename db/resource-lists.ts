import { createHash } from 'node:crypto'
import { and, asc, count, desc, eq, getTableColumns, getTableName, or, sql, type InferSelectModel, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import { PG_INT_MAX, PG_INT_MIN } from '../schemas/common.js'
import type { FieldKind } from '../schemas/fields.js'
import { coalesced } from '../concurrency/batch.js'
import type { Database, Preparable, Runnable } from './client.js'
import { statementCache } from './driver.js'
import { InvalidCursorError } from './errors.js'
import { containsPattern } from './items.js'

export type FilterOp = 'eq' | 'ne' | 'lt' | 'lte' | 'gt' | 'gte' | 'in' | 'contains' | 'is'

/** A condition on one column; `value` is already typed by the route: an array for `in`, 'null' or 'not_null' for `is`. */
export interface Filter {
  column: string
  op: FilterOp
  value: unknown
}

export interface SortKey {
  column: string
  descending: boolean
}

export interface ListRequest {
  filters: Filter[]
  /** Ties are broken by id, in the direction of the last key (an index on (key, id) then serves both), unless the sort names it. */
  sort: SortKey[]
  limit: number
  /** Rows to skip: from the start, or after the cursor's row. */
  offset: number
  /** A previous page's `next`. */
  cursor?: string
  ownerId?: number
  /** Also count every row the filters and ownerId match. */
  count?: boolean
}

export interface ListResult<Row> {
  rows: Row[]
  /** The cursor of the page after this one, when a row follows. */
  next?: string
  total?: number
}

/** Outside a transaction, identical requests made at once share one result, which their callers must not mutate. */
export type ResourceLister<Row> = (request: ListRequest, tx?: Database) => Promise<ListResult<Row>>

const ORDERED: FilterOp[] = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in']

export const OPERATORS: Record<FieldKind, readonly FilterOp[]> = {
  text: [...ORDERED, 'contains', 'is'],
  integer: [...ORDERED, 'is'],
  number: [...ORDERED, 'is'],
  date: [...ORDERED, 'is'],
  timestamp: [...ORDERED, 'is'],
  boolean: ['eq', 'ne', 'is'],
  'text[]': ['contains', 'is'],
  jsonb: ['is']
}

const UNSORTABLE: readonly FieldKind[] = ['text[]', 'jsonb']

/** Whether a list can sort by a column of this kind: arrays and objects have no order worth asking for. */
export const sortable = (kind: FieldKind) => !UNSORTABLE.includes(kind)

export { InvalidCursorError }

/** A cursor that does not decode or was made for another sort: a 422, its `cursor` the value refused. */
const invalidCursor = (cursor: string, message: string) => Object.assign(new InvalidCursorError(message), { cursor })

interface Key {
  name: string
  column: PgColumn
  kind: FieldKind
  descending: boolean
}

const COMPARISONS: Partial<Record<FilterOp, string>> = { eq: '=', ne: 'is distinct from', lt: '<', lte: '<=', gt: '>', gte: '>=' }

/** A value in a statement: its placeholder in one prepared for every request of its shape, or the value itself. */
type Bind = (name: string, value: unknown) => unknown

function condition (column: PgColumn, kind: FieldKind, { op, value }: Filter, bind: Bind, name: string): SQL {
  const comparison = COMPARISONS[op]
  if (comparison !== undefined) return sql`${column} ${sql.raw(comparison)} ${bind(name, value)}`
  if (op === 'in') {
    const values = value as unknown[]
    return values.length === 0 ? sql`false` : sql`${column} in (${sql.join(values.map((each, i) => sql`${bind(`${name}_${i}`, each)}`), sql`, `)})`
  }
  if (op === 'contains') {
    // @> rather than = any(): a GIN index on the array can serve it.
    return kind === 'text[]'
      ? sql`${column} @> array[${bind(name, value)}::text]`
      : sql`${column} ilike ${bind(name, containsPattern(value as string))} escape '\\'`
  }
  if (value === 'null') return sql`${column} is null`
  if (value === 'not_null') return sql`${column} is not null`
  throw new Error(`filter ${column.name}[is] takes 'null' or 'not_null', not ${String(value)}`)
}

const filterShape = ({ column, op, value }: Filter) => `${column}.${op}${op === 'in' ? (value as unknown[]).length : op === 'is' ? String(value) : ''}`

/** Rows strictly after `value` in the key's order, where NULL sorts above every value (ASC NULLS LAST, DESC NULLS FIRST); undefined when none can be. */
function beyond ({ column, descending }: Key, value: unknown): SQL | undefined {
  if (value === null) return descending ? sql`${column} is not null` : undefined
  if (descending) return sql`${column} < ${value}`
  return column.notNull ? sql`${column} > ${value}` : sql`(${column} > ${value} or ${column} is null)`
}

const tie = ({ column }: Key, value: unknown) => value === null ? sql`${column} is null` : sql`${column} = ${value}`

/** The rows after the cursor's: one row comparison when it can (index-friendly), else (a > x) or (a = x and (b > y or ...)). */
function after (keys: Key[], values: unknown[]): SQL {
  const direction = keys[0]!.descending
  if (keys.every((key) => key.column.notNull && key.descending === direction)) {
    const row = (items: unknown[]) => sql.join(items.map((item) => sql`${item}`), sql`, `)
    return sql`(${row(keys.map((key) => key.column))}) ${sql.raw(direction ? '<' : '>')} (${row(values)})`
  }
  let chain: SQL | undefined
  for (let i = keys.length - 1; i >= 0; i--) {
    chain = or(beyond(keys[i]!, values[i]), chain && and(tie(keys[i]!, values[i]), chain))
  }
  return chain ?? sql`false`
}

const INSTANT = /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const NON_FINITE = ['NaN', 'Infinity', '-Infinity']

/** What toISOString gives, and PostgreSQL reads: a real calendar instant between years 1 and 9999. */
function isInstant (text: string): boolean {
  const time = Date.parse(text)
  return INSTANT.test(text) && !Number.isNaN(time) && new Date(time).toISOString() === text
}

/** Whether a decoded cursor value can be sent as the key's type: a bad one would be a database error, not a 422. */
function fits (kind: FieldKind, value: unknown): boolean {
  if (value === null) return true
  switch (kind) {
    case 'integer': return Number.isInteger(value) && (value as number) >= PG_INT_MIN && (value as number) <= PG_INT_MAX
    case 'number': return typeof value === 'number' || NON_FINITE.includes(value as string)
    case 'boolean': return typeof value === 'boolean'
    case 'timestamp': return typeof value === 'string' && isInstant(value)
    case 'date': return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) && isInstant(`${value}T00:00:00.000Z`)
    default: return typeof value === 'string' && !value.includes('\u0000')
  }
}

function cursorValue (value: unknown): unknown {
  if (value instanceof Date) return value.toISOString()
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value)
  return value
}

function encode (keys: Key[], fingerprint: string, row: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify([fingerprint, ...keys.map((key) => cursorValue(row[key.name]))])).toString('base64url')
}

function decode (cursor: string, keys: Key[], fingerprint: string): unknown[] {
  let decoded: unknown
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString())
  } catch {
    throw invalidCursor(cursor, 'is not a cursor of this list')
  }
  if (!Array.isArray(decoded) || typeof decoded[0] !== 'string') throw invalidCursor(cursor, 'is not a cursor of this list')
  if (decoded[0] !== fingerprint) throw invalidCursor(cursor, 'was made for another sort: send it with the sort of the page that gave it')
  const values = decoded.slice(1)
  if (values.length !== keys.length || !keys.every((key, i) => fits(key.kind, values[i]))) {
    throw invalidCursor(cursor, 'is not a cursor of this list')
  }
  return values
}

interface Parts { matching?: SQL, after?: SQL, limit: number, offset: number }

// Statements kept prepared per lister, rows and counts each; a list of another shape is built for its request alone.
const MAX_SHAPES = 64

/** A table's list, by offset or keyset cursor; unsupported filters and sorts are programming errors (the route refuses them). */
export function createResourceLister<T extends PgTable, Row extends object = InferSelectModel<T>> (
  db: Database, table: T, columnKinds: Record<string, FieldKind>, selection?: Record<string, PgColumn | SQL>
): ResourceLister<Row> {
  const name = getTableName(table)
  const columns = getTableColumns(table) as Record<string, PgColumn>
  const kinds: Record<string, FieldKind> = { id: 'integer', ...columnKinds }

  function columnOf (key: string): { column: PgColumn, kind: FieldKind } {
    if (!Object.hasOwn(kinds, key) || !Object.hasOwn(columns, key)) throw new Error(`${name} has no column ${key}`)
    return { column: columns[key]!, kind: kinds[key]! }
  }

  function keyOf (key: string, descending: boolean): Key {
    const { column, kind } = columnOf(key)
    if (!sortable(kind)) throw new Error(`${key} (${kind}) cannot be sorted`)
    return { name: key, column, kind, descending }
  }

  /** The sort without repeats, ending at id: nothing after a unique key changes the order. */
  function keysOf (sort: SortKey[]): Key[] {
    const keys: Key[] = []
    for (const { column, descending } of sort) {
      if (keys.some((key) => key.name === column)) continue
      keys.push(keyOf(column, descending))
      if (column === 'id') return keys
    }
    return [...keys, keyOf('id', keys.at(-1)?.descending ?? false)]
  }

  const fingerprintOf = (keys: Key[]) => createHash('sha256')
    .update(`${name}:${keys.map((key) => `${key.descending ? '-' : ''}${key.name}`).join(',')}`)
    .digest('base64url').slice(0, 12)

  function matching ({ filters, ownerId }: ListRequest, bind: Bind): SQL | undefined {
    const conditions = filters.map((filter, i) => {
      const { column, kind } = columnOf(filter.column)
      if (!OPERATORS[kind].includes(filter.op)) throw new Error(`${filter.column} (${kind}) has no ${filter.op} filter`)
      return condition(column, kind, filter, bind, `f${i}`)
    })
    return and(...conditions, ownerId === undefined ? undefined : eq(columnOf('owner_id').column, bind('owner', ownerId)))
  }

  function bound (request: ListRequest, keys: Key[], position: unknown[] | undefined, bind: Bind): Parts {
    return {
      matching: matching(request, bind),
      after: position && after(keys, position.map((value, i) => value === null ? null : bind(`p${i}`, value))),
      limit: bind('limit', request.limit + 1) as number,
      offset: bind('offset', request.offset) as number
    }
  }

  function selectPage (exec: Database, keys: Key[], parts: Parts): Preparable<Row[]> {
    const columnsRead = selection ? { ...Object.fromEntries(keys.map((key) => [key.name, key.column])), ...selection } : undefined
    return (columnsRead ? exec.select(columnsRead) : exec.select()).from(table as PgTable).where(and(parts.matching, parts.after))
      .orderBy(...keys.map((key) => key.descending ? desc(key.column) : asc(key.column)))
      .limit(parts.limit).offset(parts.offset) as unknown as Preparable<Row[]>
  }

  const selectCount = (exec: Database, parts: Parts) =>
    exec.select({ total: count() }).from(table as PgTable).where(parts.matching) as unknown as Preparable<Array<{ total: number }>>

  const statements = statementCache(name, MAX_SHAPES)
  const prepared = <R>(kind: 'rows' | 'count', shape: string, make: () => Preparable<R>): Runnable<R> | undefined =>
    statements.shaped(kind, shape, (as) => make().prepare(as))

  async function list (request: ListRequest, tx?: Database): Promise<ListResult<Row>> {
    const keys = keysOf(request.sort)
    const fingerprint = fingerprintOf(keys)
    const position = request.cursor === undefined ? undefined : decode(request.cursor, keys, fingerprint)
    const filters = `${request.filters.map(filterShape).join(',')}${request.ownerId === undefined ? '' : ';owned'}`
    const rowsShape = `${filters}|${fingerprint}|${position?.map((value) => value === null ? 'n' : 'v').join('') ?? ''}`
    const placeheld = () => bound(request, keys, position, (key) => sql.placeholder(key))
    const rows = tx ? undefined : prepared('rows', rowsShape, () => selectPage(db, keys, placeheld()))
    const counted = !request.count || tx ? undefined : prepared('count', filters, () => selectCount(db, placeheld()))
    const values: Record<string, unknown> = {}
    if (rows || counted) bound(request, keys, position, (key, value) => { values[key] = value })
    let inline: Parts | undefined
    const run = <R>(statement: Runnable<R> | undefined, make: (exec: Database, parts: Parts) => Preparable<R>) => {
      if (statement) return statement.execute(values)
      inline ??= bound(request, keys, position, (_key, value) => value)
      return make(tx ?? db, inline).execute({})
    }
    const [found, total] = await Promise.all([
      run(rows, (exec, parts) => selectPage(exec, keys, parts)),
      request.count ? run(counted, selectCount) : undefined
    ])
    const result: ListResult<Row> = { rows: found.slice(0, request.limit) }
    if (found.length > request.limit) result.next = encode(keys, fingerprint, result.rows.at(-1) as Record<string, unknown>)
    if (total !== undefined) result.total = total[0]!.total
    return result
  }

  // Outside a transaction, the same list asked for by many requests at once is read once.
  const shared = coalesced(list, (request: ListRequest) => JSON.stringify(request))
  return (request, tx) => tx ? list(request, tx) : shared(request)
}
