import { sql } from 'drizzle-orm'
import { drizzle as onPglite } from 'drizzle-orm/pglite'
import { drizzle as onPostgres } from 'drizzle-orm/postgres-js'
import { boolean, date, doublePrecision, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import t from 'tap'
import type { Database } from '../../db/client.js'
import { InvalidCursorError, OPERATORS, createResourceLister, type Filter, type FilterOp, type ListRequest, type SortKey } from '../../db/resource-lists.js'
import type { FieldKind } from '../../schemas/fields.js'
import { freshDatabase } from '../support/database.js'

const client = await freshDatabase(t)
const { db } = client

const stamp = (name: string) => timestamp(name, { precision: 3, withTimezone: true, mode: 'date' })
const thingsTable = (name: string) => pgTable(name, {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  created_at: stamp('created_at').notNull().defaultNow(),
  updated_at: stamp('updated_at').notNull().defaultNow(),
  owner_id: integer('owner_id').notNull(),
  name: text('name').notNull(),
  note: text('note'),
  size: integer('size'),
  weight: doublePrecision('weight'),
  active: boolean('active'),
  seen_at: stamp('seen_at'),
  born_on: date('born_on', { mode: 'string' }),
  tags: text('tags').array(),
  data: jsonb('data')
})
type Things = ReturnType<typeof thingsTable>
type Thing = Things['$inferSelect']
type NewThing = Things['$inferInsert']

const KINDS: Record<string, FieldKind> = {
  id: 'integer',
  created_at: 'timestamp',
  updated_at: 'timestamp',
  owner_id: 'integer',
  name: 'text',
  note: 'text',
  size: 'integer',
  weight: 'number',
  active: 'boolean',
  seen_at: 'timestamp',
  born_on: 'date',
  tags: 'text[]',
  data: 'jsonb'
}

async function createThings (name: string, rows: NewThing[]) {
  await db.execute(sql.raw(`create table ${name} (
    id integer generated always as identity primary key,
    created_at timestamp(3) with time zone not null default now(), updated_at timestamp(3) with time zone not null default now(),
    owner_id integer not null, name text not null, note text, size integer, weight double precision, active boolean,
    seen_at timestamp(3) with time zone, born_on date, tags text[], data jsonb)`))
  const table = thingsTable(name)
  if (rows.length > 0) await db.insert(table).values(rows)
  return { table, list: createResourceLister(db, table, KINDS) }
}

const at = (iso: string) => new Date(iso)
const OPS_ROWS: NewThing[] = [
  { owner_id: 1, name: 'alpha', note: 'Hello World', size: 1, weight: 1.5, active: true, seen_at: at('2024-01-01T00:00:00Z'), born_on: '2024-01-01', tags: ['a', 'b'], data: { x: 1 } },
  { owner_id: 1, name: 'beta', note: '100% sure', size: 2, weight: 2.5, active: false, seen_at: at('2024-01-02T12:00:00Z'), born_on: '2024-01-02', tags: ['b'], data: null },
  { owner_id: 2, name: 'gamma', note: 'a_b', size: 3, weight: null, active: null, seen_at: null, born_on: null, tags: null, data: {} },
  { owner_id: 2, name: 'delta', note: 'back\\slash', size: null, weight: -1, active: true, seen_at: at('2023-12-31T23:59:59.999Z'), born_on: '2023-12-31', tags: [], data: { y: [1] } },
  { owner_id: 1, name: 'epsilon', note: null, size: 2, weight: 2.5, active: false, seen_at: at('2024-01-02T12:00:00Z'), born_on: '2024-01-02', tags: ['A'], data: null },
  { owner_id: 2, name: 'zeta', note: '100 percent', size: 5, weight: 0, active: true, seen_at: at('2024-03-01T08:30:00Z'), born_on: '2024-02-29', tags: ['c'], data: [1, 2] },
  { owner_id: 1, name: 'eta', note: 'axb', size: 4, weight: 10, active: null, seen_at: at('2025-06-01T00:00:00Z'), born_on: '2025-06-01', tags: ['a'], data: 'text' },
  { owner_id: 2, name: 'theta', note: 'HELLO there', size: null, weight: null, active: false, seen_at: null, born_on: null, tags: ['b', 'c'], data: null }
]
const ALL = [1, 2, 3, 4, 5, 6, 7, 8]
const except = (...ids: number[]) => ALL.filter((id) => !ids.includes(id))

const things = await createThings('things', OPS_ROWS)
const request = (overrides: Partial<ListRequest> = {}): ListRequest => ({ filters: [], sort: [], limit: 100, offset: 0, ...overrides })
const idsOf = (rows: Array<{ id: number }>) => rows.map((row) => row.id)
const listIds = async (overrides: Partial<ListRequest>, list = things.list) => idsOf((await list(request(overrides))).rows)

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const unpack = (cursor: string) => JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[]

/** Every page of the list, by cursor, as one array. */
async function walk<Row> (list: (request: ListRequest) => Promise<{ rows: Row[], next?: string }>, overrides: Partial<ListRequest>) {
  const rows: Row[] = []
  let cursor: string | undefined
  for (let pages = 0; pages < 1000; pages++) {
    const page = await list(request({ ...overrides, cursor }))
    rows.push(...page.rows)
    if (page.next === undefined) return rows
    cursor = page.next
  }
  throw new Error('the walk does not end')
}

type Case = [column: string, op: FilterOp, value: unknown, ids: number[]]
const CASES: Case[] = [
  ['size', 'eq', 2, [2, 5]],
  ['size', 'ne', 2, [1, 3, 4, 6, 7, 8]],
  ['size', 'lt', 3, [1, 2, 5]],
  ['size', 'lte', 3, [1, 2, 3, 5]],
  ['size', 'gt', 3, [6, 7]],
  ['size', 'gte', 3, [3, 6, 7]],
  ['size', 'in', [1, 5, 99], [1, 6]],
  ['size', 'is', 'null', [4, 8]],
  ['size', 'is', 'not_null', [1, 2, 3, 5, 6, 7]],
  ['weight', 'eq', 2.5, [2, 5]],
  ['weight', 'ne', 2.5, [1, 3, 4, 6, 7, 8]],
  ['weight', 'lt', 1.5, [4, 6]],
  ['weight', 'lte', 1.5, [1, 4, 6]],
  ['weight', 'gt', 2.5, [7]],
  ['weight', 'gte', 2.5, [2, 5, 7]],
  ['weight', 'in', [-1, 10, 0.25], [4, 7]],
  ['weight', 'is', 'null', [3, 8]],
  ['name', 'eq', 'beta', [2]],
  ['name', 'ne', 'beta', except(2)],
  ['name', 'lt', 'c', [1, 2]],
  ['name', 'lte', 'delta', [1, 2, 4]],
  ['name', 'gt', 'mu', [6, 8]],
  ['name', 'gte', 'theta', [6, 8]],
  ['name', 'in', ['alpha', 'zeta', 'nope'], [1, 6]],
  ['name', 'contains', 'ET', [2, 6, 7, 8]],
  ['note', 'ne', 'a_b', except(3)],
  ['note', 'is', 'null', [5]],
  ['note', 'is', 'not_null', except(5)],
  ['note', 'contains', 'hello', [1, 8]],
  ['note', 'contains', '100%', [2]],
  ['note', 'contains', '%', [2]],
  ['note', 'contains', 'a_b', [3]],
  ['note', 'contains', '_', [3]],
  ['note', 'contains', '\\', [4]],
  ['note', 'contains', 'K\\S', [4]],
  ['note', 'contains', '', except(5)],
  ['active', 'eq', true, [1, 4, 6]],
  ['active', 'eq', false, [2, 5, 8]],
  ['active', 'ne', true, [2, 3, 5, 7, 8]],
  ['active', 'ne', false, [1, 3, 4, 6, 7]],
  ['active', 'is', 'null', [3, 7]],
  ['seen_at', 'eq', '2024-01-02T13:00:00+01:00', [2, 5]],
  ['seen_at', 'ne', '2024-01-02T12:00:00Z', [1, 3, 4, 6, 7, 8]],
  ['seen_at', 'lt', '2024-01-01T00:00:00.000Z', [4]],
  ['seen_at', 'lt', '2024-01-01T00:00:00.0005Z', [1, 4]],
  ['seen_at', 'lte', '2024-01-01T00:00:00Z', [1, 4]],
  ['seen_at', 'gt', '2024-01-02T12:00:00.000Z', [6, 7]],
  ['seen_at', 'gte', '2024-01-02T12:00:00.000Z', [2, 5, 6, 7]],
  ['seen_at', 'in', ['2024-01-01T01:00:00+01:00', '2025-06-01T00:00:00Z'], [1, 7]],
  ['seen_at', 'is', 'null', [3, 8]],
  ['born_on', 'eq', '2024-01-02', [2, 5]],
  ['born_on', 'ne', '2024-01-02', [1, 3, 4, 6, 7, 8]],
  ['born_on', 'lt', '2024-01-01', [4]],
  ['born_on', 'lte', '2024-01-01', [1, 4]],
  ['born_on', 'gt', '2024-01-02', [6, 7]],
  ['born_on', 'gte', '2024-02-29', [6, 7]],
  ['born_on', 'in', ['2023-12-31', '2024-02-29'], [4, 6]],
  ['born_on', 'is', 'not_null', [1, 2, 4, 5, 6, 7]],
  ['tags', 'contains', 'b', [1, 2, 8]],
  ['tags', 'contains', 'a', [1, 7]],
  ['tags', 'contains', 'A', [5]],
  ['tags', 'contains', 'a%', []],
  ['tags', 'is', 'null', [3]],
  ['tags', 'is', 'not_null', except(3)],
  ['data', 'is', 'null', [2, 5, 8]],
  ['data', 'is', 'not_null', [1, 3, 4, 6, 7]],
  ['id', 'in', [2, 4], [2, 4]],
  ['id', 'gt', 6, [7, 8]],
  ['owner_id', 'eq', 2, [3, 4, 6, 8]],
  ['created_at', 'is', 'not_null', ALL]
]

t.test('every operator on every kind it supports', async (t) => {
  for (const [column, op, value, ids] of CASES) {
    t.ok(OPERATORS[KINDS[column]!].includes(op), `${column} (${KINDS[column]}) supports ${op}`)
    t.same(await listIds({ filters: [{ column, op, value }] }), ids, `${column}[${op}]=${JSON.stringify(value)}`)
  }
  const covered = new Set(CASES.map(([column, op]) => `${KINDS[column]} ${op}`))
  for (const [kind, ops] of Object.entries(OPERATORS)) {
    for (const op of ops) t.ok(covered.has(`${kind} ${op}`), `${kind} ${op} is tested`)
  }
})

t.test('the operators of each kind', async (t) => {
  t.same(OPERATORS, {
    text: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'contains', 'is'],
    integer: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'is'],
    number: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'is'],
    date: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'is'],
    timestamp: ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'in', 'is'],
    boolean: ['eq', 'ne', 'is'],
    'text[]': ['contains', 'is'],
    jsonb: ['is']
  })
})

