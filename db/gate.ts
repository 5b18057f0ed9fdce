import type { Sql } from 'postgres'

/** At most `limit` tasks at once; the others wait their turn, first come first served. */
export function createGate (limit: number) {
  let running = 0
  // A FIFO as an array with a moving head, compacted when half is spent: O(1) per task.
  let waiting: Array<() => void> = []
  let head = 0
  const release = () => {
    if (head < waiting.length) {
      const next = waiting[head]!
      waiting[head++] = undefined as never
      if (head > 1024 && head * 2 > waiting.length) {
        waiting = waiting.slice(head)
        head = 0
      }
      next()
    } else {
      running--
    }
  }
  return async function run<T> (task: () => PromiseLike<T>): Promise<T> {
    if (running < limit) running++
    else await new Promise<void>((resolve) => waiting.push(resolve))
    try {
      return await task()
    } finally {
      release()
    }
  }
}

type Unsafe = Sql['unsafe']

/**
 * Refused before PostgreSQL ran anything: no listener (ECONNREFUSED), or a server still starting
 * (57P03). postgres.js queues new queries on a connection that is still connecting, so one opened
 * during a restart fails queries sent after the server is ready (test/reliability/outage: a 503
 * after readiness answered 200). Nothing ran, so one more try, on a new connection, is safe.
 */
const neverRan = (err: unknown) => ['ECONNREFUSED', '57P03'].includes((err as { code?: string } | null)?.code ?? '')

async function onceMore<T> (task: () => PromiseLike<T>): Promise<T> {
  try {
    return await task()
  } catch (err) {
    if (!neverRan(err)) throw err
    return await task()
  }
}

/**
 * The postgres.js client with never more queries in flight than it has connections, so that
 * it never pipelines. Why: postgres.js 3.4.9 keeps its connections in queues whose `shift` leaves
 * a hole and whose `remove` is an `indexOf` from the start; when queries outnumber connections
 * they go through the "busy" queue, which then never empties and grows by one hole per query.
 * Measured here (GET item, 50 connections, pool 10): 6,760 req/s in the first 10 s, 3,460 in the
 * sixth. `max_pipeline: 0` avoids it too but breaks `sql.begin` (UNSAFE_TRANSACTION). Waiting
 * here instead costs nothing: the pipelined query would have waited on its connection anyway.
 * A transaction holds its place for its whole duration, as it holds its connection.
 */
export function gated (sql: Sql, limit: number): Sql {
  const run = createGate(limit)
  const unsafe = (...args: Parameters<Unsafe>) => {
    // Drizzle awaits `unsafe(...)` or `unsafe(...).values()`; the query starts when awaited.
    const lazy = (values: boolean) => ({
      then<A, B> (resolve: (rows: unknown) => A, reject: (err: unknown) => B) {
        return run(() => onceMore(() => values ? sql.unsafe(...args).values() : sql.unsafe(...args))).then(resolve, reject)
      }
    })
    return Object.assign(lazy(false), { values: () => lazy(true) })
  }
  // A transaction refused at connect never ran its callback, so it too may be tried once more.
  const begin = (...args: unknown[]) => run(() => onceMore(() => (sql.begin as (...a: unknown[]) => Promise<unknown>)(...args)))
  return new Proxy(sql, {
    get: (target, key, receiver) => key === 'unsafe' ? unsafe : key === 'begin' ? begin : Reflect.get(target, key, receiver)
  })
}
