import { and, eq, gt, inArray, lt, or, sql } from 'drizzle-orm'
import type { Database } from './client.js'
import { refreshTokens } from './schema.js'

export type RefreshRecord = typeof refreshTokens.$inferSelect
export type NewRefreshRecord = Pick<RefreshRecord, 'jti' | 'user_id' | 'family_id' | 'expires_at'>

/** A new record's columns as placeholders, for prepared inserts of a `NewRefreshRecord`. */
export const recordPlaceholders = {
  jti: sql.placeholder('jti'),
  user_id: sql.placeholder('user_id'),
  family_id: sql.placeholder('family_id'),
  expires_at: sql.placeholder('expires_at')
}

/** What presenting a refresh token did: rotated or revoked it, found it unusable, or found it replayed. */
export type Outcome = 'ok' | 'invalid' | 'reused'

/**
 * Server-side state of refresh tokens: each is single use and revocable. With `reuseDetection`,
 * presenting a token that was already revoked revokes its whole family, i.e. every token rotated
 * from the same login (RFC 9700 section 4.14.2), and revoked records are kept until they expire
 * as the evidence; without it, the purge deletes them as soon as they are revoked.
 */
export function createRefreshTokens (db: Database, { reuseDetection = false } = {}) {
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

  /** A revoked token presented again: revoke every token of its family. `invalid` when it is not one. */
  const revokeFamilyOfReplayed = async (exec: Database, jti: string, userId: number): Promise<Outcome> => {
    if (!reuseDetection) return 'invalid'
    const replayed = exec.select({ family_id: refreshTokens.family_id }).from(refreshTokens)
      .where(and(eq(refreshTokens.jti, jti), eq(refreshTokens.user_id, userId), eq(refreshTokens.revoked, true)))
    const rows = await exec.update(refreshTokens).set({ revoked: true })
      .where(inArray(refreshTokens.family_id, replayed))
      .returning({ jti: refreshTokens.jti })
    return rows.length > 0 ? 'reused' : 'invalid'
  }

  const insert = db.insert(refreshTokens).values(recordPlaceholders).prepare('refresh_tokens_store')

  return {
    async store (record: NewRefreshRecord, tx?: Database) {
      await (tx ? tx.insert(refreshTokens).values(record) : insert.execute(record))
    },

    /**
     * Single use: revokes `jti` and stores its successor in one transaction. The conditional
     * UPDATE is the lock, so of N concurrent rotations of one token exactly one gets `ok`.
     * A family revoked on reuse is committed: the request fails, the revocation stays.
     */
    async rotate (jti: string, userId: number, next: Omit<NewRefreshRecord, 'family_id' | 'user_id'>): Promise<Outcome> {
      return db.transaction(async (tx) => {
        const [revoked] = await revokeUsable(tx, jti, userId)
        if (!revoked) return revokeFamilyOfReplayed(tx, jti, userId)
        await tx.insert(refreshTokens).values({ ...next, user_id: userId, family_id: revoked.family_id })
        return 'ok'
      })
    },

    /** Logout: `invalid` when the token was unknown, expired or already revoked. */
    async revoke (jti: string, userId: number): Promise<Outcome> {
      if ((await revokeUsable(db, jti, userId)).length > 0) return 'ok'
      return revokeFamilyOfReplayed(db, jti, userId)
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

    /**
     * Deletes the records that can never be used again: expired ones, and revoked ones unless
     * reuse detection needs them. The table so holds about one row per live session.
     */
    async purge (): Promise<number> {
      const expired = lt(refreshTokens.expires_at, sql`now()`)
      const rows = await db.delete(refreshTokens)
        .where(reuseDetection ? expired : or(expired, eq(refreshTokens.revoked, true)))
        .returning({ jti: refreshTokens.jti })
      return rows.length
    }
  }
}

export type RefreshTokens = ReturnType<typeof createRefreshTokens>