t.test('filters combine with and, and with ownerId', async (t) => {
  const filters: Filter[] = [{ column: 'size', op: 'gte', value: 2 }, { column: 'active', op: 'eq', value: false }]
  t.same(await listIds({ filters }), [2, 5])
  t.same(await listIds({ filters: [{ column: 'name', op: 'contains', value: 'e' }], ownerId: 2 }), [4, 6, 8])
  t.same(await listIds({ ownerId: 1 }), [1, 2, 5, 7])
  t.same(await listIds({ ownerId: 3 }), [])
  t.same(await listIds({ filters: [{ column: 'size', op: 'in', value: [] }] }), [], 'an empty in matches nothing')
})

t.test('what the route refuses first is a programming error here, not SQL', async (t) => {
  const refused: Array<[Partial<ListRequest>, RegExp]> = [
    [{ filters: [{ column: 'data', op: 'eq', value: 1 }] }, /data \(jsonb\) has no eq filter/],
    [{ filters: [{ column: 'active', op: 'lt', value: true }] }, /active \(boolean\) has no lt filter/],
    [{ filters: [{ column: 'nope', op: 'eq', value: 1 }] }, /things has no column nope/],
    [{ filters: [{ column: 'constructor', op: 'eq', value: 1 }] }, /things has no column constructor/],
    [{ filters: [{ column: 'size', op: 'is', value: 'maybe' }] }, /takes 'null' or 'not_null'/],
    [{ sort: [{ column: 'tags', descending: false }] }, /tags \(text\[\]\) cannot be sorted/],
    [{ sort: [{ column: 'data', descending: true }] }, /data \(jsonb\) cannot be sorted/]
  ]
  for (const [overrides, message] of refused) await t.rejects(things.list(request(overrides)), message)
  const unowned = pgTable('things', { id: integer('id').primaryKey(), name: text('name') })
  await t.rejects(createResourceLister(db, unowned, { name: 'text' })(request({ ownerId: 1 })), /things has no column owner_id/)
})

