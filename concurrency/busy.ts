import { causes } from '../db/errors.js'
import { defineProblem, type ProblemError } from '../http/problem-error.js'

/** What was full when a request was refused: the requests in progress, the event loop, the database's queue or the password hashes'. */
export type ShedReason = 'in_flight' | 'event_loop' | 'database_queue' | 'password_queue'

export const ServerBusyError = defineProblem({
  status: 503,
  code: 'SERVER_BUSY',
  message: 'The server is busy; retry after %s s',
  headers: (seconds: string | number) => ({ 'retry-after': String(seconds) })
})

export type ServerBusy = ProblemError & { reason: ShedReason, headers: Record<string, string> }

export function serverBusy (reason: ShedReason, retryAfterSeconds: number): ServerBusy {
  return Object.assign(new ServerBusyError(retryAfterSeconds), { reason }) as ServerBusy
}

/** The overload refusal behind `error`, which Drizzle may have wrapped, if it is one. */
export function serverBusyIn (error: unknown): ServerBusy | undefined {
  for (const cause of causes(error)) {
    if (cause.code === 'SERVER_BUSY' && 'reason' in cause) return cause as ServerBusy
  }
  return undefined
}
