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

  return {
    async attempt (email: string, address: string): Promise<Attempt> {
      const [row] = await db.insert(loginFailures).values({ email, address, failures: 1 })
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
      return row as Attempt
    },

    async forget (email: string, address: string) {
      await db.delete(loginFailures).where(and(eq(loginFailures.email, email), eq(loginFailures.address, address)))
    },

    async purgeExpired (): Promise<number> {
      const rows = await db.delete(loginFailures).where(lt(loginFailures.window_start, sql`now() - ${window}`))
        .returning({ email: loginFailures.email })
      return rows.length
    }
  }
}

export type LoginFailures = ReturnType<typeof createLoginFailures>