const asc = (column: string): SortKey => ({ column, descending: false })
const desc = (column: string): SortKey => ({ column, descending: true })

t.test('sorts: NULLS LAST ascending, NULLS FIRST descending, ties broken by id in the last key\'s direction', async (t) => {
  t.same(await listIds({ sort: [asc('size')] }), [1, 2, 5, 3, 7, 6, 4, 8])
  t.same(await listIds({ sort: [desc('size')] }), [8, 4, 6, 7, 3, 5, 2, 1])
  t.same(await listIds({ sort: [desc('size'), desc('id')] }), [8, 4, 6, 7, 3, 5, 2, 1])
  t.same(await listIds({ sort: [desc('active'), asc('weight')] }), [7, 3, 4, 6, 1, 2, 5, 8])
  t.same(await listIds({ sort: [asc('born_on'), desc('name')] }), [4, 1, 5, 2, 6, 7, 8, 3])
  t.same(await listIds({ sort: [desc('seen_at')] }), [8, 3, 7, 6, 5, 2, 1, 4])
  t.same(await listIds({ sort: [desc('id'), asc('size')] }), [8, 7, 6, 5, 4, 3, 2, 1], 'nothing after id matters')
  t.same(await listIds({ sort: [asc('size'), desc('size')] }), [1, 2, 5, 3, 7, 6, 4, 8], 'a repeated key is ignored')
  t.same(await listIds({ sort: [asc('note')], filters: [{ column: 'note', op: 'contains', value: '100' }] }), [6, 2])
})

