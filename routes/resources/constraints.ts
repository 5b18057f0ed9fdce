import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { referencedRowViolation } from '../../db/constraints.js'
import { constraintViolation, sqlState } from '../../db/errors.js'
import { referenceName, uniqueIndexName } from '../../db/resource-ddl.js'
import type { ResourceTableSpec } from '../../db/resource-table.js'
import type { ProblemError } from '../../http/problem-error.js'
import { problemErrorHandler } from '../../http/problems.js'
import { InvalidResourceOptions, ResourceConflict, ResourceReferenced } from './errors.js'
import type { ResolvedResourceOptions } from './options.js'
import { presetOf } from './presets.js'
import { registeredResource } from './registry.js'

/**
 * The table of a resource as db/ makes it; `tableOf` gives the table of each resource it references, which must be
 * registered before it (itself aside), so that its table exists when the foreign key is made.
 */
export function resourceTableSpec (opts: ResolvedResourceOptions, tableOf: (resource: string) => string | undefined): ResourceTableSpec {
  const { fields, preset } = presetOf(opts.fields)
  const referencedTables: Record<string, string> = {}
  for (const { name, references } of fields) {
    if (references === undefined) continue
    const table = references.resource === opts.name ? opts.table : tableOf(references.resource)
    if (table === undefined) {
      throw new InvalidResourceOptions(`"${opts.name}": field "${name}" references "${references.resource}", which is not registered; ` +
        `register the resource "${references.resource}" first, before "${opts.name}"`)
    }
    referencedTables[references.resource] = table
  }
  return {
    table: opts.table,
    fields,
    owner: opts.owner,
    indexes: opts.indexes,
    timestamps: preset.timestamps,
    tracked: preset.tracked,
    unique: opts.unique,
    search: opts.search,
    referencedTables,
    events: opts.routes.events
  }
}

/** The resource's own answers to its table's constraints, named for its fields and resources; anything else as every route answers it. */
export function resourceErrorHandler (app: FastifyInstance, opts: ResolvedResourceOptions) {
  const keys = new Map(opts.unique.map((key) => [uniqueIndexName(opts.table, key), key.fields]))
  const param = `${opts.name}_id`

  /** The resource and reference field whose key refused the delete, if the key is a resource's own. */
  function referencing (table: string | undefined, constraint: string | undefined): string | undefined {
    const resources = app.hasDecorator('plinthResourceRegistry') ? [...app.plinthResourceRegistry.values()] : []
    const resource = resources.find((each) => each.table === table)
    const field = resource?.fields.find((each) => each.references !== undefined && referenceName(resource.table, each) === constraint)
    return field === undefined ? undefined : `${resource!.name} (${field.name})`
  }

  function translated (error: ProblemError, request: FastifyRequest): ProblemError | undefined {
    const violation = constraintViolation(error)
    if (violation?.kind === 'unique' && violation.table === opts.table && violation.constraint !== undefined) {
      const fields = keys.get(violation.constraint)
      if (fields !== undefined) return new ResourceConflict(opts.name, fields.join(' and '))
    }
    const referenced = referencedRowViolation(error, request.method === 'DELETE')
    if (referenced === undefined) return undefined
    const by = referencing(referenced.table, referenced.constraint)
    // A key a host added answers as on any route, naming its constraint; but RESTRICT's own SQLSTATE is known to no other handler.
    if (by === undefined && sqlState(error) !== '23001') return undefined
    const id = (request.params as Record<string, unknown> | undefined)?.[param]
    const row: [string, string] = typeof id === 'number' ? [opts.name, String(id)] : ['A row of', opts.name]
    return new ResourceReferenced(...row, by ?? referenced.table ?? 'another table')
  }

  return function resourceProblem (this: unknown, error: ProblemError, request: FastifyRequest, reply: FastifyReply) {
    return problemErrorHandler.call(this, translated(error, request) ?? error, request, reply)
  }
}

/** The table of a registered resource, for the foreign keys of the resources registered after it. */
export const registeredTable = (app: FastifyInstance) => (resource: string) => registeredResource(app, resource)?.table
