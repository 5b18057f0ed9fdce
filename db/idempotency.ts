import { and, eq, isNull, lt, sql } from 'drizzle-orm'
import type { Database } from './client.js'
import { idempotencyKeys } from './schema.js'

export type StoredKey = typeof idempotencyKeys.$inferSelect

/** A claim that finds the key held: its first request's answer, or null while that is in flight. */
export type Claim = { claimed: true } | { claimed: false, held: StoredKey }

/** How long a claim stays in flight before another request may take it over (its process may have died). */
const ABANDONED_AFTER = sql`interval '1 minute'`
const PURGE_EVERY_MS = 3_600_000

/** The Idempotency-Key records: one per key and scope, claimed before the write, answered after it. */
export function createIdempotencyStore (db: Database) {
  let purged = 0
  const where = (scope: string, key: string) => and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key))

  return {
    /**
     * Claims `key` for a request with this fingerprint, unless another request holds it: one
     * INSERT, so of concurrent requests with one key (in any process) exactly one claims it. An
     * expired record, or a claim abandoned in flight, is taken over.
     */
    async claim (scope: string, key: string, fingerprint: string, ttlMs: number): Promise<Claim> {
      if (Date.now() - purged > PURGE_EVERY_MS) {
        purged = Date.now()
        await this.purge()
      }
      const expiresAt = new Date(Date.now() + ttlMs)
      const taken = await db.insert(idempotencyKeys).values({ scope, key, fingerprint, expires_at: expiresAt })
        .onConflictDoUpdate({
          target: [idempotencyKeys.scope, idempotencyKeys.key],
          set: { fingerprint, status: null, headers: null, body: null, created_at: sql`now()`, expires_at: expiresAt },
          setWhere: sql`${idempotencyKeys.expires_at} < now() or (${idempotencyKeys.status} is null and ${idempotencyKeys.created_at} < now() - ${ABANDONED_AFTER})`
        })
        .returning({ key: idempotencyKeys.key })
      if (taken.length > 0) return { claimed: true }
      const [held] = await db.select().from(idempotencyKeys).where(where(scope, key))
      // Released between the two statements: the next attempt claims it.
      if (!held) return this.claim(scope, key, fingerprint, ttlMs)
      return { claimed: false, held }
    },

    /** Keeps the answer of the request that claimed the key, for its replays. */
    async answer (scope: string, key: string, status: number, headers: Record<string, string>, body: string) {
      await db.update(idempotencyKeys).set({ status, headers, body }).where(and(where(scope, key), isNull(idempotencyKeys.status)))
    },

    /** Lets the key go when its request did not succeed, so the client may try again with it. */
    async release (scope: string, key: string) {
      await db.delete(idempotencyKeys).where(and(where(scope, key), isNull(idempotencyKeys.status)))
    },

    /** Deletes the records past their expiry. */
    async purge (): Promise<number> {
      const rows = await db.delete(idempotencyKeys).where(lt(idempotencyKeys.expires_at, sql`now()`)).returning({ key: idempotencyKeys.key })
      return rows.length
    }
  }
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>
