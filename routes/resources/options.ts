import { Type, type Static } from '@sinclair/typebox'
import { BUILT_IN_TABLES } from '../../db/resources.js'
import type { Guard } from '../../plugins/auth/index.js'
import { PageLimitOptions, pageLimits, readOptions, shown } from '../../plugins/options.js'
import { InvalidResourceOptions } from './errors.js'

export const ROUTE_NAMES = ['list', 'create', 'get', 'update', 'delete'] as const
export type RouteName = typeof ROUTE_NAMES[number]

export const IDENTIFIER = /^[a-z][a-z0-9_]{0,62}$/

const Identifier = Type.String({
  pattern: IDENTIFIER.source,
  errorMessage: 'must be a lower-case identifier: a letter, then letters, digits or _, at most 63 characters'
})
const Switch = Type.Boolean({ errorMessage: 'must be true or false' })

export const ResourceOptionsSchema = Type.Object({
  /** Lower-case identifier: the path segment, the table (unless `table`), the tag and the operationId stem. */
  name: Identifier,
  /** The table's name when it differs from `name`. Never one of the service's own tables. Default: `name`. */
  table: Type.Optional(Identifier),
  /** Routes to leave out, e.g. `{ delete: false }`. Every route is on by default. */
  routes: Type.Optional(Type.Partial(Type.Object(Object.fromEntries(ROUTE_NAMES.map((route) => [route, Switch])) as Record<RouteName, typeof Switch>), {
    additionalProperties: false, errorMessage: 'must be an object such as { delete: false }'
  })),
  ...PageLimitOptions(1000),
  /** Create the table at boot when it is missing. */
  createTable: Type.Boolean({ default: true, errorMessage: 'must be true or false' })
})

export type ResourceOptions = Partial<Static<typeof ResourceOptionsSchema>> & {
  name: string
  /** An onRequest hook on every route, e.g. `app.authenticate`; given but undefined fails the boot. */
  guard?: Guard
}

export interface ResolvedResourceOptions extends Required<Omit<ResourceOptions, 'guard' | 'routes'>> {
  guard?: Guard
  routes: Record<RouteName, boolean>
}

export function resolveResourceOptions (opts: ResourceOptions): ResolvedResourceOptions {
  const { name, table = name, createTable, routes = {}, ...limits } = readOptions(ResourceOptionsSchema, opts, InvalidResourceOptions)
  if (BUILT_IN_TABLES.includes(table)) {
    throw new InvalidResourceOptions(`the table "${table}" belongs to the service (${BUILT_IN_TABLES.join(', ')}); choose another name or a table option`)
  }
  // A guard named but undefined is a guard missing, not an open resource.
  const { guard } = opts
  if ('guard' in opts && typeof guard !== 'function') {
    throw new InvalidResourceOptions(`"${name}": guard must be a function such as app.authenticate (got ${shown(guard)}); ` +
      'app.authenticate and app.requireScopes exist once authPlugin is registered: register it, awaited, before this plugin')
  }
  return {
    name,
    table,
    guard,
    createTable,
    routes: Object.fromEntries(ROUTE_NAMES.map((route) => [route, routes[route] !== false])) as Record<RouteName, boolean>,
    ...pageLimits(limits, 100, InvalidResourceOptions)
  }
}
