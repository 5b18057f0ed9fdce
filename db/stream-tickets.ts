import { createHash, randomBytes } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Database } from './client.js'
import { systemClock, type Clock } from './clock.js'
import { rowsOf } from './raw-rows.js'

/** What a ticket stands for: the user, session and scopes of the access token that asked for it, on one resource. */
export interface StreamTicket {
  userId: number
  sessionId: string | null
  resource: string
  scopes: string[]
  expiresAt: Date
  /** The `exp` (seconds) of the access token that asked for it: a stream opened with the ticket ends then. */
  accessExpiresAt: number
}

/** Why a ticket was refused. */
export type TicketRefusal = 'unknown' | 'expired' | 'other-resource'

// 32 random bytes, then the access token's exp: the hash covers both, so the exp cannot be changed.
const TICKET = /^[A-Za-z0-9_-]{43}\.[1-9]\d{0,11}$/

const digest = (ticket: string) => createHash('sha256').update(ticket).digest('hex')

interface TicketRow { user_id: number, session_id: string | null, resource: string, scopes: string, expires_ms: number }

/** Browsers' EventSource cannot send a header: single-use tickets for the URL, kept as hashes only, spent atomically. */
export function createStreamTicketRepository (db: Database, { clock = systemClock }: { clock?: Clock } = {}) {
  return {
    /** A new ticket's text, which only the answer carries; expired tickets go in the same statement. */
    async issue (ticket: Omit<StreamTicket, 'expiresAt'>, lifetimeSeconds: number): Promise<{ ticket: string, expiresAt: Date }> {
      const text = `${randomBytes(32).toString('base64url')}.${ticket.accessExpiresAt}`
      const now = clock()
      // Never past the access token: a ticket cannot outlive the credential that asked for it.
      const expiresAt = new Date(Math.min(now.getTime() + lifetimeSeconds * 1000, ticket.accessExpiresAt * 1000))
      await db.execute(sql`with purged as (delete from stream_tickets where expires_at <= ${now.toISOString()}::timestamptz)
        insert into stream_tickets (hash, user_id, session_id, resource, scopes, expires_at, created_at)
        values (${digest(text)}, ${ticket.userId}, ${ticket.sessionId}::uuid, ${ticket.resource}, ${ticket.scopes.join(' ')},
          ${expiresAt.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz)`)
      return { ticket: text, expiresAt }
    },

    /** Spends the ticket, whatever the outcome: of two requests with it, one at most gets the ticket back. */
    async redeem (ticket: string, resource: string): Promise<StreamTicket | TicketRefusal> {
      if (!TICKET.test(ticket)) return 'unknown'
      const [row] = rowsOf<TicketRow>(await db.execute(sql`delete from stream_tickets where hash = ${digest(ticket)}
        returning user_id, session_id, resource, scopes, (extract(epoch from expires_at) * 1000)::float8 as expires_ms`))
      if (row === undefined) return 'unknown'
      const expiresAt = new Date(Number(row.expires_ms))
      if (expiresAt <= clock()) return 'expired'
      if (row.resource !== resource) return 'other-resource'
      return {
        userId: row.user_id,
        sessionId: row.session_id,
        resource: row.resource,
        scopes: row.scopes === '' ? [] : row.scopes.split(' '),
        expiresAt,
        accessExpiresAt: Number(ticket.slice(ticket.indexOf('.') + 1))
      }
    }
  }
}

export type StreamTicketRepository = ReturnType<typeof createStreamTicketRepository>
