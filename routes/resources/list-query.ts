import type { FastifyRequest } from 'fastify'
import { OPERATORS, type Filter, type FilterOp, type SortKey } from '../../db/field-lists.js'
import { LIST_PARAMETERS } from '../../schemas/fields.js'
import { invalidInput } from './errors.js'
import { filterParameter, sortable, type Column } from './row-schemas.js'

const PARAMETER = /^([a-z][a-z0-9_]*)(?:\[([a-z_]+)\])?$/

/** Every filter a list query may carry, by its parameter name. */
export function filterParameters (columns: Column[]): Map<string, { column: string, op: FilterOp }> {
  const parameters = new Map<string, { column: string, op: FilterOp }>()
  for (const column of columns) {
    for (const op of OPERATORS[column.kind]) parameters.set(filterParameter(column.name, op), { column: column.name, op })
  }
  return parameters
}

/**
 * A preValidation hook: a parameter that is neither a list parameter nor a filter is a 422 naming
 * it (the schema would drop it silently), and `in` lists are split at commas for their schema.
 */
export function checkListQuery (columns: Column[]) {
  const filters = filterParameters(columns)
  const byName = new Map(columns.map((column) => [column.name, column]))
  return async function checkQuery (request: FastifyRequest) {
    const query = request.query as Record<string, unknown>
    for (const [key, value] of Object.entries(query)) {
      if (LIST_PARAMETERS.includes(key)) continue
      const filter = filters.get(key)
      if (filter === undefined) throw invalidInput('querystring', `/${key}`, unknownFilter(key, byName))
      if (filter.op === 'in' && typeof value === 'string') query[key] = value.split(',')
    }
  }
}

function unknownFilter (key: string, columns: Map<string, Column>): string {
  const [, name = '', op] = PARAMETER.exec(key) ?? []
  const column = columns.get(name)
  if (column === undefined) return `is not a filter: the fields are ${[...columns.keys()].join(', ')}`
  return `is not a filter: ${name} (${column.kind}) takes ${OPERATORS[column.kind].map((each) => each === 'eq' ? name : `${name}[${each}]`).join(', ')}` +
    (op === undefined ? '' : `, not ${op}`)
}

/** The filters of a validated query: every parameter that names a filter. */
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
    if (column === undefined || !sortable(column)) {
      const names = columns.filter(sortable).map((each) => each.name).join(', ')
      throw invalidInput('querystring', '/sort', `cannot sort by "${name}": sortable fields are ${names}`)
    }
    return { column: name, descending }
  })
}
