import type { FastifyRequest } from 'fastify'
import type { SessionRow } from '../../db/sessions.js'
import { invalidToken } from '../../plugins/auth/errors.js'
import type { App } from '../../http/types.js'
import { page } from '../../schemas/page.js'
import type { AccountsContext } from './context.js'
import { SessionNotFound, UserNotFound } from './errors.js'

/** The caller's own sessions, logout-others, and the superuser's view of anyone's. */
export function sessionsRoutes (app: App, ctx: AccountsContext) {
  const { users, sessions, schemas } = ctx

  /** The session of the request's access token. */
  function currentSession (request: FastifyRequest): string {
    const sid = request.tokenClaims?.sid
    if (sid === undefined) throw invalidToken('the token names no session; log in again')
    return sid
  }

  async function listOf (request: FastifyRequest, userId: number, query: { offset: number, limit: number }) {
    const offset = query.offset
    const limit = Math.min(query.limit, ctx.maxLimit)
    const { rows, total } = await sessions.list(userId, { offset, limit })
    const current = request.tokenClaims?.sid
    return page(rows.map((row: SessionRow) => ({ ...row, current: row.id === current })), total, { offset, limit })
  }

  app.get('/users/me/sessions', {
    onRequest: app.plinthGuards.authenticate,
    schema: schemas.listMySessions
  }, async function listMySessions (request) {
    return listOf(request, request.account.id, request.query)
  })

  app.delete('/users/me/sessions/:session_id', {
    onRequest: app.plinthGuards.authenticate,
    schema: schemas.endMySession
  }, async function endMySession (request, reply) {
    // Another user's session is as unknown as one that never existed.
    if (!await sessions.end(request.params.session_id, request.account.id)) throw new SessionNotFound(request.params.session_id)
    return reply.code(204).send(null)
  })

  app.post('/auth/logout-others', {
    onRequest: app.plinthGuards.authenticate,
    schema: schemas.logoutOthers
  }, async function logoutOthers (request, reply) {
    await sessions.revokeAll(request.account.id, currentSession(request))
    return reply.code(204).send(null)
  })

  app.get('/users/:user_id/sessions', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: schemas.listUserSessions
  }, async function listUserSessions (request) {
    if (!await users.get(request.params.user_id)) throw new UserNotFound(request.params.user_id)
    return listOf(request, request.params.user_id, request.query)
  })

  app.delete('/users/:user_id/sessions/:session_id', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: schemas.endUserSession
  }, async function endUserSession (request, reply) {
    const { user_id: userId, session_id: sessionId } = request.params
    if (!await sessions.end(sessionId, userId)) throw new SessionNotFound(sessionId)
    return reply.code(204).send(null)
  })
}
