import type { TObject } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import type { Database } from '../../db/client.js'
import type { PlinthAccount } from '../../plugins/auth/index.js'
import type { ResourceRow } from '../../schemas/fields.js'

/** What every hook is told: the request, its account (null without one) and the resource's name. */
export interface HookContext {
  request: FastifyRequest
  account: PlinthAccount | null
  resource: string
}

/** A before* hook runs inside the write's transaction: writes through `tx` commit or roll back with the row. */
export interface TransactionContext extends HookContext {
  tx: Database
}

/** A create's context; in a bulk create, `index` is the row's place in the array (0 for a single row). */
export interface CreateContext extends TransactionContext {
  index: number
}

type Maybe<T> = T | Promise<T>

/**
 * Code a resource runs around its writes; `Row` is `ResourceRow<typeof fields>`, the row as the API answers it
 * (writeOnly fields are in `data`, never in a row). A before* hook may return the values to write instead of
 * those given, or throw a problem error (`problemError`, `validationError`, `conflictError`, `forbiddenError`,
 * `notFoundError`, all exported by plinth), which becomes the response and undoes the write and everything
 * written through `tx`. An after* hook runs once the write is committed;
 * its error is logged and never undoes the write.
 *
 * Methods, not function properties: hooks typed for one resource's rows are still a `ResourceHooks`.
 */
export interface ResourceHooks<Row extends object = Record<string, unknown>> {
  beforeCreate? (data: Partial<Row>, context: CreateContext): Maybe<Partial<Row> | undefined | void>
  afterCreate? (row: Row, context: HookContext): Maybe<void>
  beforeUpdate? (data: Partial<Row>, context: TransactionContext & { current: Row }): Maybe<Partial<Row> | undefined | void>
  afterUpdate? (row: Row, context: HookContext & { previous: Row }): Maybe<void>
  beforeDelete? (current: Row, context: TransactionContext): Maybe<void>
  afterDelete? (row: Row, context: HookContext): Maybe<void>
}

/**
 * Hooks typed by the resource's fields, their rows inferred:
 * @example
 * const hooks = resourceHooks(Task, { beforeUpdate: (data, { current }) => data.status === 'done' && current.status !== 'done' ? { ...data, done_at: new Date().toISOString() } : data })
 */
export function resourceHooks<Fields extends TObject> (fields: Fields, hooks: ResourceHooks<ResourceRow<Fields>>): ResourceHooks<ResourceRow<Fields>> {
  return hooks
}
