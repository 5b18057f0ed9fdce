import type { Filter } from '../../db/resource-lists.js'

/** Tasks where the list's SQL and JavaScript could differ: case, code points past the BMP, NULLs, NaN-free extremes, instants. */
export const FILTER_ROWS = [
  { title: 'apple', priority: 1, estimate: 0, due: '2026-01-01', remind_at: '2026-01-01T10:00:00.000Z', tags: ['x'] },
  { title: 'Apple', priority: 2, estimate: 2.5, due: '2026-12-31', remind_at: '2026-01-01T10:00:00.001Z', done: true },
  { title: 'Zebra', priority: 3, estimate: null, tags: ['x', 'y'] },
  { title: '\u{1D49C}stral', priority: 4, estimate: 1e300, due: '0001-01-01', remind_at: '0001-01-01T00:00:00.000Z' },
  { title: '\uE000private', priority: 5, estimate: 10, due: '9999-12-31', remind_at: '9999-12-31T23:59:59.999Z', done: true },
  { title: 'a', priority: 3 }
]

/** The kind of each column of the tests' tasks. */
export const TASK_KINDS = { id: 'integer', created_at: 'timestamp', updated_at: 'timestamp', title: 'text', status: 'text', priority: 'integer', estimate: 'number', due: 'date', remind_at: 'timestamp', done: 'boolean', tags: 'text[]', meta: 'jsonb' } as const

/** Filters, each list of them one request, over FILTER_ROWS. */
export const FILTER_CASES: Filter[][] = [
  [{ column: 'title', op: 'lt', value: 'a' }],
  [{ column: 'title', op: 'gte', value: 'Z' }],
  [{ column: 'title', op: 'gt', value: '\uE001' }],
  [{ column: 'title', op: 'lte', value: 'apple' }],
  [{ column: 'title', op: 'in', value: ['a', 'Zebra', 'zebra'] }],
  [{ column: 'title', op: 'contains', value: 'PPL' }],
  [{ column: 'title', op: 'ne', value: 'apple' }],
  [{ column: 'estimate', op: 'ne', value: 2.5 }],
  [{ column: 'estimate', op: 'lt', value: 5 }],
  [{ column: 'estimate', op: 'gte', value: 0 }],
  [{ column: 'estimate', op: 'is', value: 'null' }],
  [{ column: 'priority', op: 'in', value: [1, 3] }, { column: 'done', op: 'ne', value: true }],
  [{ column: 'due', op: 'lte', value: '2026-06-01' }],
  [{ column: 'due', op: 'is', value: 'not_null' }],
  [{ column: 'remind_at', op: 'gt', value: '2026-01-01T10:00:00.000Z' }],
  [{ column: 'remind_at', op: 'lt', value: '2026-01-01T10:00:00.0005Z' }],
  [{ column: 'remind_at', op: 'eq', value: '2026-01-01T12:00:00.001+02:00' }],
  [{ column: 'remind_at', op: 'gte', value: '0001-01-01T00:00:00Z' }],
  [{ column: 'done', op: 'eq', value: false }],
  [{ column: 'tags', op: 'contains', value: 'y' }],
  [{ column: 'meta', op: 'is', value: 'null' }]
]

/** The filters as the list's query string takes them. */
export const filterQuery = (filters: Filter[]) =>
  new URLSearchParams(filters.map(({ column, op, value }): [string, string] => [op === 'eq' ? column : `${column}[${op}]`, String(value)]))
