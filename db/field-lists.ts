import { createHash } from 'node:crypto'
import createError from '@fastify/error'
import { and, asc, count, desc, eq, getTableColumns, getTableName, or, sql, type InferSelectModel, type Placeholder, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import type { FieldKind } from '../schemas/fields.js'
import type { Database } from './client.js'
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
  /** Only this user's rows (owner_id). */
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

export type FieldLister<Row> = (request: ListRequest, tx?: Database) => Promise<ListResult<Row>>

const ORDERED: FilterOp[] = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in']

/** The filters each kind supports; every kind has `is`. */
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

/** A cursor that does not decode or was made for another sort: a 422, its `cursor` the value refused. */
export const InvalidCursorError = createError('RESOURCE_INVALID_CURSOR', '%s', 422)

const invalidCursor = (cursor: string, message: string) => Object.assign(new InvalidCursorError(message), { cursor })

interface Key {
  name: string
  column: PgColumn
  kind: FieldKind
  descending: boolean
}

const COMPARISONS: Partial<Record<FilterOp, string>> = { eq: '=', ne: 'is distinct from', lt: '<', lte: '<=', gt: '>', gte: '>=' }

function condition (column: PgColumn, kind: FieldKind, { op, value }: Filter): SQL {
  const comparison = COMPARISONS[op]
  if (comparison !== undefined) return sql`${column} ${sql.raw(comparison)} ${value}`
  if (op === 'in') {
    const values = value as unknown[]
    return values.length === 0 ? sql`false` : sql`${column} in (${sql.join(values.map((each) => sql`${each}`), sql`, `)})`
  }
  if (op === 'contains') {
    // @> rather than = any(): a GIN index on the array can serve it.
    return kind === 'text[]' ? sql`${column} @> array[${value}::text]` : sql`${column} ilike ${containsPattern(value as string)} escape '\\'`
  }
  if (value === 'null') return sql`${column} is null`
  if (value === 'not_null') return sql`${column} is not null`
  throw new Error(`filter ${column.name}[is] takes 'null' or 'not_null', not ${String(value)}`)
}

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
const INT_MIN = -(2 ** 31)
const INT_MAX = 2 ** 31 - 1

/** What toISOString gives, and PostgreSQL reads: a real calendar instant between years 1 and 9999. */
function isInstant (text: string): boolean {
  const time = Date.parse(text)
  return INSTANT.test(text) && !Number.isNaN(time) && new Date(time).toISOString() === text
}

/** Whether a decoded cursor value can be sent as the key's type: a bad one would be a database error, not a 422. */
function fits (kind: FieldKind, value: unknown): boolean {
  if (value === null) return true
  switch (kind) {
    case 'integer': return Number.isInteger(value) && (value as number) >= INT_MIN && (value as number) <= INT_MAX
    case 'number': return typeof value === 'number' || NON_FINITE.includes(value as string)
    case 'boolean': return typeof value === 'boolean'
    case 'timestamp': return typeof value === 'string' && isInstant(value)
    case 'date': return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) && isInstant(`${value}T00:00:00.000Z`)
    default: return typeof value === 'string' && !value.includes('\u0000')
  }
}

/** A row's sort value as JSON: timestamps as ISO strings, NaN and infinities by name. */
function cursorValue (value: unknown): unknown {
  if (value instanceof Date) return value.toISOString()
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value)
  return value
}

function encode (keys: Key[], fingerprint: string, row: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify([fingerprint, ...keys.map((key) => cursorValue(row[key.name]))])).toString('base64url')
}

/** The sort values of the cursor's row, checked against the sort and the keys' types. */
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

interface Runnable { execute (values: Record<string, unknown>): Promise<unknown> }

/**
 * The list of a table whose columns are named like `columnKinds`' keys (id, created_at... and the fields):
 * filtered, sorted, a page at a time by offset or keyset cursor. Rows are whole, or what `selection` picks
 * (the sort's columns are read too, for the cursor). Filters and sorts the kinds do not support are
 * programming errors (the route refuses them first); a bad cursor is an InvalidCursorError.
 */
