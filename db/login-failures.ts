import { and, eq, lt, sql } from 'drizzle-orm'
import type { Database } from './client.js'
import { loginFailures } from './schema.js'

export interface Attempt {
  /** Attempts in the current window, this one included. */
  count: number
  /** Seconds until the window resets. */
  retryAfter: number
}

/**
 * A fixed-window counter of login attempts per email and client address, in the database so
 * every server process shares it. An attempt is counted before the password is checked and
 * forgotten on success, so concurrent guesses cannot slip past the limit.
 */
export function createLoginFailures (db: Database, windowSeconds: number) {
  const window = sql.raw(`interval '${Math.trunc(windowSeconds)} seconds'`)
  const current = sql`${loginFailures.window_start} > now() - ${window}`

  // Prepared once: login runs both on every attempt, and building them cost more main-thread
  // time than the rest of the route (the argon2 threads share the process's CPU).
  const place = { email: sql.placeholder('email'), address: sql.placeholder('address') }
  const count = db.insert(loginFailures).values({ ...place, failures: 1 })
    .onConflictDoUpdate({
      target: [loginFailures.email, loginFailures.address],
      set: {
        failures: sql`case when ${current} then ${loginFailures.failures} + 1 else 1 end`,
        window_start: sql`case when ${current} then ${loginFailures.window_start} else now() end`
      }
    })
    .returning({
      count: loginFailures.failures,
      retryAfter: sql<number>`greatest(1, ceil(extract(epoch from ${loginFailures.window_start} + ${window} - now())))::int`
    })
    .prepare('login_failures_attempt')
  const clear = db.delete(loginFailures)
    .where(and(eq(loginFailures.email, place.email), eq(loginFailures.address, place.address)))
    .prepare('login_failures_forget')

  return {
    async attempt (email: string, address: string): Promise<Attempt> {
      const [row] = await count.execute({ email, address })
      return row as Attempt
    },

    async forget (email: string, address: string) {
      await clear.execute({ email, address })
    },

    async purgeExpired (): Promise<number> {
      const rows = await db.delete(loginFailures).where(lt(loginFailures.window_start, sql`now() - ${window}`))
        .returning({ email: loginFailures.email })
      return rows.length
    }
  }
}

export type LoginFailures = ReturnType<typeof createLoginFailures>
