import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { createStreamTicketRepository, type TicketRefusal } from '../../db/stream-tickets.js'
import type { App, Guard } from '../../http/types.js'
import { invalidToken, notAuthenticated } from '../../plugins/auth/errors.js'
import { guarded, problemResponses } from '../../schemas/error.js'
import { pascalName } from '../../schemas/fields.js'
import { invalidInput } from './errors.js'

/** How long a ticket may wait to be used: enough to open the EventSource it was asked for. */
const TICKET_SECONDS = 30

const REFUSALS: Record<TicketRefusal, string> = {
  unknown: 'the ticket is unknown or already used',
  expired: 'the ticket has expired',
  'other-resource': 'the ticket is for another resource'
}

/** The event stream's `ticket` query parameter. */
export const TicketParameter = (name: string) =>
  Type.Optional(Type.String({ description: `A ticket from POST /${name}/events/tickets, for clients that cannot send a header (EventSource); single use` }))

function ticketSchema (name: string, read: Guard) {
  const stem = pascalName(name)
  return guarded({
    operationId: `create${stem}EventsTicket`,
    tags: [name],
    summary: `A single-use ticket, valid ${TICKET_SECONDS} s, to open the ${name} event stream without a header`,
    description: 'For EventSource, which cannot send Authorization: open `/events?ticket=` with it. The stream runs as the token ' +
      'that asked, its read guard checked again, and ends when that token expires. To resume, ask for a new ticket and add `lastEventId`.',
    response: {
      200: Type.Object({
        ticket: Type.String(),
        expires_in: Type.Integer({ description: 'Seconds left to use it' })
      }, { title: `${stem}EventsTicket` }),
      ...problemResponses(400, 415, 503)
    }
  }, read)
}

/**
 * POST /events/tickets, and the hook that spends a ticket before the read guard: the ticket's user
 * gets an access token that lives only in the request, so the guard checks the account, its
 * session and its scopes afresh, as for a header. Only a guarded resource of an app with the auth
 * plugin has tickets: they stand for a plinth access token.
 */
export function eventTickets (app: App, name: string, read: Guard | undefined) {
  if (read === undefined || !app.hasDecorator('plinthTokens')) return undefined
  const tickets = createStreamTicketRepository(app.plinthDb.db, { clock: app.plinthClock })
  /** The `exp` of the token behind a ticket: the token minted for the guard has its own. */
  const expiries = new WeakMap<FastifyRequest, number>()

  app.post('/events/tickets', { schema: ticketSchema(name, read), onRequest: read }, async function createEventsTicket (request, reply) {
    const claims = request.tokenClaims
    if (claims === null || request.account === null) throw notAuthenticated()
    const { ticket, expiresAt } = await tickets.issue({
      userId: request.account.id, sessionId: claims.sid ?? null, resource: name, scopes: claims.scopes, accessExpiresAt: claims.exp
    }, TICKET_SECONDS)
    reply.header('cache-control', 'no-store')
    return { ticket, expires_in: Math.max(0, Math.ceil((expiresAt.getTime() - app.plinthClock().getTime()) / 1000)) }
  })

  return {
    /** onRequest, before the read guard: spends the ticket, whose user's token the guard then checks. */
    async redeem (request: FastifyRequest) {
      const { ticket } = request.query as { ticket?: unknown }
      if (ticket === undefined) return
      if (typeof ticket !== 'string') throw invalidInput('querystring', '/ticket', 'must be given once')
      if (request.headers.authorization !== undefined) throw invalidInput('querystring', '/ticket', 'comes with an Authorization header: send one or the other')
      const redeemed = await tickets.redeem(ticket, name)
      if (typeof redeemed === 'string') throw invalidToken(REFUSALS[redeemed])
      const subject = { id: redeemed.userId, scopes: redeemed.scopes, ...(redeemed.sessionId ? { sid: redeemed.sessionId } : {}) }
      request.headers.authorization = `Bearer ${app.plinthTokens.issueAccess(subject)}`
      expiries.set(request, redeemed.accessExpiresAt)
    },

    /** The `exp` (seconds) of the token that asked for the request's ticket, if it came with one. */
    expiryOf: (request: FastifyRequest) => expiries.get(request)
  }
}
