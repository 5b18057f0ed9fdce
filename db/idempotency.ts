import { and, eq, isNull, lt, or } from 'drizzle-orm'
import { systemClock, type Clock } from './clock.js'
import type { Database } from './client.js'
import { idempotencyKeys } from './schema.js'

export type StoredKey = typeof idempotencyKeys.$inferSelect

/** A claim that finds the key held: its first request's answer, or null while that is in flight. */
export type Claim = { claimed: true } | { claimed: false, held: StoredKey }

/** How long a claim stays in flight before another request may take it over (its process may have died). */
const ABANDONED_AFTER_MS = 60_000
const PURGE_EVERY_MS = 3_600_000

/** The Idempotency-Key records: one per key and scope, claimed before the write, answered after it. */
export function createIdempotencyStore (db: Database, { clock = systemClock }: { clock?: Clock } = {}) {
  let purged = 0
  const where = (scope: string, key: string) => and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key))

  return {
    // One INSERT, so of concurrent requests with one key (in any process) exactly one claims it;
    // an expired record, or a claim abandoned in flight, is taken over.
    async claim (scope: string, key: string, fingerprint: string, ttlMs: number): Promise<Claim> {
      const now = clock()
      if (now.getTime() - purged > PURGE_EVERY_MS) {
        purged = now.getTime()
        await this.purge()
      }
      const expiresAt = new Date(now.getTime() + ttlMs)
      const abandoned = new Date(now.getTime() - ABANDONED_AFTER_MS)
      const taken = await db.insert(idempotencyKeys).values({ scope, key, fingerprint, created_at: now, expires_at: expiresAt })
        .onConflictDoUpdate({
          target: [idempotencyKeys.scope, idempotencyKeys.key],
          set: { fingerprint, status: null, headers: null, body: null, created_at: now, expires_at: expiresAt },
          setWhere: or(lt(idempotencyKeys.expires_at, now), and(isNull(idempotencyKeys.status), lt(idempotencyKeys.created_at, abandoned)))
        })
        .returning({ key: idempotencyKeys.key })
      if (taken.length > 0) return { claimed: true }
      const [held] = await db.select().from(idempotencyKeys).where(where(scope, key))
      // Released between the two statements: the next attempt claims it.
      if (!held) return this.claim(scope, key, fingerprint, ttlMs)
      return { claimed: false, held }
    },

    async answer (scope: string, key: string, status: number, headers: Record<string, string>, body: string) {
      await db.update(idempotencyKeys).set({ status, headers, body }).where(and(where(scope, key), isNull(idempotencyKeys.status)))
    },

    /** Lets the key go when its request did not succeed, so the client may try again with it. */
    async release (scope: string, key: string) {
      await db.delete(idempotencyKeys).where(and(where(scope, key), isNull(idempotencyKeys.status)))
    },

    async purge (): Promise<number> {
      const rows = await db.delete(idempotencyKeys).where(lt(idempotencyKeys.expires_at, clock())).returning({ key: idempotencyKeys.key })
      return rows.length
    }
  }
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>
