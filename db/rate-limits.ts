import { lt, sql } from 'drizzle-orm'
import { systemClock, type Clock } from './clock.js'
import type { Database } from './client.js'
import { rateLimits } from './schema.js'

/** A request's place in its window: the hits so far (its own included) and the milliseconds left. */
export interface Hit { current: number, ttl: number }

interface Waiting { windowMs: number, waiters: Array<{ resolve: (hit: Hit) => void, reject: (err: unknown) => void }> }

/** Fixed-window counters in the database, shared by every process; one event-loop turn's hits go in one statement. */
export function createRateCounter (db: Database, { clock = systemClock }: { clock?: Clock } = {}) {
  const keys = sql`unnest(${sql.placeholder('keys')}::text[], ${sql.placeholder('counts')}::int[], ${sql.placeholder('windows')}::int[]) as k(key, n, ms)`
  // Windows are judged by the clock's time, the parameter `now`, so every process counts alike.
  const now = sql`${sql.placeholder('now')}::timestamptz`
  const open = sql`${rateLimits.reset_at} > ${now}`
  const count = db.insert(rateLimits).select(db.select({
    key: sql`k.key`.as('key'),
    hits: sql`k.n`.as('hits'),
    reset_at: sql`${now} + k.ms * interval '1 millisecond'`.as('reset_at')
  }).from(keys)).onConflictDoUpdate({
    target: rateLimits.key,
    set: {
      hits: sql`case when ${open} then ${rateLimits.hits} + excluded.hits else excluded.hits end`,
      reset_at: sql`case when ${open} then ${rateLimits.reset_at} else excluded.reset_at end`
    }
  }).returning({
    key: rateLimits.key,
    hits: rateLimits.hits,
    ttl: sql<number>`greatest(0, ceil(extract(epoch from ${rateLimits.reset_at} - ${now}) * 1000))::int`
  }).prepare('rate_limits_hit')

  let pending: Map<string, Waiting> | null = null

  async function flush (batch: Map<string, Waiting>) {
    const entries = [...batch]
    try {
      const rows = await count.execute({
        keys: entries.map(([key]) => key),
        counts: entries.map(([, { waiters }]) => waiters.length),
        windows: entries.map(([, { windowMs }]) => windowMs),
        now: clock().toISOString()
      })
      const counted = new Map(rows.map((row) => [row.key, row]))
      for (const [key, { waiters }] of entries) {
        const row = counted.get(key)!
        // The hits of this turn are the last ones counted, in the order they came.
        const before = row.hits - waiters.length
        waiters.forEach(({ resolve }, i) => resolve({ current: before + i + 1, ttl: row.ttl }))
      }
    } catch (err) {
      for (const [, { waiters }] of entries) for (const { reject } of waiters) reject(err)
    }
  }

  return {
    /** Counts one hit on `key`, whose window lasts `windowMs` from its first hit. */
    hit (key: string, windowMs: number): Promise<Hit> {
      return new Promise((resolve, reject) => {
        if (pending === null) {
          const batch = pending = new Map()
          setImmediate(() => {
            pending = null
            flush(batch).catch(() => {})
          })
        }
        let entry = pending.get(key)
        if (!entry) pending.set(key, entry = { windowMs, waiters: [] })
        entry.waiters.push({ resolve, reject })
      })
    },

    async purge (): Promise<number> {
      const deleted = await db.delete(rateLimits).where(lt(rateLimits.reset_at, clock())).returning({ key: rateLimits.key })
      return deleted.length
    }
  }
}

export type RateCounter = ReturnType<typeof createRateCounter>
