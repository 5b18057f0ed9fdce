import { and, eq, gt, lt, or, sql, type SQLWrapper } from 'drizzle-orm'
import type { Database } from './client.js'
import { loginFailures, refreshTokens, users } from './schema.js'
import type { UserRow } from './users.js'

export type RefreshTokenRow = typeof refreshTokens.$inferSelect
export type NewRefreshToken = Pick<RefreshTokenRow, 'jti' | 'user_id' | 'family_id' | 'expires_at'>
/** The successor of a rotated token: its id and expiry, chosen before the rotation. */
export type Successor = Pick<RefreshTokenRow, 'jti' | 'expires_at'>
/**
 * Why a refresh token was refused: unknown, spent or expired; spent by a rotation within the reuse
 * interval (two tabs refreshing at once), its family kept; or a replay that ended its family.
 */
export type Refusal = 'invalid' | 'recent' | 'reused'

/** Attempts from this email and address in the current window (this one included), and the email's account. */
export interface LoginAttempt {
  count: number
  /** Seconds until the window resets. */
  retryAfter: number
  user: UserRow | null
}

export interface Attempter { email: string, address: string }

export interface SessionOptions {
  loginWindowSeconds: number
  /** A revoked refresh token presented again revokes its whole family (RFC 9700 4.14.2). */
  reuseDetection: boolean
  /** Within this many seconds of its rotation, a token presented again is refused without ending its family. */
  reuseIntervalSeconds: number
}

/**
 * Logins and the sessions they open. A session is a family of single-use refresh tokens, each
 * rotated into the next; login attempts are counted per email and client address, in the
 * database, so every server process shares the limit.
 */
