import { Type } from '@sinclair/typebox'
import type { EmbedMany } from '../../db/resource-embed.js'
import { validatorCompiler } from '../../http/validation.js'
import { isWriteOnly, LIST_PARAMETERS } from '../../schemas/fields.js'
import { invalidInput } from './errors.js'
import { filterParameters, filteredQuery, filtersOf, serverColumns, sortOf, unknownFilter, type Column } from './list-query.js'
import type { RegisteredResource } from './registry.js'

interface PageLimits { defaultLimit: number, maxLimit: number }

/** A reverse embed's parameters: the embedded resource's own list parameters but paging, checked as its list checks them. */
interface ListParameters {
  columns: Column[]
  filters: ReturnType<typeof filterParameters>
  check: ((query: Record<string, unknown>) => boolean) & { errors?: Array<{ instancePath: string }> | null }
}

const parameters = new WeakMap<RegisteredResource, ListParameters>()

function listParameters (target: RegisteredResource, offer: PageLimits): ListParameters {
  let found = parameters.get(target)
  if (found) return found
  const fields = target.fields.filter((field) => !isWriteOnly(field))
  const columns = [...serverColumns(target), ...fields]
  const { offset: _offset, cursor: _cursor, count: _count, ...properties } = filteredQuery(offer, columns, fields, {}).properties
  const check = validatorCompiler({ schema: Type.Object(properties, { additionalProperties: false }), httpPart: 'querystring', method: 'GET', url: '' })
  found = { columns, filters: filterParameters(columns), check: check as ListParameters['check'] }
  parameters.set(target, found)
  return found
}

const EMBEDDED_LIST = ['limit', 'sort']

/** `tasks.priority[gte]=2&tasks.limit=5` as the embedded list's filters, sort and limit; anything else is a 422 naming the parameter. */
export function embeddedList (embed: { name: string, target: RegisteredResource, offer: PageLimits }, query: Record<string, unknown>): Pick<EmbedMany, 'filters' | 'sort' | 'limit'> {
  const { columns, filters, check } = listParameters(embed.target, embed.offer)
  const at = (key: string) => `/${embed.name}.${key}`
  const byName = new Map(columns.map((column) => [column.name, column]))
  for (const [key, value] of Object.entries(query)) {
    if (EMBEDDED_LIST.includes(key)) continue
    if (LIST_PARAMETERS.includes(key)) throw invalidInput('querystring', at(key), `is not a parameter: an embedded list takes ${embed.name}.limit, ${embed.name}.sort and the filters of ${embed.target.name}`)
    const filter = filters.get(key)
    if (filter === undefined) throw invalidInput('querystring', at(key), unknownFilter(key, byName))
    if (filter.op === 'in' && typeof value === 'string') query[key] = value.split(',')
  }
  if (!check(query)) {
    const errors = check.errors ?? []
    const [first] = errors
    throw Object.assign(invalidInput('querystring', at((first?.instancePath ?? '').slice(1)), 'is invalid'), {
      validation: errors.map((error) => ({ ...error, instancePath: at(error.instancePath.slice(1)) }))
    })
  }
  let sort
  try {
    sort = sortOf(query.sort as string | undefined, columns)
  } catch (err) {
    const [refusal] = (err as { validation: Array<{ message: string }> }).validation
    throw invalidInput('querystring', at('sort'), refusal!.message)
  }
  return { filters: filtersOf(query, filters), sort, limit: Math.min(query.limit as number, embed.offer.maxLimit) }
}
