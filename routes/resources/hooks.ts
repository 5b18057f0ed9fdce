import type { FastifyRequest } from 'fastify'
import type { Database } from '../../db/client.js'
import type { PlinthAccount } from '../../plugins/auth/index.js'

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

type Maybe<T> = T | Promise<T>

/**
 * Code a resource runs around its writes; `Row` is `ResourceRow<typeof fields>`. A before* hook may return
 * the values to write instead of those given, or throw a problem error, which becomes the response and undoes the write.
 * An after* hook runs once the write is committed; its error is logged and never undoes the write.
 */
export interface ResourceHooks<Row extends object = Record<string, unknown>> {
  beforeCreate?: (data: Partial<Row>, context: TransactionContext) => Maybe<Partial<Row> | void>
  afterCreate?: (row: Row, context: HookContext) => Maybe<void>
  beforeUpdate?: (data: Partial<Row>, context: TransactionContext & { current: Row }) => Maybe<Partial<Row> | void>
  afterUpdate?: (row: Row, context: HookContext & { previous: Row }) => Maybe<void>
  beforeDelete?: (current: Row, context: TransactionContext) => Maybe<void>
  afterDelete?: (row: Row, context: HookContext) => Maybe<void>
}
