import { and, eq, lt, sql } from 'drizzle-orm'
import type { Database } from './client.js'
import { recordPlaceholders, type NewRefreshRecord } from './refresh-tokens.js'
import { loginFailures, refreshTokens, users } from './schema.js'
import type { User } from './users.js'

export interface Attempt {
  /** Attempts in the current window, this one included. */
  count: number
  /** Seconds until the window resets. */
  retryAfter: number
  /** The account with the attempt's email, if there is one. */
  user: User | null
}

/**
 * A fixed-window counter of login attempts per email and client address, in the database so
 * every server process shares it. An attempt is counted before the password is checked and
 * forgotten on success, so concurrent guesses cannot slip past the limit.
 */
export function createLoginFailures (db: Database, windowSeconds: number) {
  const window = sql.raw(`interval '${Math.trunc(windowSeconds)} seconds'`)
  const current = sql`${loginFailures.window_start} > now() - ${window}`

  // Prepared once, and each also does the login's other work at that step (reading the account,
  // storing the refresh token): a login takes two round trips. Its main thread shares the CPU
  // with the argon2 verifies, and every statement built or round trip taken costs them time.
  const place = { email: sql.placeholder('email'), address: sql.placeholder('address') }
  const pair = and(eq(loginFailures.email, place.email), eq(loginFailures.address, place.address))
  const counted = db.$with('counted').as(db.insert(loginFailures).values({ ...place, failures: 1 })
    .onConflictDoUpdate({
      target: [loginFailures.email, loginFailures.address],
      set: {
        failures: sql`case when ${current} then ${loginFailures.failures} + 1 else 1 end`,
        window_start: sql`case when ${current} then ${loginFailures.window_start} else now() end`
      }
    })
    .returning({
      count: loginFailures.failures,
      retryAfter: sql<number>`greatest(1, ceil(extract(epoch from ${loginFailures.window_start} + ${window} - now())))::int`.as('retry_after')
    }))
  const count = db.with(counted).select({ count: counted.count, retryAfter: counted.retryAfter, user: users })
    .from(counted).leftJoin(users, eq(users.email, place.email))
    .prepare('login_failures_attempt')
  const clear = db.delete(loginFailures).where(pair).prepare('login_failures_forget')
  const cleared = db.$with('cleared').as(db.delete(loginFailures).where(pair))
  const clearAndStore = db.with(cleared).insert(refreshTokens).values(recordPlaceholders)
    .prepare('login_failures_forget_and_store')

  return {
    /** Counts an attempt, and reads the account with that email (lower-cased) in the same statement. */
    async attempt (email: string, address: string): Promise<Attempt> {
      const [row] = await count.execute({ email, address })
      return row!
    },

    /** Forgets the attempts; with a refresh token, stores it in the same statement. */
    async forget (email: string, address: string, token?: NewRefreshRecord) {
      await (token ? clearAndStore.execute({ email, address, ...token }) : clear.execute({ email, address }))
    },

    async purgeExpired (): Promise<number> {
      const rows = await db.delete(loginFailures).where(lt(loginFailures.window_start, sql`now() - ${window}`))
        .returning({ email: loginFailures.email })
      return rows.length
    }
  }
}

export type LoginFailures = ReturnType<typeof createLoginFailures>
