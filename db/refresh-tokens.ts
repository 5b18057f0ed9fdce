import { and, eq, gt, inArray, lt, or, sql, type SQLWrapper } from 'drizzle-orm'
import type { Database } from './client.js'
import { refreshTokens, users } from './schema.js'

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

/** The successor of a rotated token: its id and expiry, chosen before the rotation. */
export type Successor = Pick<RefreshRecord, 'jti' | 'expires_at'>

/**
 * Server-side state of refresh tokens: each is single use and revocable. With `reuseDetection`,
 * presenting a token that was already revoked revokes its whole family, i.e. every token rotated
 * from the same login (RFC 9700 section 4.14.2), and revoked records are kept until they expire
 * as the evidence; without it, the purge deletes them as soon as they are revoked.
 */
export function createRefreshTokens (db: Database, { reuseDetection = false } = {}) {
  /** The user's token `jti`, unless it is revoked or expired. */
  const usable = (jti: string | SQLWrapper, userId: number | SQLWrapper) => and(
    eq(refreshTokens.jti, jti),
    eq(refreshTokens.user_id, userId),
    eq(refreshTokens.revoked, false),
    gt(refreshTokens.expires_at, sql`now()`)
  )

  /** Revokes the record if it is still usable; the returned row says whether this call won. */
  const revokeUsable = (jti: string, userId: number) =>
    db.update(refreshTokens).set({ revoked: true }).where(usable(jti, userId))
      .returning({ family_id: refreshTokens.family_id })

  /** A revoked token presented again: revoke every token of its family. `invalid` when it is not one. */
  const revokeFamilyOfReplayed = async (jti: string, userId: number): Promise<Exclude<Outcome, 'ok'>> => {
    if (!reuseDetection) return 'invalid'
    const replayed = db.select({ family_id: refreshTokens.family_id }).from(refreshTokens)
      .where(and(eq(refreshTokens.jti, jti), eq(refreshTokens.user_id, userId), eq(refreshTokens.revoked, true)))
    const rows = await db.update(refreshTokens).set({ revoked: true })
      .where(inArray(refreshTokens.family_id, replayed))
      .returning({ jti: refreshTokens.jti })
    return rows.length > 0 ? 'reused' : 'invalid'
  }

  const insert = db.insert(refreshTokens).values(recordPlaceholders).prepare('refresh_tokens_store')

  // Rotation in one statement, so one round trip and no transaction: the UPDATE revokes the token
  // only while its user exists and is active, and the INSERT stores the successor from what it
  // returned. The UPDATE is the lock: of N concurrent rotations of one token, exactly one finds
  // it still unrevoked. PGlite serves one statement at a time; five round trips (the account
  // read and a transaction) held 50 concurrent refreshes queued about 70 ms each, long enough for
  // their garbage to outlive the young generation: the bench's peak went 316 -> 240 MB.
  const place = { jti: sql.placeholder('jti'), user_id: sql.placeholder('user_id') }
  const revoked = db.$with('revoked').as(db.update(refreshTokens).set({ revoked: true }).from(users)
    .where(and(usable(place.jti, place.user_id), eq(users.id, refreshTokens.user_id), eq(users.is_active, true)))
    .returning({ family_id: refreshTokens.family_id, scopes: users.scopes }))
  // Insert-select lists every column in table order; the parameters need their types spelled out.
  const successor = db.$with('successor').as(db.insert(refreshTokens).select(db.select({
    jti: sql`${sql.placeholder('next_jti')}::uuid`.as('jti'),
    user_id: sql`${place.user_id}::int`.as('user_id'),
    family_id: revoked.family_id,
    expires_at: sql`${sql.placeholder('next_expires_at')}::timestamptz`.as('expires_at'),
    revoked: sql`false`.as('revoked'),
    created_at: sql`now()`.as('created_at')
  }).from(revoked)))
  const rotation = db.with(revoked, successor).select({ scopes: revoked.scopes }).from(revoked)
    .prepare('refresh_tokens_rotate')

  return {
    async store (record: NewRefreshRecord, tx?: Database) {
      await (tx ? tx.insert(refreshTokens).values(record) : insert.execute(record))
    },

    /**
     * Single use: revokes `jti` and stores `next` in its family, in one statement, provided the
     * user exists and is active; the user's current scopes, or null when nothing was rotated
     * (`unusable` then says what the token was).
     */
    async rotate (jti: string, userId: number, next: Successor): Promise<{ scopes: string } | null> {
      const [rotated] = await rotation.execute({ jti, user_id: userId, next_jti: next.jti, next_expires_at: next.expires_at.toISOString() })
      return rotated ?? null
    },

    /** Why `jti` could not be used: `reused`, having revoked its family (with `reuseDetection`), or `invalid`. */
    unusable: revokeFamilyOfReplayed,

    /** Logout: `invalid` when the token was unknown, expired or already revoked. */
    async revoke (jti: string, userId: number): Promise<Outcome> {
      if ((await revokeUsable(jti, userId)).length > 0) return 'ok'
      return revokeFamilyOfReplayed(jti, userId)
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
