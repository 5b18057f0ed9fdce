import createError from '@fastify/error'
import { causes } from '../db/errors.js'

/** What was full when a request was refused: the requests in progress, the event loop, the database's queue or the password hashes'. */
export type ShedReason = 'in_flight' | 'event_loop' | 'database_queue' | 'password_queue'

const ServerBusyError = createError('SERVER_BUSY', 'The server is busy; retry after %s s', 503)

export type ServerBusy = InstanceType<typeof ServerBusyError> & { reason: ShedReason, headers: Record<string, string> }

/** The 503 of a request shed under overload, with its Retry-After. */
export function serverBusy (reason: ShedReason, retryAfterSeconds: number): ServerBusy {
  return Object.assign(new ServerBusyError(retryAfterSeconds), { reason, headers: { 'retry-after': String(retryAfterSeconds) } })
}

/** The overload refusal behind `error`, which Drizzle may have wrapped, if it is one. */
export function serverBusyIn (error: unknown): ServerBusy | undefined {
  for (const cause of causes(error)) {
    if (cause.code === 'SERVER_BUSY' && 'reason' in cause) return cause as ServerBusy
  }
  return undefined
}