t.test('limit and offset; next only when another row follows', async (t) => {
  const first = await things.list(request({ limit: 3 }))
  t.same(idsOf(first.rows), [1, 2, 3])
  t.type(first.next, 'string')
  t.notOk('total' in first, 'no total unless asked')
  t.same(await listIds({ limit: 3, offset: 6 }), [7, 8])
  t.notOk('next' in await things.list(request({ limit: 4, offset: 4 })), 'the last page ends exactly at the limit')
  t.notOk('next' in await things.list(request({ limit: 8 })))
  t.same(await things.list(request({ offset: 8 })), { rows: [] })
  const rows = await things.list(request({ limit: 1, filters: [{ column: 'name', op: 'eq', value: 'zeta' }] }))
  t.same(rows.rows[0], { ...OPS_ROWS[5], id: 6, created_at: rows.rows[0]!.created_at, updated_at: rows.rows[0]!.updated_at })
  t.type(rows.rows[0]!.created_at, Date)
})

t.test('a cursor page starts right after the cursor row; offset then skips rows after it', async (t) => {
  const sort = [asc('size')]
  const first = await things.list(request({ sort, limit: 3 }))
  t.same(idsOf(first.rows), [1, 2, 5])
  const second = await things.list(request({ sort, limit: 3, cursor: first.next }))
  t.same(idsOf(second.rows), [3, 7, 6])
  t.same(await listIds({ sort, limit: 2, offset: 2, cursor: first.next }), [6, 4])
  t.same(await listIds({ sort, offset: 5, cursor: first.next }), [])
  const byId = await things.list(request({ limit: 2, offset: 3 }))
  t.same(await listIds({ sort: [asc('id')], cursor: byId.next }), [6, 7, 8], 'no sort and sort=id are the same sort')
})

t.test('cursor positions on null values', async (t) => {
  const { list } = things
  const position = async (sort: SortKey[], values: unknown[]) => {
    const { next } = await list(request({ sort, limit: 1 }))
    return base64url([unpack(next!)[0], ...values])
  }
  t.same(await listIds({ sort: [asc('size')], cursor: await position([asc('size')], [null, 3]) }), [4, 8])
  t.same(await listIds({ sort: [asc('size')], cursor: await position([asc('size')], [null, 4]) }), [8])
  t.same(await listIds({ sort: [desc('size')], cursor: await position([desc('size')], [null, 4]) }), [6, 7, 3, 5, 2, 1])
  t.same(await listIds({ sort: [desc('size')], cursor: await position([desc('size')], [null, 8]) }), [4, 6, 7, 3, 5, 2, 1])
  t.same(await listIds({ sort: [asc('size')], cursor: await position([asc('size')], [2, 2]) }), [5, 3, 7, 6, 4, 8])
  t.same(await listIds({ sort: [asc('size')], cursor: await position([asc('size')], [2, 9]) }), [3, 7, 6, 4, 8], 'after the last of a tie')
  t.same(await listIds({ sort: [asc('size')], cursor: await position([asc('size')], [null, null]) }), [], 'nothing follows the last possible position')
})

