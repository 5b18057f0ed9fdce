import { Type, type TSchema } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { OPERATORS, sortable, type Filter, type FilterOp, type SortKey } from '../../db/resource-lists.js'
import { MAX_SEARCH_LENGTH, MAX_SEARCH_WORDS, MIN_PREFIX_LENGTH, searchTextRefusal } from '../../db/resource-search.js'
import { PG_INT_MAX, PG_INT_MIN, TEXT_PATTERN } from '../../schemas/common.js'
import { LIST_PARAMETERS, type Field, type FieldKind } from '../../schemas/fields.js'
import { pageQuery } from '../../schemas/page.js'
import { invalidInput } from './errors.js'
import type { ResourcePreset } from './presets.js'

/** A column a list can filter and sort on: a field, or one of the server's own columns. */
export interface Column {
  name: string
  kind: FieldKind
}

export const serverColumns = ({ owner, timestamps }: { owner: boolean, timestamps: boolean }): Column[] => [
  { name: 'id', kind: 'integer' },
  ...(timestamps ? [{ name: 'created_at', kind: 'timestamp' as const }, { name: 'updated_at', kind: 'timestamp' as const }] : []),
  ...(owner ? [{ name: 'owner_id', kind: 'integer' as const }] : [])
]

interface PageLimits { defaultLimit: number, maxLimit: number }

/** What a filtered list offers beyond filters and sorts: the fields `?q=` searches. */
export interface ListOptions { search?: readonly string[] }

/** `?q=`, on a resource with search fields. */
const searchParameter = (search: readonly string[]) => Type.String({
  minLength: 1,
  maxLength: MAX_SEARCH_LENGTH,
  pattern: TEXT_PATTERN,
  description: `Only rows whose ${search.join(', ')} match these words, best matches first unless sort says otherwise: ` +
    `the earliest field holding a word first (${search[0]} weighs most), then the most occurrences, then the oldest. ` +
    'Every word must match; "a phrase" matches its words in order, -word excludes, or gives alternatives: a b or c is (a and b) or c. ' +
    `The last word also matches as a prefix when it has ${MIN_PREFIX_LENGTH} letters or more, no space follows it and there is no or. ` +
    `At most ${MAX_SEARCH_WORDS} words; a search of excluded words alone is refused.`
})

/** The most values one `in` filter takes, on the list and on the event stream, which checks each against every event. */
export const MAX_IN_VALUES = 100

/** The query parameter of a filter: `price` for equality, `price[gte]` for the others. */
export const filterParameter = (column: string, op: FilterOp) => op === 'eq' ? column : `${column}[${op}]`

/** One value of a filter: the field's type without its bounds, so `price[lt]=1000` is fine even if price is at most 500. */
function filterValue (kind: FieldKind, field?: Field): TSchema {
  switch (kind) {
    case 'integer': return Type.Integer({ minimum: PG_INT_MIN, maximum: PG_INT_MAX })
    case 'number': return Type.Number()
    case 'boolean': return Type.Boolean()
    case 'date': return Type.String({ format: 'date' })
    case 'timestamp': return Type.String({ format: 'date-time' })
    default: return field?.enum ? Type.Unsafe({ type: 'string', enum: field.enum }) : Type.String({ pattern: TEXT_PATTERN })
  }
}

const OP_WORDS: Record<FilterOp, string> = {
  eq: 'equal to',
  ne: 'not equal to (rows without a value included)',
  lt: 'less than',
  lte: 'at most',
  gt: 'greater than',
  gte: 'at least',
  in: 'one of these comma-separated values',
  contains: 'containing this text, case-insensitive',
  is: '`null` or `not_null`'
}

