import type { Sql } from 'postgres'
import { queryTracing, tracedQuery } from './tracing.js'

/** How many tasks may wait their turn; beyond it a task is refused at once with `refuse()`'s error. */
export interface QueueBound {
  maxWaiting: number
  refuse (): Error
}

/** A place in a gate's queue taken ahead of its task, so that the task is never refused once work depending on it has begun. */
export interface Reservation {
  /** Runs the task in the reserved place; dropped from the queue, rejected with `signal`'s reason, if it aborts first. */
  run<T> (task: () => PromiseLike<T>, signal?: AbortSignal): Promise<T>
  /** Gives the place back unused; nothing once `run` was called. */
  cancel (): void
}

export interface Gate {
  /**
   * Runs `task` in turn; with a bound (the gate's own by default), refuses it when the queue is full.
   * A task whose `signal` aborts while it waits leaves the queue, rejected with the signal's reason.
   */
  <T>(task: () => PromiseLike<T>, bound?: QueueBound, signal?: AbortSignal): Promise<T>
  /** Tasks running now, and waiting their turn (reserved places included): what the metrics report of the pool. */
  load (): { running: number, waiting: number }
  /** Takes a place for one later task, or throws the bound's error when the queue is full. */
  reserve (bound?: QueueBound): Reservation
  /** Sets the bound the gate applies when a call names none; undefined waits without bound. */
  limitWaiting (bound: QueueBound | undefined): void
}

interface Waiter {
  /** Gives the waiter its turn: false when it has left the queue already. */
  admit (): boolean
}

/** At most `limit` tasks at once; the others wait their turn, first come first served, up to `bound`. */
export function createGate (limit: number, bound?: QueueBound): Gate {
  let running = 0
  let reserved = 0
  let defaultBound = bound
  // A FIFO as an array with a moving head, compacted when half is spent: O(1) per task. A waiter
  // whose signal aborted stays in it, no longer counted, and is passed over when its turn comes.
  let waiting: Array<Waiter | undefined> = []
  let head = 0
  let live = 0
  const queued = () => live + reserved
  const release = () => {
    while (head < waiting.length) {
      const next = waiting[head]!
      waiting[head++] = undefined
      if (head > 1024 && head * 2 > waiting.length) {
        waiting = waiting.slice(head)
        head = 0
      }
      if (next.admit()) return
    }
    running--
  }
  function turn (signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      let waits = true
      const abandon = () => {
        waits = false
        live--
        reject(signal!.reason)
      }
      live++
      waiting.push({
        admit: () => {
          if (!waits) return false
          waits = false
          live--
          signal?.removeEventListener('abort', abandon)
          resolve()
          return true
        }
      })
      signal?.addEventListener('abort', abandon, { once: true })
    })
  }
  async function enter<T> (task: () => PromiseLike<T>, signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted()
    if (running < limit) running++
    else await turn(signal)
    try {
      return await task()
    } finally {
      release()
    }
  }
  // Reserved places count against the free slots too: an idle gate must not hand out a burst of places beyond its bound.
  const full = (bound: QueueBound | undefined) => bound !== undefined && running + queued() >= limit + bound.maxWaiting
  function run<T> (task: () => PromiseLike<T>, bound = defaultBound, signal?: AbortSignal): Promise<T> {
    if (full(bound)) return Promise.reject(bound!.refuse())
    return enter(task, signal)
  }
  function reserve (bound = defaultBound): Reservation {
    if (full(bound)) throw bound!.refuse()
    reserved++
    let held = true
    const cancel = () => {
      if (held) reserved--
      held = false
    }
    return {
      run: (task, signal) => {
        cancel()
        return enter(task, signal)
      },
      cancel
    }
  }
  return Object.assign(run, {
    load: () => ({ running, waiting: queued() }),
    reserve,
    limitWaiting: (bound: QueueBound | undefined) => { defaultBound = bound }
  })
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
