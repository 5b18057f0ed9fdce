import { and, eq, gt, lt, sql } from 'drizzle-orm'
import type { Database } from './client.js'
import { refreshTokens } from './schema.js'

export type RefreshRecord = typeof refreshTokens.$inferSelect
export type NewRefreshRecord = Pick<RefreshRecord, 'jti' | 'user_id' | 'family_id' | 'expires_at'>

/** Server-side state of refresh tokens: each is single use, revocable, and purged once expired. */
export function createRefreshTokens (db: Database) {
  /** Revokes the record if it is still usable; the returned row says whether this call won. */
  const revokeUsable = (exec: Database, jti: string, userId: number) =>
    exec.update(refreshTokens).set({ revoked: true })
      .where(and(
        eq(refreshTokens.jti, jti),
        eq(refreshTokens.user_id, userId),
        eq(refreshTokens.revoked, false),
        gt(refreshTokens.expires_at, sql`now()`)
      ))
      .returning({ family_id: refreshTokens.family_id })

  return {
    async store (record: NewRefreshRecord, tx?: Database) {
      await (tx ?? db).insert(refreshTokens).values(record)
    },

    /**
     * Single use: revokes `jti` and stores its successor in one transaction. The conditional
     * UPDATE is the lock, so of N concurrent rotations of one token exactly one gets `true`.
     */
    async rotate (jti: string, userId: number, next: Omit<NewRefreshRecord, 'family_id' | 'user_id'>): Promise<boolean> {
      return db.transaction(async (tx) => {
        const [revoked] = await revokeUsable(tx, jti, userId)
        if (!revoked) return false
        await tx.insert(refreshTokens).values({ ...next, user_id: userId, family_id: revoked.family_id })
        return true
      })
    },

    /** Logout: `false` when the token was unknown, expired or already revoked. */
    async revoke (jti: string, userId: number): Promise<boolean> {
      return (await revokeUsable(db, jti, userId)).length > 0
    },

    /** Logout-all and password change: every refresh token of the user. */
    async revokeAll (userId: number): Promise<number> {
      const rows = await db.update(refreshTokens).set({ revoked: true })
        .where(and(eq(refreshTokens.user_id, userId), eq(refreshTokens.revoked, false)))
        .returning({ jti: refreshTokens.jti })
      return rows.length
    },

    async get (jti: string): Promise<RefreshRecord | null> {
      const [row] = await db.select().from(refreshTokens).where(eq(refreshTokens.jti, jti)).limit(1)
      return row ?? null
    },

    /** Deletes records past their expiry: they can never be used again. */
    async purgeExpired (): Promise<number> {
      const rows = await db.delete(refreshTokens).where(lt(refreshTokens.expires_at, sql`now()`))
        .returning({ jti: refreshTokens.jti })
      return rows.length
    }
  }
}

export type RefreshTokens = ReturnType<typeof createRefreshTokens>
