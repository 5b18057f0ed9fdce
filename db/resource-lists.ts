import { createHash } from 'node:crypto'
import { and, asc, count, desc, eq, getTableColumns, getTableName, or, sql, type InferSelectModel, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import { PG_INT_MAX, PG_INT_MIN } from '../schemas/common.js'
import type { FieldKind } from '../schemas/fields.js'
import { coalesced } from '../concurrency/batch.js'
import type { Database, Preparable, Runnable } from './client.js'
import { statementCache } from './driver.js'
import { ident } from './resource-table.js'
import { InvalidCursorError, InvalidSearchError } from './errors.js'
import { containsPattern } from './items.js'
import { COUNTED_WORDS, countedWords, rankedWindow, searchDocument, searchMatch, searchQuery, searchRank, searchShape, searchTerms, withCustomPlans, type SearchTerms } from './resource-search.js'

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
  /** Only rows whose `fields` match the text (`?q=`); without a sort, the best ranked first. */
  search?: { fields: readonly string[], text: string }
  /** Columns read for this request over the lister's own, such as a row's JSON with embedded rows. */
  selection?: RequestSelection
}

/**
 * Columns of one request: `columns` binds exactly `values`, by name (identical requests made at once
 * share one result by their JSON, so `shape` and `values` must say all that the columns read).
 */
