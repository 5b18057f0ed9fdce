import type { Sql } from 'postgres'
import { queryTracing, tracedQuery } from '../db/tracing.js'

/** How many tasks may wait their turn; beyond it a task is refused at once with `refuse()`'s error. */
export interface QueueBound {
  maxWaiting: number
  refuse (): Error
}

/**
 * A requester's claim on a bounded queue, by the keys it is known by (its account, its address).
 * From half the bound on, a task one of whose keys already holds `max` waiting places is refused
 * with `refuse()`'s error, so the rest of the queue stays for everyone else.
 */
export interface Share {
  keys: readonly string[]
  max: number
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
   * Runs `task` in turn; with a bound (the gate's own by default), refuses it when the queue is full,
   * or when it would wait beyond its `share`. A task whose `signal` aborts while it waits leaves the
   * queue, rejected with the signal's reason.
   */
  <T>(task: () => PromiseLike<T>, bound?: QueueBound, signal?: AbortSignal, share?: Share): Promise<T>
  /** Tasks running now, and waiting their turn (reserved places included): what the metrics report of the pool. */
  load (): { running: number, waiting: number }
  /** Takes a place for one later task, or throws the bound's error when the queue is full (the share's beyond its share). */
  reserve (bound?: QueueBound, share?: Share): Reservation
  /** Sets the bound the gate applies when a call names none; undefined waits without bound. */
  limitWaiting (bound: QueueBound | undefined): void
}

const nothing = () => {}

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
  // The waiting places each key of a share holds: reserved, or waiting for their turn.
  const placesOf = new Map<string, number>()
  const hold = (keys: readonly string[], by: number) => {
    for (const key of keys) {
      const places = (placesOf.get(key) ?? 0) + by
      if (places === 0) placesOf.delete(key)
      else placesOf.set(key, places)
    }
  }
  /** Holds the share's places for a task that will wait; the function returned gives them back, once. */
  const take = (share: Share | undefined) => {
    if (share === undefined) return nothing
    hold(share.keys, 1)
    let holds = true
    return () => {
      if (holds) hold(share.keys, -1)
      holds = false
    }
  }
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
  /** Runs `task` once a slot is free; `leave` gives back what the task held while it waited. */
  async function enter<T> (task: () => PromiseLike<T>, signal?: AbortSignal, leave = nothing): Promise<T> {
    try {
      signal?.throwIfAborted()
      if (running < limit) running++
      else await turn(signal)
    } finally {
      leave()
    }
    try {
      return await task()
    } finally {
      release()
    }
  }
  // Reserved places count against the free slots too: an idle gate must not hand out a burst of places beyond its bound.
  const full = (bound: QueueBound | undefined) => bound !== undefined && running + queued() >= limit + bound.maxWaiting
  // From half the bound on, the waiting places left are kept for the keys that hold less than their share.
  const beyondShare = (bound: QueueBound | undefined, share: Share | undefined) => bound !== undefined && share !== undefined &&
    running + queued() - limit >= bound.maxWaiting / 2 && share.keys.some((key) => (placesOf.get(key) ?? 0) >= share.max)
  function run<T> (task: () => PromiseLike<T>, bound = defaultBound, signal?: AbortSignal, share?: Share): Promise<T> {
    if (full(bound)) return Promise.reject(bound!.refuse())
    if (running < limit) return enter(task, signal)
    if (beyondShare(bound, share)) return Promise.reject(share!.refuse())
    return enter(task, signal, take(share))
  }
  function reserve (bound = defaultBound, share?: Share): Reservation {
    if (full(bound)) throw bound!.refuse()
    if (beyondShare(bound, share)) throw share!.refuse()
    reserved++
    // The share's places are held until the task's turn comes, not only until it is run.
    const leave = take(share)
    let held = true
    const unreserve = () => {
      const was = held
      if (held) reserved--
      held = false
      return was
    }
    return {
      run: (task, signal) => {
        unreserve()
        return enter(task, signal, leave)
      },
      cancel: () => {
        if (unreserve()) leave()
      }
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
