import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import type { SessionRow } from '../../db/sessions.js'
import { invalidToken } from '../../plugins/auth/errors.js'
import type { App } from '../../http/types.js'
import { ref } from '../../schemas/common.js'
import { problemResponses, type ProblemExample } from '../../schemas/error.js'
import { page, pageQuery } from '../../schemas/page.js'
import { MySessionParams, SessionPageSchema, UserSessionParams } from '../../schemas/session.js'
import { UserIdParams } from '../../schemas/user.js'
import type { AccountsContext } from './context.js'
import { SessionNotFound, UserNotFound } from './errors.js'
import { authTags, security, userNotFound } from './schemas.js'

const sessionTags = ['sessions']
const noSession: ProblemExample = SessionNotFound.example('0b6c1f0e-8a1d-4e51-9d5c-2f4f5a7e9c10')

/** The caller's own sessions, logout-others, and the superuser's view of anyone's. */
export function sessionsRoutes (app: App, ctx: AccountsContext) {
  const { users, sessions } = ctx
  const sessionsQuery = () =>
    Type.Object(pageQuery({ defaultLimit: ctx.defaultLimit, maxLimit: ctx.maxLimit, offset: 'Sessions to skip, newest first' }), { additionalProperties: false })

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
    schema: {
      operationId: 'listMySessions',
      summary: 'The current user\'s live sessions, newest first; `current` marks this one',
      tags: sessionTags,
      security,
      querystring: sessionsQuery(),
      response: { 200: ref(SessionPageSchema), ...problemResponses(401, 403, 422) }
    }
  }, async function listMySessions (request) {
    return listOf(request, request.account.id, request.query)
  })

  app.delete('/users/me/sessions/:session_id', {
    onRequest: app.plinthGuards.authenticate,
    schema: {
      operationId: 'endMySession',
      summary: 'End one of the current user\'s sessions: its refresh token and access tokens stop working',
      tags: sessionTags,
      security,
      params: MySessionParams,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 403, noSession, 422) }
    }
  }, async function endMySession (request, reply) {
    // Another user's session is as unknown as one that never existed.
    if (!await sessions.end(request.params.session_id, request.account.id)) throw new SessionNotFound(request.params.session_id)
    return reply.code(204).send(null)
  })

  app.post('/auth/logout-others', {
    onRequest: app.plinthGuards.authenticate,
    schema: {
      operationId: 'logoutOthers',
      summary: 'End every session of the current user but this one',
      tags: authTags,
      security,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 403) }
    }
  }, async function logoutOthers (request, reply) {
    await sessions.revokeAll(request.account.id, { keep: currentSession(request) })
    return reply.code(204).send(null)
  })

  app.get('/users/:user_id/sessions', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: {
      operationId: 'listUserSessions',
      summary: 'An account\'s live sessions, newest first (superuser)',
      tags: sessionTags,
      security,
      params: UserIdParams,
      querystring: sessionsQuery(),
      response: { 200: ref(SessionPageSchema), ...problemResponses(401, 403, userNotFound, 422) }
    }
  }, async function listUserSessions (request) {
    if (!await users.get(request.params.user_id)) throw new UserNotFound(request.params.user_id)
    return listOf(request, request.params.user_id, request.query)
  })

  app.delete('/users/:user_id/sessions/:session_id', {
    onRequest: app.plinthGuards.requireSuperuser,
    schema: {
      operationId: 'endUserSession',
      summary: 'End one session of an account (superuser)',
      tags: sessionTags,
      security,
      params: UserSessionParams,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 403, noSession, 422) }
    }
  }, async function endUserSession (request, reply) {
    const { user_id: userId, session_id: sessionId } = request.params
    if (!await sessions.end(sessionId, userId)) throw new SessionNotFound(sessionId)
    return reply.code(204).send(null)
  })
}
