import type { Guard } from '../../plugins/auth/index.js'
import { BUILT_IN_TABLES } from '../../db/resources.js'
import { PG_INT_MAX } from '../../schemas/common.js'
import { InvalidResourceOptions } from './errors.js'

export const ROUTE_NAMES = ['list', 'create', 'get', 'update', 'delete'] as const
export type RouteName = typeof ROUTE_NAMES[number]

export interface ResourceOptions {
  /** Lower-case identifier: the path segment, the table (unless `table`), the tag and the operationId stem. */
  name: string
  /** The table's name when it differs from `name`. Never one of the service's own tables. Default: `name`. */
  table?: string
  /** An onRequest hook on every route, e.g. `app.authenticate`; given but undefined fails the boot. */
  guard?: Guard
  /** Routes to leave out, e.g. `{ delete: false }`. Every route is on by default. */
  routes?: Partial<Record<RouteName, boolean>>
  /** Page size of `GET /<name>/` when the request names none. Default 100 (at most maxLimit). */
  defaultLimit?: number
  /** Larger requested page sizes are reduced to this. Default 1000. */
  maxLimit?: number
  createTable?: boolean
}

export interface ResolvedResourceOptions extends Required<Omit<ResourceOptions, 'guard' | 'routes'>> {
  guard?: Guard
  routes: Record<RouteName, boolean>
}

export const IDENTIFIER = /^[a-z][a-z0-9_]{0,62}$/

const show = (value: unknown) => typeof value === 'function' ? 'a function' : JSON.stringify(value) ?? String(value)

function check (ok: boolean, message: string, value: unknown): asserts ok {
  if (!ok) throw new InvalidResourceOptions(`${message} (got ${show(value)})`)
}

function limits ({ defaultLimit, maxLimit = 1000 }: ResourceOptions) {
  check(Number.isInteger(maxLimit) && maxLimit >= 1 && maxLimit <= PG_INT_MAX, `maxLimit must be an integer from 1 to ${PG_INT_MAX}`, maxLimit)
  const fallback = defaultLimit ?? Math.min(100, maxLimit)
  check(Number.isInteger(fallback) && fallback >= 1 && fallback <= maxLimit, `defaultLimit must be an integer from 1 to maxLimit (${maxLimit})`, defaultLimit)
  return { defaultLimit: fallback, maxLimit }
}

function routeSwitches (routes: unknown): Record<RouteName, boolean> {
  check(routes === undefined || (typeof routes === 'object' && routes !== null), 'routes must be an object such as { delete: false }', routes)
  const given = (routes ?? {}) as Record<string, unknown>
  for (const [key, value] of Object.entries(given)) {
    if (!(ROUTE_NAMES as readonly string[]).includes(key)) {
      throw new InvalidResourceOptions(`routes.${key} is not a route; the routes are ${ROUTE_NAMES.join(', ')}`)
    }
    check(typeof value === 'boolean', `routes.${key} must be true or false`, value)
  }
  return Object.fromEntries(ROUTE_NAMES.map((route) => [route, given[route] !== false])) as Record<RouteName, boolean>
}

export function resolveResourceOptions (opts: ResourceOptions): ResolvedResourceOptions {
  const { name, table = name, guard, createTable = true } = opts
  const identifier = 'must be a lower-case identifier: a letter, then letters, digits or _, at most 63 characters'
  check(typeof name === 'string' && IDENTIFIER.test(name), `name ${identifier}`, name)
  check(typeof table === 'string' && IDENTIFIER.test(table), `table ${identifier}`, table)
  if (BUILT_IN_TABLES.includes(table)) {
    throw new InvalidResourceOptions(`the table "${table}" belongs to the service (${BUILT_IN_TABLES.join(', ')}); choose another name or a table option`)
  }
  // A guard named but undefined is a guard missing, not an open resource.
  if ('guard' in opts && typeof guard !== 'function') {
    throw new InvalidResourceOptions(`"${name}": guard must be a function such as app.authenticate (got ${show(guard)}); ` +
      'app.authenticate and app.requireScopes exist once authPlugin is registered: register it, awaited, before this plugin')
  }
  check(typeof createTable === 'boolean', 'createTable must be true or false', createTable)
  return { name, table, guard, createTable, routes: routeSwitches(opts.routes), ...limits(opts) }
}