t.test('count: every row the filters and owner match, whatever the page', async (t) => {
  const plain = await things.list(request({ limit: 2 }))
  t.same(await things.list(request({ count: true, limit: 2 })), { ...plain, total: 8 })
  const filters: Filter[] = [{ column: 'weight', op: 'is', value: 'not_null' }]
  t.equal((await things.list(request({ count: true, filters }))).total, 6)
  t.equal((await things.list(request({ count: true, filters, ownerId: 2 }))).total, 2)
  t.equal((await things.list(request({ count: true, ownerId: 1 }))).total, 4)
  t.equal((await things.list(request({ count: true, ownerId: 9 }))).total, 0)
  const first = await things.list(request({ filters, limit: 2, sort: [desc('weight')] }))
  const later = await things.list(request({ filters, limit: 2, offset: 1, sort: [desc('weight')], cursor: first.next, count: true }))
  t.same(idsOf(later.rows), [1, 6])
  t.equal(later.total, 6, 'limit, offset and cursor do not change the total')
  t.equal((await things.list(request({ count: true, filters: [{ column: 'name', op: 'eq', value: 'nobody' }] }))).total, 0)
})

t.test('bad cursors are refused with a 422 InvalidCursorError naming the value, never a database error', async (t) => {
  const cursorOf = async (sort: SortKey[]) => (await things.list(request({ sort, limit: 1 }))).next!
  const genuine = async (sort: SortKey[], values: unknown[]): Promise<[string, SortKey[]]> =>
    [base64url([unpack(await cursorOf(sort))[0], ...values]), sort]
  const garbled: Array<[string, SortKey[]]> = [
    ...['garbage!', '', 'null', base64url({ a: 1 }), base64url([]), base64url([1, 2]), base64url(null), '%%%'].map((cursor): [string, SortKey[]] => [cursor, []]),
    await genuine([], []), await genuine([], [1, 2]), await genuine([], ['1']), await genuine([], [1.5]), await genuine([], [2 ** 31]),
    await genuine([asc('seen_at')], ['2024-02-30T00:00:00.000Z', 1]), await genuine([asc('seen_at')], ['0000-01-01T00:00:00.000Z', 1]),
    await genuine([asc('seen_at')], ['yesterday', 1]), await genuine([asc('seen_at')], [5, 1]), await genuine([asc('seen_at')], ['2024-01-01T00:00:00Z', 1]),
    await genuine([asc('born_on')], ['2024-13-01', 1]), await genuine([asc('born_on')], ['2023-02-29', 1]), await genuine([asc('born_on')], ['2024-1-1', 1]), await genuine([asc('born_on')], [20240101, 1]),
    await genuine([asc('active')], ['true', 1]), await genuine([asc('name')], ['a\u0000b', 1]), await genuine([asc('name')], [3, 1]),
    await genuine([asc('weight')], ['heavy', 1]), await genuine([asc('weight')], [{}, 1])
  ]
  for (const [cursor, sort] of garbled) {
    await t.rejects(things.list(request({ cursor, sort })), { code: 'RESOURCE_INVALID_CURSOR', statusCode: 422, message: 'is not a cursor of this list', cursor }, cursor)
  }
  const valid = await genuine([asc('seen_at'), asc('born_on'), desc('active'), asc('name')], ['2024-01-02T12:00:00.000Z', '2024-01-02', false, 'beta', 2])
  t.same(await listIds({ cursor: valid[0], sort: valid[1] }), [5, 6, 7, 3, 8], 'a cursor of every kind, made by hand, is read')
  const other = await createThings('other_things', OPS_ROWS)
  const foreign: Array<[string, SortKey[]]> = [
    [await cursorOf([asc('size')]), [desc('size')]],
    [await cursorOf([asc('size')]), []],
    [await cursorOf([]), [asc('size')]],
    [await cursorOf([asc('size'), asc('name')]), [asc('size')]],
    [(await other.list(request({ limit: 1 }))).next!, []]
  ]
  for (const [cursor, sort] of foreign) {
    const refused = things.list(request({ cursor, sort }))
    await t.rejects(refused, { code: 'RESOURCE_INVALID_CURSOR', statusCode: 422, message: /another sort/, cursor })
    t.ok(await refused.catch((err: unknown) => err instanceof InvalidCursorError))
  }
  const huge = Buffer.from(`[${JSON.stringify(unpack(await cursorOf([asc('weight')]))[0])},1e400,1]`).toString('base64url')
  t.same(await listIds({ cursor: huge, sort: [asc('weight')] }), [3, 8], 'any JSON number is a number')
})

