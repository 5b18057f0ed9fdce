import { setImmediate as nextTurn } from 'node:timers/promises'
import type { Clock } from './clock.js'
import type { DatabaseClient, Listening } from './client.js'
import {
  currentSnapshot, eventsAfter, lastEventId, purgeEvents, resumeBounds, snapshotSettled, tableEventPage, type ChangeEvent, type EventPage, type EventScope
} from './event-log.js'
import { EVENTS_CHANNEL } from './event-triggers.js'

export type { ChangeEvent, ChangeOp, EventPage, EventScope } from './event-log.js'

export interface ChangeFeed {
  /** Live events of `table` committed after this call, in id order, each once; returns the unsubscribe function. */
  subscribe (table: string, listener: (event: ChangeEvent) => void): () => void
  /**
   * From the durable log: of the next `limit` events of `table` with id > after (decimal text), none past
   * `through` when given, those in `scope`, oldest first. `reset` is true when events after `after` may
   * have been purged, or when `after` was never an event's id (a log restored from before it).
   */
  since (table: string, after: string, limit: number, through?: string, scope?: EventScope): Promise<EventPage & { reset: boolean }>
  /** The id of the last event the pump has delivered to subscribers ('0' before any): a resume reads since() up to here, then live. */
  position (): string
  /** Starts the pump if it is not running; resolves once it listens, from when position() is where live events start. */
  ready (): Promise<void>
}

export interface ChangePump extends ChangeFeed {
  /** Reads the log now, as a notification or the poll does; resolves when what was committed is delivered (or held at a gap). */
  pump (): Promise<void>
  /** Deletes the events past the retention bounds, on the clock's time; answers how many went. */
  purge (): Promise<number>
  close (): Promise<void>
}

export interface ChangeFeedOptions {
  clock: Clock
  /** Longest wait between reads of the log, so a lost notification (a listener reconnecting) only delays. */
  pollIntervalMs: number
  /** Events read at once. */
  batch: number
  /** Events older than this are purged. */
  retentionMs: number
  /** At most this many of the newest events are kept. */
  maxEvents: number
  /** A failure of the pump in the background, which retries at the next notification or poll. */
  onError: (err: unknown) => void
}

const DECIMAL_ID = /^(0|[1-9]\d{0,18})$/
/** Bytes of rows handed to subscribers between two turns of the event loop. */
const TURN_BYTES = 64 * 1024

/** Checks a log id given as text: a bigint's decimal digits. */
export const isEventId = (text: string) => DECIMAL_ID.test(text) && BigInt(text) <= 9223372036854775807n

/**
 * The change feed of one process: LISTENs for the triggers' notifications, reads the log in id order
 * and hands each event to the subscribers of its table. Ids are taken before commit, so a smaller id
 * may commit after a larger one is read: the pump then holds its position at the gap until every
 * transaction running when the gap was seen has ended, reads once more, and skips what is still
 * missing (rolled back). A write in flight when the pump starts, below the log's head then, is
 * history: since() has it, live subscribers do not.
 */
export function createChangeFeed (client: DatabaseClient, options: ChangeFeedOptions): ChangePump {
  const { db } = client
  const listeners = new Map<string, Set<(event: ChangeEvent) => void>>()
  let last = 0n
  // Missing ids up to here are final: no transaction that could still commit them is running.
  let settledThrough = 0n
  let pending: { snapshot: string, upTo: bigint } | null = null
  let started: Promise<void> | null = null
  let listening: Listening | null = null
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | null = null
  let again = false
  let closed = false

  function deliver (event: ChangeEvent) {
    for (const listener of listeners.get(event.table) ?? []) {
      try {
        listener(event)
      } catch (err) {
        options.onError(err)
      }
    }
  }

  /**
   * Reads and delivers until the log is exhausted or a gap must wait. Between reads, and every TURN_BYTES
   * delivered, the event loop turns: PGlite answers without one, and subscribers' sockets must pass on
   * what they were given before more comes, or a client that keeps up would be cut as a slow one.
   */
  async function drain (): Promise<void> {
    let handed = 0
    for (;;) {
      const events = await eventsAfter(db, last.toString(), options.batch)
      if (pending !== null && last >= pending.upTo) pending = null
      let reread = false
      for (const event of events) {
        const id = BigInt(event.id)
        if (id !== last + 1n && id > settledThrough) {
          // Taken after the read: every transaction that took a missing id below the last one read is in it, or has ended.
          pending ??= { snapshot: await currentSnapshot(db), upTo: BigInt(events.at(-1)!.id) }
          if (!await snapshotSettled(db, pending.snapshot)) return
          settledThrough = pending.upTo
          pending = null
          reread = true
          break
        }
        deliver(event)
        last = id
        handed += event.row.length
        if (handed >= TURN_BYTES) {
          handed = 0
          await nextTurn()
        }
      }
      if (!reread && events.length < options.batch) return
      handed = 0
      await nextTurn()
    }
  }

  function pump (): Promise<void> {
    if (started === null || closed) return Promise.resolve()
    if (running !== null) {
      again = true
      return running
    }
    running = (async () => {
      await started
      do {
        again = false
        await drain()
      } while (again)
    })().catch(options.onError).finally(() => { running = null })
    return running
  }

  async function poll () {
    try {
      await listening?.renew()
    } catch (err) {
      options.onError(err)
    }
    await pump()
  }

  async function start () {
    if (client.listen === undefined) throw new Error('the database client cannot LISTEN: the change feed needs a client of db/client.ts')
    // Listening before reading the head: a write committed in between is then both read and notified, never neither.
    listening = await client.listen(EVENTS_CHANNEL, () => { pump().catch(options.onError) })
    try {
      last = BigInt(await lastEventId(db))
    } catch (err) {
      await listening.close()
      listening = null
      throw err
    }
    settledThrough = last
    timer = setInterval(() => { poll().catch(options.onError) }, options.pollIntervalMs).unref()
  }

  function ready (): Promise<void> {
    if (closed) return Promise.reject(new Error('the change feed is closed'))
    started ??= start().catch((err: unknown) => {
      // The next subscriber or ready() tries again.
      started = null
      throw err
    })
    return started
  }

  return {
    subscribe (table, listener) {
      let set = listeners.get(table)
      if (set === undefined) listeners.set(table, set = new Set())
      // A wrapper of its own, so the same function subscribed twice is two subscriptions.
      const own = (event: ChangeEvent) => listener(event)
      set.add(own)
      ready().catch(options.onError)
      return () => {
        set.delete(own)
        if (set.size === 0 && listeners.get(table) === set) listeners.delete(table)
      }
    },
    async since (table, after, limit, through, scope) {
      if (!isEventId(after)) throw new TypeError(`since: after must be an event id, decimal digits (got ${JSON.stringify(after)})`)
      if (through !== undefined && !isEventId(through)) throw new TypeError(`since: through must be an event id, decimal digits (got ${JSON.stringify(through)})`)
      const page = await tableEventPage(db, table, after, limit, through, scope)
      // Read after the events: a purge between the two then shows as a reset rather than as a silent hole.
      const { purged, issued } = await resumeBounds(db, table)
      return { ...page, reset: BigInt(after) < BigInt(purged) || BigInt(after) > BigInt(issued) }
    },
    position: () => last.toString(),
    ready,
    pump,
    purge: () => purgeEvents(db, { before: new Date(options.clock().getTime() - options.retentionMs), keep: options.maxEvents }),
    async close () {
      closed = true
      clearInterval(timer)
      await started?.catch(() => {})
      await running
      await listening?.close()
      listening = null
    }
  }
}
