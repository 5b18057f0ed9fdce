import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Refusal } from '../../db/sessions.js'
import { scopeList } from '../../db/users.js'
import { inactiveUser } from '../../plugins/auth/errors.js'
import { dummyHash, hashPassword, needsRehash, verifyPassword } from '../../plugins/auth/passwords.js'
import { TokenError, subjectId, type IssuedPair } from '../../plugins/auth/tokens.js'
import type { App } from '../../plugins/validation.js'
import { toPublic, type AccountsContext } from './context.js'
import { EmailTaken, InvalidCredentials, InvalidRefreshToken, tooManyFailures } from './errors.js'

/** Token responses must not be cached (RFC 6749 section 5.1). */
function sendPair (reply: FastifyReply, pair: IssuedPair) {
  const { refresh, ...body } = pair
  reply.header('cache-control', 'no-store')
  return body
}

/** Registration, password login, refresh rotation, logout and logout-all. */
export function authRoutes (app: App, ctx: AccountsContext) {
  const { users, sessions, schemas } = ctx

  /** The refresh token's user id, or 401: bad signature, expired, an access token, a bad subject. */
  function refreshSubject (token: string) {
    try {
      const claims = app.plinthTokens.verify(token, 'refresh')
      return { claims, userId: subjectId(claims) }
    } catch (err) {
      if (err instanceof TokenError) throw new InvalidRefreshToken(err.message)
      throw err
    }
  }

  /** The 401 for a token that cannot be used; a replay detected is logged for the account's owner. */
  function refused (request: FastifyRequest, refusal: Refusal, userId: number) {
    if (refusal === 'invalid') return new InvalidRefreshToken('it was already used, revoked, or is unknown')
    request.log.warn({ userId }, 'a revoked refresh token was presented again: every token of its login is revoked')
    return new InvalidRefreshToken('it was already used; every token of its login has been revoked')
  }

  app.post('/auth/register', {
    schema: schemas.register
  }, async function register (request, reply) {
    const { email, password } = request.body
    const user = await users.create({ email, hashed_password: await hashPassword(password) })
    if (!user) throw new EmailTaken(email.toLowerCase())
    return reply.code(201).send(toPublic(user))
  })

  app.post('/auth/login', {
    schema: schemas.login
  }, async function login (request, reply) {
    const email = request.body.username.toLowerCase()
    const limited = ctx.loginMaxFailures > 0
    // With the limit on, counting the attempt also reads the account, and opening the session
    // also forgets the count (db/sessions.ts says why).
    const counted = limited ? { email, address: request.ip } : undefined
    const attempt = counted ? await sessions.beginLogin(email, counted.address) : undefined
    if (attempt && attempt.count > ctx.loginMaxFailures) throw tooManyFailures(attempt.retryAfter)
    const user = attempt ? attempt.user : await users.findByEmail(email)
    const valid = await verifyPassword(user?.hashed_password ?? await dummyHash(), request.body.password)
    if (!user || !valid) throw new InvalidCredentials()
    if (!user.is_active) {
      if (counted) await sessions.clearAttempts(counted)
      throw inactiveUser()
    }
    if (needsRehash(user.hashed_password)) {
      await users.update(user.id, { hashed_password: await hashPassword(request.body.password) })
    }
    const pair = app.plinthTokens.issuePair({ id: user.id, scopes: scopeList(user.scopes) })
    const token = { ...pair.refresh, user_id: user.id, family_id: pair.refresh.jti }
    await sessions.openSession(token, counted)
    return sendPair(reply, pair)
  })

  app.post('/auth/refresh', {
    schema: schemas.refresh
  }, async function refresh (request, reply) {
    const { claims, userId } = refreshSubject(request.body.refresh_token)
    const next = app.plinthTokens.nextRefresh()
    const rotated = await sessions.rotate(claims.jti, userId, next)
    if (!rotated) {
      const user = await users.get(userId)
      if (!user) throw new InvalidRefreshToken('the user no longer exists')
      if (!user.is_active) throw inactiveUser()
      throw refused(request, await sessions.revokeFamilyIfReplayed(claims.jti, userId), userId)
    }
    return sendPair(reply, app.plinthTokens.issuePair({ id: userId, scopes: scopeList(rotated.scopes) }, next))
  })

  app.post('/auth/logout', {
    schema: schemas.logout
  }, async function logout (request, reply) {
    const { claims, userId } = refreshSubject(request.body.refresh_token)
    const outcome = await sessions.revoke(claims.jti, userId)
    if (outcome !== 'ok') throw refused(request, outcome, userId)
    return reply.code(204).send(null)
  })

  app.post('/auth/logout-all', {
    onRequest: app.authenticate,
    schema: schemas.logoutAll
  }, async function logoutAll (request, reply) {
    await sessions.revokeAll(request.account.id)
    return reply.code(204).send(null)
  })
}
