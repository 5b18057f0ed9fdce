import type { Sql } from 'postgres'
import { queryTracing, tracedQuery } from './tracing.js'

export interface Gate {
  <T>(task: () => PromiseLike<T>): Promise<T>
  /** Tasks running now, and waiting their turn: what the metrics report of the pool. */
  load (): { running: number, waiting: number }
}

/** At most `limit` tasks at once; the others wait their turn, first come first served. */
export function createGate (limit: number): Gate {
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
  async function run<T> (task: () => PromiseLike<T>): Promise<T> {
    if (running < limit) running++
    else await new Promise<void>((resolve) => waiting.push(resolve))
    try {
      return await task()
    } finally {
      release()
    }
  }
  return Object.assign(run, { load: () => ({ running, waiting: waiting.length - head }) })
}

type Unsafe = Sql['unsafe']

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

/** postgres.js that never pipelines: in 3.4.9 pipelined queries leave holes in a queue that slows every later query. */
export function gated (sql: Sql, run: Gate): Sql {
  const unsafe = (...args: Parameters<Unsafe>) => {
    // Drizzle awaits `unsafe(...)` or `unsafe(...).values()`; the query starts when awaited.
    const lazy = (values: boolean) => ({
      then<A, B> (resolve: (rows: unknown) => A, reject: (err: unknown) => B) {
        const query = () => values ? sql.unsafe(...args).values() : sql.unsafe(...args)
        return run(() => onceMore(queryTracing ? () => tracedQuery(args[0], query, sql.options.database) : query)).then(resolve, reject)
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