/** Deterministic pseudo-random values, so a failure replays. */
function random (seed: number) {
  let state = seed
  return <T>(items: readonly T[]): T => {
    state = (state * 1103515245 + 12345) % 2147483648
    return items[state % items.length]!
  }
}

const WORDS = ['ash', 'birch', 'cedar', 'elm', 'fir', 'oak']
function generated (pick: ReturnType<typeof random>, i: number): NewThing {
  const base = Date.UTC(2024, 0, 1)
  return {
    owner_id: pick([1, 2]),
    created_at: new Date(base + (i % 5) * 1000),
    name: pick(WORDS),
    note: pick([null, ...WORDS]),
    size: pick([null, 1, 2, 3]),
    weight: pick([null, -2, 0.5, 1e-9, 3]),
    active: pick([null, true, false]),
    seen_at: pick([null, new Date(base), new Date(base + 1), new Date(base + 86_400_000)]),
    born_on: pick([null, '2024-01-01', '2024-02-29', '1999-12-31']),
    tags: pick([null, ['a']]),
    data: pick([null, { i }])
  }
}

type Scalar = string | number | boolean | Date | null

/** PostgreSQL's order of two values, NULL above every value; words are lower-case ASCII so every collation agrees. */
function compareValues (x: Scalar, y: Scalar): number {
  if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1
  if (x instanceof Date) return x.getTime() - (y as Date).getTime()
  return x < y ? -1 : x > y ? 1 : 0
}

function compareBy (sort: SortKey[]) {
  const keys = sort.some((key) => key.column === 'id') ? sort : [...sort, { column: 'id', descending: sort.at(-1)?.descending ?? false }]
  return (a: Thing, b: Thing) => {
    for (const { column, descending } of keys) {
      const order = compareValues(a[column as keyof Thing] as Scalar, b[column as keyof Thing] as Scalar)
      if (order !== 0) return descending ? -order : order
    }
    return 0
  }
}

const SORTS: SortKey[][] = [
  [],
  [desc('id')],
  [asc('size')],
  [desc('size')],
  [asc('created_at')],
  [desc('created_at')],
  [desc('active'), asc('weight')],
  [asc('born_on'), desc('name')],
  [desc('seen_at'), asc('size'), desc('id')],
  [asc('note'), asc('active'), desc('weight'), asc('born_on')],
  [asc('owner_id'), desc('updated_at'), asc('name')]
]

t.test('walking every page by cursor gives the whole sorted list, each row once, for any sort', async (t) => {
  const pick = random(7)
  const walks = await createThings('walks', Array.from({ length: 60 }, (_, i) => generated(pick, i)))
  const all = await db.select().from(walks.table)
  for (const sort of SORTS) {
    const expected = idsOf([...all].sort(compareBy(sort)))
    const label = sort.map((key) => `${key.descending ? '-' : ''}${key.column}`).join(',') || 'id'
    t.same(await listIds({ sort }, walks.list), expected, `${label}: one page`)
    for (const limit of [1, 4, 7]) t.same(idsOf(await walk(walks.list, { sort, limit })), expected, `${label}: pages of ${limit}`)
    const owned = all.filter((row) => row.owner_id === 2 && row.size !== null).sort(compareBy(sort))
    const filters: Filter[] = [{ column: 'size', op: 'is', value: 'not_null' }]
    t.same(idsOf(await walk(walks.list, { sort, limit: 3, ownerId: 2, filters })), idsOf(owned), `${label}: filtered and owned`)
  }
})

