import type { SQL } from 'drizzle-orm'
import type { Sql } from 'postgres'
import type { Gate } from '../concurrency/gate.js'
import { queryTracing, traced, tracedQuery } from './tracing.js'

// Each seam below leans on an internal of drizzle-orm 0.45 or postgres.js 3.4; test/db/driver.test.ts pins them.

export interface Runnable<R = unknown> { execute (values?: Record<string, unknown>): Promise<R> }

export interface Preparable<R> extends Runnable<R> { prepare (name: string): Runnable<R> }

/** `builder`'s statement with `text` as its SQL, prepared under `name`: Drizzle's `prepare` calls `getSQL`, which an own property overrides. */
export function prepareAs<R> (builder: Preparable<R>, text: SQL, name: string): Runnable<R> {
  return Object.assign(builder, { getSQL: () => text }).prepare(name)
}

export interface StatementCache {
  one<R> (kind: string, prepare: (name: string) => Runnable<R>): Runnable<R>
  shaped<R> (kind: string, shape: string, prepare: (name: string) => Runnable<R>): Runnable<R> | undefined
}

/** One cache of prepared statements per query shape, named under `prefix`: beyond `maxShapes` of a kind, queries run unprepared. */
export function statementCache (prefix: string, maxShapes: number): StatementCache {
  const statements = new Map<string, Runnable>()
  const shapes = new Map<string, number>()
  return {
    one<R> (kind: string, prepare: (name: string) => Runnable<R>) {
      let statement = statements.get(kind) as Runnable<R> | undefined
      if (!statement) statements.set(kind, statement = prepare(`${prefix}_${kind}`))
      return statement
    },
    shaped<R> (kind: string, shape: string, prepare: (name: string) => Runnable<R>) {
      const key = `${kind}/${shape}`
      let statement = statements.get(key) as Runnable<R> | undefined
      if (statement) return statement
      const kept = shapes.get(kind) ?? 0
      if (kept >= maxShapes) return undefined
      shapes.set(kind, kept + 1)
      statements.set(key, statement = prepare(`${prefix}_${kind}_${kept}`))
      return statement
    }
  }
}

type Call<A extends unknown[], R> = (...args: A) => Promise<R>

export interface PgliteCalls {
  query: Call<never[], unknown>
  transaction: Call<never[], unknown>
}

/** Sends every call Drizzle makes on `client` (only `query` and `transaction`) through `around`, queries traced while tracing is on. */
export function wrapPglite<C extends PgliteCalls> (client: C, around: <A extends unknown[], R>(call: Call<A, R>) => Call<A, R>): void {
  client.query = around(traced(client.query.bind(client) as Call<[string, ...unknown[]], unknown>)) as C['query']
  client.transaction = around(client.transaction.bind(client)) as C['transaction']
}

// Refused before PostgreSQL ran anything (no listener, or a server still starting): postgres.js fails queries
// queued on a connection opened during a restart, and as nothing ran, one more try on a new connection is safe.
const neverRan = (err: unknown) => ['ECONNREFUSED', '57P03'].includes((err as { code?: string } | null)?.code ?? '')

async function onceMore<T> (task: () => PromiseLike<T>): Promise<T> {
  try {
    return await task()
  } catch (err) {
    if (!neverRan(err)) throw err
    return await task()
  }
}

type Unsafe = Sql['unsafe']

/** How a client bounds its statements: the SQL that bounds the rest of a transaction, and whether its connections lack the bound. */
export interface StatementBound {
  /** `set_config(..., true)`: a transaction's own setting, which no later transaction on the connection (or a pooler's) keeps. */
  setting: string
  /** True when each statement must be bounded in its transaction; false when the connections carry the bound themselves. */
  inTransactions (): boolean | Promise<boolean>
}

/** The statement that bounds each later statement of its transaction to `ms` (0: no bound). */
export const statementTimeoutSetting = (ms: number) => `select set_config('statement_timeout', '${Math.trunc(ms)}', true)`

// postgres.js that never pipelines: in 3.4 pipelined queries leave holes that slow every later query.
// Drizzle reaches postgres.js only by awaiting `unsafe(...)` or `unsafe(...).values()`, and through `begin`.
// With a `bound` its connections lack, a statement outside a transaction runs in one of its own, after the bound.
export function gated (sql: Sql, run: Gate, bound?: StatementBound): Sql {
  const unsafe = (...args: Parameters<Unsafe>) => {
    // The query starts when awaited, as postgres.js's own does.
    const lazy = (values: boolean) => ({
      then<A, B> (resolve: (rows: unknown) => A, reject: (err: unknown) => B) {
        const on = (client: Sql) => values ? client.unsafe(...args).values() : client.unsafe(...args)
        const query = async () => bound !== undefined && await bound.inTransactions()
          ? (await sql.begin((tx) => [tx.unsafe(bound.setting), on(tx as unknown as Sql)]))[1]
          : await on(sql)
        return run(() => onceMore(queryTracing ? () => tracedQuery(args[0], query, sql.options.database) : query)).then(resolve, reject)
      }
    })
    return Object.assign(lazy(false), { values: () => lazy(true) })
  }
  // A transaction refused at connect never ran its callback, so it too may be tried once more.
  const begin = (...args: unknown[]) => run(() => onceMore(async () => {
    const transaction = sql.begin as (...a: unknown[]) => Promise<unknown>
    if (bound === undefined || !await bound.inTransactions()) return transaction(...args)
    const work = args.at(-1) as (tx: Sql) => unknown
    return transaction(...args.slice(0, -1), async (tx: Sql) => {
      await tx.unsafe(bound.setting)
      const result = work(tx)
      return Array.isArray(result) ? Promise.all(result) : result
    })
  }))
  return new Proxy(sql, {
    get: (target, key, receiver) => key === 'unsafe' ? unsafe : key === 'begin' ? begin : Reflect.get(target, key, receiver)
  })
}