export interface RequestSelection {
  /** Same shape, same statement text: the key of its prepared statement. */
  shape: string
  values: Record<string, unknown>
  columns (bind: Bind): Record<string, SQL>
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

export { InvalidCursorError, InvalidSearchError }

/** A cursor that does not decode or was made for another sort: a 422, its `cursor` the value refused. */
const invalidCursor = (cursor: string, message: string) => Object.assign(new InvalidCursorError(message), { cursor })

interface Key {
  name: string
  column: PgColumn | SQL
  /** `rank`: the search's, a real computed per row. */
  kind: FieldKind | 'rank'
  descending: boolean
  notNull: boolean
}

/** The rank's key: a name no field can have, so it never shadows one in the rows read. */
const RANK = '_rank'
// Reals as JSON numbers: what PostgreSQL reads back from the shortest text of a real is that very real.
const REAL_MAX = 3.4028234e38
const REAL_MIN = 1.1754944e-38

const COMPARISONS: Partial<Record<FilterOp, string>> = { eq: '=', ne: 'is distinct from', lt: '<', lte: '<=', gt: '>', gte: '>=' }

/** A value in a statement: its placeholder in one prepared for every request of its shape, or the value itself. */
export type Bind = (name: string, value: unknown) => unknown

/** The SQL of one filter on `column` (or an expression of its type); `name` names its values' placeholders. */
export function condition (column: PgColumn | SQL, kind: FieldKind, { op, value }: Filter, bind: Bind, name: string): SQL {
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
  throw new Error(`filter ${'name' in column ? column.name : name}[is] takes 'null' or 'not_null', not ${String(value)}`)
}

const filterShape = ({ column, op, value }: Filter) => `${column}.${op}${op === 'in' ? (value as unknown[]).length : op === 'is' ? String(value) : ''}`

/** Rows strictly after `value` in the key's order, where NULL sorts above every value (ASC NULLS LAST, DESC NULLS FIRST); undefined when none can be. */
function beyond ({ column, descending, notNull }: Key, value: unknown): SQL | undefined {
  if (value === null) return descending ? sql`${column} is not null` : undefined
  if (descending) return sql`${column} < ${value}`
  return notNull ? sql`${column} > ${value}` : sql`(${column} > ${value} or ${column} is null)`
}

const tie = ({ column }: Key, value: unknown) => value === null ? sql`${column} is null` : sql`${column} = ${value}`

/** The rows after the cursor's: one row comparison when it can (index-friendly), else (a > x) or (a = x and (b > y or ...)). */
function after (keys: Key[], values: unknown[]): SQL {
  const direction = keys[0]!.descending
  if (keys.every((key) => key.notNull && key.descending === direction)) {
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
function fits (kind: FieldKind | 'rank', value: unknown): boolean {
  if (kind === 'rank') return value === 0 || (typeof value === 'number' && Math.abs(value) >= REAL_MIN && Math.abs(value) <= REAL_MAX)
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

interface Parts { matching?: SQL, after?: SQL, limit: number, offset: number, columns?: Record<string, SQL>, window?: SQL }

/** The search of a request, its terms split once: the rank key and the condition are built from it for each binding. */
interface Search { document: string, terms: SearchTerms }

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
    return { name: key, column, kind, descending, notNull: column.notNull }
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

  // A cursor names its search too: the position of a row among one text's matches means nothing for another's.
  const fingerprintOf = (keys: Key[], text?: string) => createHash('sha256')
    .update(`${name}:${keys.map((key) => `${key.descending ? '-' : ''}${key.name}`).join(',')}${text === undefined ? '' : `?q=${text}`}`)
    .digest('base64url').slice(0, 12)

  /** The search's terms, and the document qualified by the table, which leaves the expression the GIN index's for the planner. */
  const searchOf = ({ search }: ListRequest): Search | undefined =>
    search && { document: searchDocument(search.fields, ident(name)), terms: searchTerms(search.text) }

  /** With a search and no sort: best rank first, then oldest first. */
  function orderOf (request: ListRequest, search: Search | undefined): Key[] {
    if (search === undefined || request.sort.length > 0) return keysOf(request.sort)
    // The placeholders are named as every binding names them: a statement prepared with them takes the values at run time.
    const rank = searchRank(search.document, search.terms, (key) => sql.placeholder(key))
    return [{ name: RANK, column: rank, kind: 'rank', descending: true, notNull: true }, keyOf('id', false)]
  }

  function matching ({ filters, ownerId }: ListRequest, bind: Bind, search?: Search): SQL | undefined {
    const conditions = filters.map((filter, i) => {
      const { column, kind } = columnOf(filter.column)
      if (!OPERATORS[kind].includes(filter.op)) throw new Error(`${filter.column} (${kind}) has no ${filter.op} filter`)
      return condition(column, kind, filter, bind, `f${i}`)
    })
    return and(
      ...conditions,
      ownerId === undefined ? undefined : eq(columnOf('owner_id').column, bind('owner', ownerId)),
      search && searchMatch(search.document, searchQuery(search.terms, bind))
    )
  }

  // A rank goes back as the real it was read as, not as a double.
  const positionValue = (key: Key, value: unknown) => key.kind === 'rank' ? sql`${value}::real` : value

  function bound (request: ListRequest, keys: Key[], position: unknown[] | undefined, bind: Bind, search?: Search): Parts {
    const matched = matching(request, bind, search)
    if (keys[0]!.kind === 'rank') bind(COUNTED_WORDS, countedWords(search!.terms))
    return {
      matching: matched,
      window: keys[0]!.kind === 'rank' ? rankedWindow(table, columnOf('id').column, matched!) : undefined,
      after: position && after(keys, position.map((value, i) => value === null ? null : positionValue(keys[i]!, bind(`p${i}`, value)))),
      limit: bind('limit', request.limit + 1) as number,
      offset: bind('offset', request.offset) as number,
      columns: request.selection?.columns(bind)
    }
  }

  function selectPage (exec: Database, keys: Key[], parts: Parts): Preparable<Row[]> {
    const ranked = keys.some((key) => key.kind === 'rank')
    const columnsRead = selection || ranked ? { ...Object.fromEntries(keys.map((key) => [key.name, key.column])), ...(selection ?? columns), ...parts.columns } : undefined
    // A ranked search's window holds the conditions: matching them again would read each row's text twice.
    return (columnsRead ? exec.select(columnsRead) : exec.select()).from(table as PgTable).where(and(parts.window ?? parts.matching, parts.after))
      .orderBy(...keys.map((key) => key.descending ? desc(key.column) : asc(key.column)))
      .limit(parts.limit).offset(parts.offset) as unknown as Preparable<Row[]>
  }

  const selectCount = (exec: Database, parts: Parts) =>
    exec.select({ total: count() }).from(table as PgTable).where(parts.matching) as unknown as Preparable<Array<{ total: number }>>

  const statements = statementCache(name, MAX_SHAPES)
  const prepared = <R>(kind: 'rows' | 'count', shape: string, make: () => Preparable<R>): Runnable<R> | undefined =>
    statements.shaped(kind, shape, (as) => make().prepare(as))

  async function list (request: ListRequest, tx?: Database): Promise<ListResult<Row>> {
    const search = searchOf(request)
    const keys = orderOf(request, search)
    const fingerprint = fingerprintOf(keys, request.search?.text)
    const position = request.cursor === undefined ? undefined : decode(request.cursor, keys, fingerprint)
    const filters = `${request.filters.map(filterShape).join(',')}${request.ownerId === undefined ? '' : ';owned'}${search ? `;${searchShape(search.terms)}` : ''}`
    const rowsShape = `${filters}|${fingerprintOf(keys)}|${position?.map((value) => value === null ? 'n' : 'v').join('') ?? ''}|${request.selection?.shape ?? ''}`
    const placeheld = () => bound(request, keys, position, (key) => sql.placeholder(key), search)
    const rows = tx ? undefined : prepared('rows', rowsShape, () => selectPage(db, keys, placeheld()))
    const counted = !request.count || tx ? undefined : prepared('count', filters, () => selectCount(db, placeheld()))
    // Every value, also for a statement built inline: the rank's placeholders take theirs from here.
    const values: Record<string, unknown> = {}
    bound(request, keys, position, (key, value) => { values[key] = value }, search)
    let inline: Parts | undefined
    const run = <R>(statement: Runnable<R> | undefined, make: (exec: Database, parts: Parts) => Preparable<R>) => {
      if (statement) return statement.execute(values)
      inline ??= bound(request, keys, position, (_key, value) => value, search)
      return make(tx ?? db, inline).execute(values)
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

  // A search's best plan depends on how common its words are: one generic plan for every text would serve some of them badly.
  const read = (request: ListRequest) => request.search
    ? withCustomPlans(db, request.sort.length > 0, searchQuery(searchTerms(request.search.text), (_key, value) => value), (tx) => list(request, tx))
    : list(request)
  // Outside a transaction, the same list asked for by many requests at once is read once.
  const shared = coalesced(read, (request: ListRequest) => JSON.stringify(request))
  return (request, tx) => tx ? list(request, tx) : shared(request)
}