export function createSessionRepository (db: Database, { loginWindowSeconds = 900, reuseDetection = false, reuseIntervalSeconds = 10 }: Partial<SessionOptions> = {}) {
  const window = sql.raw(`interval '${Math.trunc(loginWindowSeconds)} seconds'`)
  const grace = sql.raw(`interval '${Math.trunc(reuseIntervalSeconds)} seconds'`)
  const inWindow = sql`${loginFailures.window_start} > now() - ${window}`
  const attempter = { email: sql.placeholder('email'), address: sql.placeholder('address') }
  const ofAttempter = and(eq(loginFailures.email, attempter.email), eq(loginFailures.address, attempter.address))
  const token = {
    jti: sql.placeholder('jti'),
    user_id: sql.placeholder('user_id'),
    family_id: sql.placeholder('family_id'),
    expires_at: sql.placeholder('expires_at')
  }

  // Each login step is one prepared statement that also does the step's other work, so a login
  // takes two round trips: its thread shares the CPU with the argon2 verifies.
  const counted = db.$with('counted').as(db.insert(loginFailures).values({ ...attempter, failures: 1 })
    .onConflictDoUpdate({
      target: [loginFailures.email, loginFailures.address],
      set: {
        failures: sql`case when ${inWindow} then ${loginFailures.failures} + 1 else 1 end`,
        window_start: sql`case when ${inWindow} then ${loginFailures.window_start} else now() end`
      }
    })
    .returning({
      count: loginFailures.failures,
      retryAfter: sql<number>`greatest(1, ceil(extract(epoch from ${loginFailures.window_start} + ${window} - now())))::int`.as('retry_after')
    }))
  const countAndRead = db.with(counted).select({ count: counted.count, retryAfter: counted.retryAfter, user: users })
    .from(counted).leftJoin(users, eq(users.email, attempter.email))
    .prepare('sessions_begin_login')
  const clearAttempts = db.delete(loginFailures).where(ofAttempter).prepare('sessions_clear_attempts')
  const cleared = db.$with('cleared').as(db.delete(loginFailures).where(ofAttempter))
  const clearAndOpen = db.with(cleared).insert(refreshTokens).values(token).prepare('sessions_open_counted')
  const open = db.insert(refreshTokens).values(token).prepare('sessions_open')

  const usable = (jti: string | SQLWrapper, userId: number | SQLWrapper) => and(
    eq(refreshTokens.jti, jti),
    eq(refreshTokens.user_id, userId),
    eq(refreshTokens.revoked, false),
    gt(refreshTokens.expires_at, sql`now()`)
  )

  // Rotation in one statement, without a transaction: the UPDATE revokes the token only while
  // its user exists and is active, and is the lock (of N concurrent rotations exactly one finds
  // it unrevoked); the INSERT stores the successor in the same family.
  const presented = { jti: sql.placeholder('jti'), user_id: sql.placeholder('user_id') }
  const revoked = db.$with('revoked').as(db.update(refreshTokens).set({ revoked: true }).from(users)
    .where(and(usable(presented.jti, presented.user_id), eq(users.id, refreshTokens.user_id), eq(users.is_active, true)))
    .returning({ family_id: refreshTokens.family_id, scopes: users.scopes }))
  // Insert-select lists every column in table order; the parameters need their types spelled out.
  const successor = db.$with('successor').as(db.insert(refreshTokens).select(db.select({
    jti: sql`${sql.placeholder('next_jti')}::uuid`.as('jti'),
    user_id: sql`${presented.user_id}::int`.as('user_id'),
    family_id: revoked.family_id,
    expires_at: sql`${sql.placeholder('next_expires_at')}::timestamptz`.as('expires_at'),
    revoked: sql`false`.as('revoked'),
    created_at: sql`now()`.as('created_at')
  }).from(revoked)))
  const rotation = db.with(revoked, successor).select({ scopes: revoked.scopes }).from(revoked)
    .prepare('sessions_rotate')

  /** A revoked token presented again ends its whole family, with reuse detection on, unless it was rotated just now. */
  async function revokeFamilyIfReplayed (jti: string, userId: number): Promise<Refusal> {
    if (!reuseDetection) return 'invalid'
    // The token's rotation is when its successor, the next token of its family, was stored.
    const successor = sql`(select min(next.created_at) from ${refreshTokens} next
      where next.family_id = ${refreshTokens.family_id} and next.created_at > ${refreshTokens.created_at})`
    const [replayed] = await db.select({ family: refreshTokens.family_id, recent: sql<boolean>`coalesce(${successor} > now() - ${grace}, false)` })
      .from(refreshTokens)
      .where(and(eq(refreshTokens.jti, jti), eq(refreshTokens.user_id, userId), eq(refreshTokens.revoked, true)))
    if (!replayed) return 'invalid'
    if (replayed.recent) return 'recent'
    await db.update(refreshTokens).set({ revoked: true }).where(eq(refreshTokens.family_id, replayed.family))
    return 'reused'
  }

  return {
    /** Counts a login attempt from this email and address, and reads the email's account in the same statement. */
    async beginLogin (email: string, address: string): Promise<LoginAttempt> {
      const [row] = await countAndRead.execute({ email, address })
      return row!
    },

    /** Forgets the counted attempts of this email and address. */
    async clearAttempts ({ email, address }: Attempter) {
      await clearAttempts.execute({ email, address })
    },

    /** Stores a login's first refresh token; given the counted attempter, also forgets its attempts, in one statement. */
    async openSession (first: NewRefreshToken, counted?: Attempter) {
      await (counted ? clearAndOpen.execute({ ...counted, ...first }) : open.execute(first))
    },

    /**
     * Spends `jti` and stores `next` in its family, provided the user exists and is active: the
     * user's current scopes, or null when nothing was rotated (then ask revokeFamilyIfReplayed why).
     */
    async rotate (jti: string, userId: number, next: Successor): Promise<{ scopes: string } | null> {
      const [rotated] = await rotation.execute({ jti, user_id: userId, next_jti: next.jti, next_expires_at: next.expires_at.toISOString() })
      return rotated ?? null
    },

    revokeFamilyIfReplayed,

    /** Logout: revokes `jti`, or says why it could not. */
    async revoke (jti: string, userId: number): Promise<'ok' | Refusal> {
      const rows = await db.update(refreshTokens).set({ revoked: true }).where(usable(jti, userId))
        .returning({ jti: refreshTokens.jti })
      return rows.length > 0 ? 'ok' : revokeFamilyIfReplayed(jti, userId)
    },

    /** Ends every session of the user; returns how many refresh tokens were still usable. */
    async revokeAll (userId: number): Promise<number> {
      const rows = await db.update(refreshTokens).set({ revoked: true })
        .where(and(eq(refreshTokens.user_id, userId), eq(refreshTokens.revoked, false)))
        .returning({ jti: refreshTokens.jti })
      return rows.length
    },

    /**
     * Deletes what can never be used again: expired refresh tokens, revoked ones unless reuse
     * detection keeps them as evidence, and login counters past their window.
     */
    async purge (): Promise<{ tokens: number, counters: number }> {
      const expired = lt(refreshTokens.expires_at, sql`now()`)
      const [tokens, counters] = await Promise.all([
        db.delete(refreshTokens).where(reuseDetection ? expired : or(expired, eq(refreshTokens.revoked, true)))
          .returning({ jti: refreshTokens.jti }),
        db.delete(loginFailures).where(lt(loginFailures.window_start, sql`now() - ${window}`))
          .returning({ email: loginFailures.email })
      ])
      return { tokens: tokens.length, counters: counters.length }
    }
  }
}

export type SessionRepository = ReturnType<typeof createSessionRepository>