t.test('cursor pages over texts with wildcards and mixed case follow the database collation', async (t) => {
  for (const sort of [[asc('note')], [desc('note'), asc('active')], [asc('seen_at'), desc('note')], [desc('weight')]]) {
    const whole = await listIds({ sort })
    for (const limit of [1, 3]) t.same(idsOf(await walk(things.list, { sort, limit })), whole)
  }
})

t.test('NaN and the infinities survive the cursor', async (t) => {
  const specials = await createThings('specials', [])
  await db.execute(sql`insert into specials (owner_id, name, weight) values
    (1, 'a', 'NaN'), (1, 'b', 'Infinity'), (1, 'c', '-Infinity'), (1, 'd', 1), (1, 'e', null), (1, 'f', 'NaN')`)
  const expected = [3, 4, 2, 1, 6, 5]
  t.same(idsOf(await walk(specials.list, { sort: [asc('weight')], limit: 1 })), expected)
  t.same(idsOf(await walk(specials.list, { sort: [desc('weight')], limit: 2 })), [5, 6, 1, 2, 4, 3])
  t.same(idsOf(await walk(specials.list, { sort: [asc('weight')], limit: 1, filters: [{ column: 'weight', op: 'gt', value: 0 }] })), [4, 2, 1, 6])
})

t.test('a cursor walk while rows are inserted and deleted: none twice, none present throughout skipped, always in order', async (t) => {
  const sorts: SortKey[][] = [[asc('size')], [desc('seen_at'), asc('name')], [], [asc('created_at')], [desc('active'), desc('born_on')]]
  for (const [index, sort] of sorts.entries()) {
    const pick = random(11 + index)
    const churn = await createThings(`churn_${index}`, Array.from({ length: 40 }, (_, i) => generated(pick, i)))
    const original = idsOf(await db.select().from(churn.table))
    const deleted = new Set<number>()
    const seen: Thing[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await churn.list(request({ sort, limit: 4, cursor }))
      seen.push(...page.rows)
      cursor = page.next
      pages++
      await db.insert(churn.table).values([generated(pick, 100 + 2 * pages), generated(pick, 101 + 2 * pages)])
      // Every other page, the cursor's own row goes too; every page, a row not yet listed.
      const unseen = original.filter((id) => !deleted.has(id) && !seen.some((row) => row.id === id))
      const victims = [...(pages % 2 === 0 ? [page.rows.at(-1)!.id] : []), ...(unseen.length > 0 ? [pick(unseen)] : [])]
      for (const id of victims) {
        deleted.add(id)
        await db.delete(churn.table).where(sql`${churn.table.id} = ${id}`)
      }
    } while (cursor !== undefined)
    const ids = idsOf(seen)
    const label = sort.map((key) => `${key.descending ? '-' : ''}${key.column}`).join(',') || 'id'
    t.equal(new Set(ids).size, ids.length, `${label}: no row twice`)
    t.same(original.filter((id) => !deleted.has(id) && !ids.includes(id)), [], `${label}: every row present throughout is listed`)
    const order = compareBy(sort)
    t.ok(seen.every((row, i) => i === 0 || order(seen[i - 1]!, row) < 0), `${label}: in sort order`)
    t.ok(ids.some((id) => !original.includes(id)), `${label}: rows inserted during the walk were listed too`)
    t.ok(deleted.size > 5, `${label}: rows were deleted during the walk`)
  }
})

t.test('inside a transaction, the list and count see its writes', async (t) => {
  await db.transaction(async (tx) => {
    await tx.insert(things.table).values({ owner_id: 3, name: 'uncommitted' })
    const page = await things.list(request({ ownerId: 3, count: true }), tx)
    t.same(page.rows.map((row) => row.name), ['uncommitted'])
    t.equal(page.total, 1)
    t.same((await things.list(request({ filters: [{ column: 'name', op: 'eq', value: 'uncommitted' }] }), tx)).rows.length, 1)
    const first = await things.list(request({ limit: 8 }), tx)
    t.same(idsOf((await things.list(request({ cursor: first.next }), tx)).rows), [9])
    tx.rollback()
  }).catch((err: Error) => { if (err.message !== 'Rollback') throw err })
  t.same(await listIds({ ownerId: 3 }), [])
})