export function createFieldLister<T extends PgTable, Row extends object = InferSelectModel<T>> (
  db: Database, table: T, columnKinds: Record<string, FieldKind>, selection?: Record<string, PgColumn | SQL>
): FieldLister<Row> {
  const name = getTableName(table)
  const columns = getTableColumns(table) as Record<string, PgColumn>
  const kinds: Record<string, FieldKind> = { id: 'integer', ...columnKinds }

  function columnOf (key: string): { column: PgColumn, kind: FieldKind } {
    if (!Object.hasOwn(kinds, key) || !Object.hasOwn(columns, key)) throw new Error(`${name} has no column ${key}`)
    return { column: columns[key]!, kind: kinds[key]! }
  }

  function filterOf (filter: Filter): SQL {
    const { column, kind } = columnOf(filter.column)
    if (!OPERATORS[kind].includes(filter.op)) throw new Error(`${filter.column} (${kind}) has no ${filter.op} filter`)
    return condition(column, kind, filter)
  }

  function keyOf (key: string, descending: boolean): Key {
    const { column, kind } = columnOf(key)
    if (UNSORTABLE.includes(kind)) throw new Error(`${key} (${kind}) cannot be sorted`)
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

  const ownedBy = (owner: number | Placeholder) => eq(columnOf('owner_id').column, owner)

  const selectPage = (exec: Database, where: SQL | undefined, keys: Key[], limit: number | Placeholder, offset: number | Placeholder) =>
    (selection ? exec.select({ ...Object.fromEntries(keys.map((key) => [key.name, key.column])), ...selection }) : exec.select()).from(table as PgTable).where(where)
      .orderBy(...keys.map((key) => key.descending ? desc(key.column) : asc(key.column)))
      .limit(limit).offset(offset)

  // The common case, unfiltered and by id, is built once per shape: the query builder costs more than the query.
  const byId = [keyOf('id', false)]
  const idPage = (exec: Database, shape: { after: boolean, owned: boolean }) => selectPage(exec,
    and(shape.owned ? ownedBy(sql.placeholder('owner')) : undefined, shape.after ? after(byId, [sql.placeholder('after')]) : undefined),
    byId, sql.placeholder('limit'), sql.placeholder('offset'))
  const idPages = new Map<string, Runnable>()

  function idStatement (shape: { after: boolean, owned: boolean }, tx?: Database): Runnable {
    if (tx) return idPage(tx, shape)
    const id = `${shape.after ? 'after' : 'first'}${shape.owned ? '_owned' : ''}`
    let statement = idPages.get(id)
    if (!statement) idPages.set(id, statement = idPage(db, shape).prepare(`${name}_rows_${id}`))
    return statement
  }

  async function rowsOf (request: ListRequest, keys: Key[], matching: SQL | undefined, position: unknown[] | undefined, tx?: Database) {
    const { limit, offset, ownerId } = request
    if (request.filters.length === 0 && keys.length === 1 && !keys[0]!.descending) {
      const statement = idStatement({ after: position !== undefined, owned: ownerId !== undefined }, tx)
      return await statement.execute({ after: position?.[0], owner: ownerId, limit: limit + 1, offset }) as Row[]
    }
    const where = and(matching, position && after(keys, position))
    return await selectPage(tx ?? db, where, keys, limit + 1, offset) as Row[]
  }

  async function countOf (matching: SQL | undefined, tx?: Database): Promise<number> {
    const [row] = await (tx ?? db).select({ total: count() }).from(table as PgTable).where(matching)
    return row!.total
  }

  return async function list (request, tx) {
    const keys = keysOf(request.sort)
    const fingerprint = fingerprintOf(keys)
    const position = request.cursor === undefined ? undefined : decode(request.cursor, keys, fingerprint)
    const matching = and(...request.filters.map(filterOf), request.ownerId === undefined ? undefined : ownedBy(request.ownerId))
    const [found, total] = await Promise.all([
      rowsOf(request, keys, matching, position, tx),
      request.count ? countOf(matching, tx) : undefined
    ])
    const result: ListResult<Row> = { rows: found.slice(0, request.limit) }
    if (found.length > request.limit) result.next = encode(keys, fingerprint, result.rows.at(-1) as Record<string, unknown>)
    if (total !== undefined) result.total = total
    return result
  }
}