function filterSchema (column: Column, op: FilterOp, field?: Field): TSchema {
  const description = `Only rows whose ${column.name} is ${OP_WORDS[op]}`
  if (op === 'is') return Type.Unsafe({ type: 'string', enum: ['null', 'not_null'], description: `Only rows whose ${column.name} is null or not` })
  if (op === 'in') return Type.Array(filterValue(column.kind, field), { minItems: 1, maxItems: MAX_IN_VALUES, description: `${description}, at most ${MAX_IN_VALUES}` })
  if (op === 'contains' && column.kind === 'text[]') return Type.String({ pattern: TEXT_PATTERN, description: `Only rows whose ${column.name} has this element` })
  if (op === 'contains') return Type.String({ pattern: TEXT_PATTERN, description })
  return Type.Unsafe({ ...filterValue(column.kind, field), description })
}

/** The filtered list's query: paging, sort, cursor, count, and a parameter for each filter each column supports. */
export function filteredQuery ({ defaultLimit, maxLimit }: PageLimits, columns: Column[], fields: Field[], { search = [] }: ListOptions = {}) {
  const sorts = columns.filter((column) => sortable(column.kind)).map((column) => column.name)
  const filters: Record<string, TSchema> = {}
  for (const column of columns) {
    const field = fields.find((candidate) => candidate.name === column.name)
    for (const op of OPERATORS[column.kind]) filters[filterParameter(column.name, op)] = Type.Optional(filterSchema(column, op, field))
  }
  return Type.Object({
    ...pageQuery({ defaultLimit, maxLimit, offset: 'Rows to skip, in sort order' }),
    sort: Type.Optional(Type.String({
      description: `Comma-separated fields, each ascending or with a leading - descending, e.g. -${sorts.at(-1) ?? 'id'},id; ` +
        `ties end in id. Sortable: ${sorts.join(', ')}`
    })),
    cursor: Type.Optional(Type.String({ description: 'The position after the last row of a page, from its Link: rel="next" header' })),
    count: Type.Optional(Type.Unsafe<'exact'>({ type: 'string', enum: ['exact'], description: 'exact: the number of matching rows in X-Total-Count' })),
    ...(search.length > 0 ? { q: Type.Optional(searchParameter(search)) } : {}),
    ...filters
  }, { additionalProperties: false })
}

const plural = (noun: string) => `${noun[0]!.toUpperCase()}${noun.slice(1)}s`

export function listOperation (name: string, preset: ResourcePreset, limits: PageLimits, columns: Column[], fields: Field[], options: ListOptions = {}) {
  const { defaultLimit, maxLimit } = limits
  if (preset.list === 'pages') {
    return {
      summary: `List ${name} by id: ${defaultLimit} per page unless limit says otherwise, at most ${maxLimit}`,
      description: `A bare JSON array. When more ${preset.noun}s follow, a \`Link: <...>; rel="next"\` header points at the next page.`,
      querystring: Type.Object(pageQuery({ defaultLimit, maxLimit, offset: `${plural(preset.noun)} to skip, by id order` }), { additionalProperties: false })
    }
  }
  return {
    summary: `List ${name}, filtered and sorted`,
    description: 'A bare JSON array. Filters: `?field=value`, or `?field[op]=value` with op one of ' +
      'ne, lt, lte, gt, gte, in, contains, is, as each field allows. A `Link: <...>; rel="next"` header points at the next page ' +
      'while rows remain; `count=exact` adds the number of matching rows in `X-Total-Count`.',
    querystring: filteredQuery(limits, columns, fields, options)
  }
}

const PARAMETER = /^([a-z][a-z0-9_]*)(?:\[([a-z_]+)\])?$/

export function filterParameters (columns: Column[]): Map<string, { column: string, op: FilterOp }> {
  const parameters = new Map<string, { column: string, op: FilterOp }>()
  for (const column of columns) {
    for (const op of OPERATORS[column.kind]) parameters.set(filterParameter(column.name, op), { column: column.name, op })
  }
  return parameters
}