/** `client`'s connection through a Drizzle instance that records the SQL it sends. */
function recordingDatabase () {
  const queries: string[] = []
  const logger = { logQuery: (query: string) => { queries.push(query) } }
  const $client = (db as unknown as { $client: never }).$client
  const recording = client.driver === 'postgres' ? onPostgres({ client: $client, logger }) : onPglite({ client: $client, logger })
  return { db: recording as unknown as Database, queries }
}

t.test('the common case by id is one index range; a mixed sort expands to the or-chain', async (t) => {
  const recorder = recordingDatabase()
  const list = createResourceLister(recorder.db, things.table, KINDS)
  const first = await list(request({ limit: 2, ownerId: 1 }))
  await list(request({ limit: 2, ownerId: 1, cursor: first.next }))
  const byTime = await list(request({ limit: 2, sort: [asc('created_at')] }))
  await list(request({ limit: 2, sort: [asc('created_at')], cursor: byTime.next }))
  const mixed = await list(request({ limit: 2, sort: [desc('size'), asc('id')] }))
  await list(request({ limit: 2, sort: [desc('size'), asc('id')], cursor: mixed.next }))
  const where = (query: string) => query.slice(query.indexOf(' where ') + 1, query.indexOf(' order by '))
  t.notMatch(recorder.queries[0], / where .* or /)
  t.equal(where(recorder.queries[1]!), 'where ("things"."owner_id" = $1 and ("things"."id") > ($2))')
  t.equal(where(recorder.queries[3]!), 'where ("things"."created_at", "things"."id") > ($1, $2)')
  t.equal(where(recorder.queries[5]!), 'where ("things"."size" is not null or ("things"."size" is null and "things"."id" > $1))')
  const page = await list(request({ limit: 3, sort: [desc('size'), asc('id')], cursor: (await list(request({ limit: 3, sort: [desc('size'), asc('id')] }))).next }))
  t.same(idsOf(page.rows), [7, 3, 2])
  t.equal(where(recorder.queries[7]!), 'where ("things"."size" < $1 or ("things"."size" = $2 and "things"."id" > $3))')
})

t.test('one statement per shape, whatever the values; past the kept shapes, lists are still right', async (t) => {
  const recorder = recordingDatabase()
  const list = createResourceLister(recorder.db, things.table, KINDS)
  const named = async (value: string) => idsOf((await list(request({ filters: [{ column: 'name', op: 'eq', value }], count: true }))).rows)
  t.same(await named('beta'), [2])
  t.same(await named('zeta'), [6])
  t.same(await named('nobody'), [])
  const texts = new Set(recorder.queries)
  t.equal(texts.size, 2, 'the rows and the count, each one text with its values as parameters')
  t.ok([...texts].every((text) => !/beta|zeta|nobody/.test(text)), 'no value in the statement')
  // Every length of `in` is a shape of its own: far more than a lister keeps prepared.
  for (let n = 1; n <= 80; n++) {
    const sizes = Array.from({ length: n }, (_, i) => i + 2)
    const page = await list(request({ filters: [{ column: 'size', op: 'in', value: sizes }], sort: [desc('size')], limit: 3, count: true }))
    const matched = OPS_ROWS.map((row, i) => ({ id: i + 1, size: row.size ?? -1 })).filter((row) => sizes.includes(row.size))
    const expected = matched.sort((a, b) => b.size - a.size || b.id - a.id).map((row) => row.id)
    if (!t.same({ ids: idsOf(page.rows), total: page.total }, { ids: expected.slice(0, 3), total: expected.length }, `in with ${n} values`)) break
  }
})

t.test('identical lists asked for at once share one read; others and those in a transaction get their own', async (t) => {
  const recorder = recordingDatabase()
  const list = createResourceLister(recorder.db, things.table, KINDS)
  const open = request({ filters: [{ column: 'active', op: 'eq', value: true }], sort: [desc('size')], count: true })
  const [a, b, other] = await Promise.all([list(open), list({ ...open }), list({ ...open, limit: 1 })])
  t.equal(a, b, 'one answer for both')
  t.same(idsOf(a!.rows), [4, 6, 1], 'NULLS FIRST descending')
  t.same(idsOf(other!.rows), [4])
  t.equal(recorder.queries.length, 4, 'rows and count for each of the two lists')
  await recorder.db.transaction(async (tx) => {
    const [x, y] = await Promise.all([list(open, tx), list(open, tx)])
    t.not(x, y, 'a transaction reads for itself')
    t.same(x, a)
  })
})