/** preValidation: an unknown parameter is a 422 naming it (the schema would drop it silently); `in` lists are split at commas and bounded. */
export function checkListQuery (columns: Column[], { search = [] }: ListOptions = {}) {
  const filters = filterParameters(columns)
  const byName = new Map(columns.map((column) => [column.name, column]))
  return async function checkQuery (request: FastifyRequest) {
    const query = request.query as Record<string, unknown>
    for (const [key, value] of Object.entries(query)) {
      if (LIST_PARAMETERS.includes(key)) continue
      if (key === 'q' && search.length > 0) {
        // Said here in words: the schema's own messages would not tell a blank search from a long one.
        const refused = typeof value === 'string' ? searchTextRefusal(value) : undefined
        if (refused !== undefined) throw invalidInput('querystring', '/q', refused)
        continue
      }
      const filter = filters.get(key)
      if (filter === undefined) throw invalidInput('querystring', `/${key}`, unknownFilter(key, byName))
      if (filter.op !== 'in') continue
      const values = typeof value === 'string' ? value.split(',') : [value].flat()
      if (values.length > MAX_IN_VALUES) throw invalidInput('querystring', `/${key}`, `has ${values.length} values: an in filter takes at most ${MAX_IN_VALUES}`)
      if (typeof value === 'string') query[key] = values
    }
  }
}

export function unknownFilter (key: string, columns: Map<string, Column>): string {
  const [, name = '', op] = PARAMETER.exec(key) ?? []
  const column = columns.get(name)
  if (column === undefined) return `is not a filter: the fields are ${[...columns.keys()].join(', ')}`
  return `is not a filter: ${name} (${column.kind}) takes ${OPERATORS[column.kind].map((each) => each === 'eq' ? name : `${name}[${each}]`).join(', ')}` +
    (op === undefined ? '' : `, not ${op}`)
}

export function filtersOf (query: Record<string, unknown>, parameters: Map<string, { column: string, op: FilterOp }>): Filter[] {
  const filters: Filter[] = []
  for (const [key, value] of Object.entries(query)) {
    const filter = parameters.get(key)
    if (filter !== undefined && value !== undefined) filters.push({ ...filter, value })
  }
  return filters
}

/** `-price,name` as sort keys; an unknown or unsortable field is a 422 naming it. */
export function sortOf (text: string | undefined, columns: Column[]): SortKey[] {
  if (text === undefined || text === '') return []
  return text.split(',').map((part) => {
    const descending = part.startsWith('-')
    const name = descending ? part.slice(1) : part
    const column = columns.find((candidate) => candidate.name === name)
    if (column === undefined || !sortable(column.kind)) {
      const names = columns.filter((each) => sortable(each.kind)).map((each) => each.name).join(', ')
      throw invalidInput('querystring', '/sort', `cannot sort by "${name}": sortable fields are ${names}`)
    }
    return { column: name, descending }
  })
}

/** The query parameter that names the embeds; `<embed>.<param>` parameters shape an embedded list. */
export const EMBED_PARAMETER = 'embed'

/** The embeds a query asks for (`embed=project,tasks`, repeats once) and its `<embed>.<param>` parameters by embed, both taken out of it. */
export function takeEmbedParameters (query: Record<string, unknown>): { names: string[], prefixed: Map<string, Record<string, unknown>> } {
  const given = query[EMBED_PARAMETER]
  delete query[EMBED_PARAMETER]
  const names = [...new Set([given ?? []].flat().flatMap((value) => String(value).split(',')).filter((name) => name !== ''))]
  const prefixed = new Map<string, Record<string, unknown>>()
  for (const [key, value] of Object.entries(query)) {
    const dot = key.indexOf('.')
    if (dot < 0) continue
    delete query[key]
    const embed = key.slice(0, dot)
    // Without a prototype: a parameter named tasks.__proto__ is one more unknown parameter, nothing else.
    if (!prefixed.has(embed)) prefixed.set(embed, Object.create(null) as Record<string, unknown>)
    prefixed.get(embed)![key.slice(dot + 1)] = value
  }
  return { names, prefixed }
}
