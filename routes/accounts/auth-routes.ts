import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Refusal } from '../../db/sessions.js'
import { scopeList } from '../../db/users.js'
import { TokenError, inactiveUser } from '../../plugins/auth/errors.js'
import { hashPassword, needsRehash } from '../../plugins/auth/passwords.js'
import { subjectId, type IssuedPair, type TokenClaims } from '../../plugins/auth/tokens.js'
import type { App } from '../../http/types.js'
import { ref } from '../../schemas/common.js'
import { problemResponses, type ProblemExample } from '../../schemas/error.js'
import { IdempotentCreate } from '../../schemas/idempotency.js'
import {
  RefreshRequestSchema, RefreshScopeRequestSchema, RevocationRequestSchema, TokenPairSchema, TokenRequestSchema, type TokenRequest
} from '../../schemas/token.js'
import { RegisterSchema, UserSchema } from '../../schemas/user.js'
import { toPublic, type AccountsContext } from './context.js'
import { EmailTaken, InvalidCredentials, InvalidRefreshToken, InvalidRequest, InvalidScope, UnsupportedGrantType, UnverifiedEmail } from './errors.js'
import { checkClient, narrowScopes, noStore, oauthErrorHandler, oauthErrorResponse, requestedScopes } from './oauth.js'
import { checkPassword, hashShare, untilGone } from './password-check.js'
import { limit } from '../../http/rate-limits.js'
import { authTags, emailTakenOrInFlight, passwordChecked, security } from './schemas.js'

const USER_AGENT_MAX = 512

/** What a session records of its client: its User-Agent, cut short, and its address (TRUST_PROXY decides which). */
const clientOf = (request: FastifyRequest) => ({ user_agent: request.headers['user-agent']?.slice(0, USER_AGENT_MAX) ?? null, ip: request.ip })

/** Registration, password login, refresh rotation, logout and logout-all. */
export function authRoutes (app: App, ctx: AccountsContext) {
  const { users, sessions, mail } = ctx
  const { windowSeconds, ...limits } = ctx.rateLimits
  const { limited } = ctx.schemas
  // Registration hashes a password within its address's share of the hash queue.
  const registerLimited: ProblemExample[] = limits.register > 0 || ctx.maxHashWaitingPerClient > 0
    ? [[429, 'RATE_LIMITED', 'Too many requests to /api/v1/auth/register from this address; retry in 42 seconds',
        'Too many requests from this address (RATE_LIMITED), or too many of its password hashes waiting (TOO_MANY_PASSWORD_HASHES); retry after Retry-After seconds']]
    : []

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

  function claimsOf (token: string, type: 'access' | 'refresh'): TokenClaims | undefined {
    try {
      return app.plinthTokens.verify(token, type)
    } catch (err) {
      if (err instanceof TokenError) return undefined
      throw err
    }
  }
  const refreshClaims = (token: string) => claimsOf(token, 'refresh')
  const accessClaims = (token: string) => claimsOf(token, 'access')

  const logReplay = (request: FastifyRequest, userId: number) =>
    request.log.warn({ userId }, 'a revoked refresh token was presented again: every token of its login is revoked')

  function refused (request: FastifyRequest, refusal: Refusal, userId: number) {
    if (refusal === 'invalid') return new InvalidRefreshToken('it was already used, revoked, or is unknown')
    if (refusal === 'recent') return new InvalidRefreshToken('another request rotated it a moment ago; use the pair that request received')
    logReplay(request, userId)
    return new InvalidRefreshToken('it was already used; every token of its login has been revoked')
  }

  app.post('/auth/register', {
    schema: {
      operationId: 'register',
      summary: 'Create an account',
      tags: authTags,
      description: 'The new account is unverified; a link to verify its email is mailed to it.',
      body: RegisterSchema(ctx.passwordMinLength),
      headers: IdempotentCreate.headers,
      response: { 201: ref(UserSchema), ...problemResponses(emailTakenOrInFlight, 422, ...registerLimited) }
    },
    config: limit(limits.register, windowSeconds),
    ...ctx.idempotent
  }, async function register (request, reply) {
    const { email, password } = request.body
    const hashed = await untilGone(ctx, request, (signal) => hashPassword(password, { queue: ctx.passwordQueue, signal, share: hashShare(ctx, request) }))
    const user = await users.create({ email, hashed_password: hashed })
    if (!user) throw new EmailTaken(email.toLowerCase())
    await mail.verify(request, user)
    return reply.code(201).send(toPublic(user))
  })

  /** The password grant: the pair of an active account whose password matches, narrowed to `scope` if asked. */
  async function passwordGrant (request: FastifyRequest, body: TokenRequest): Promise<IssuedPair> {
    if (body.username === undefined) throw new InvalidRequest('username is required for the password grant')
    if (body.password === undefined) throw new InvalidRequest('password is required for the password grant')
    const email = body.username.toLowerCase()
    const requested = requestedScopes(body.scope)
    // With the limit on, counting the attempt also reads the account, and opening the session forgets the count.
    const { user, valid, counted } = await checkPassword(ctx, request, email, body.password)
    if (!user || !valid) {
      ctx.count('login_failure')
      throw new InvalidCredentials()
    }
    if (!user.is_active || (ctx.requireVerified && !user.is_verified)) {
      // The password was right: not a failure to count.
      if (counted) await sessions.clearAttempts(counted)
      if (!user.is_active) throw inactiveUser()
      await mail.verify(request, user)
      throw new UnverifiedEmail()
    }
    // Checked once the password is: an unknown scope must not tell whether the account exists.
    const granted = scopeList(user.scopes)
    const scopes = requested ? narrowScopes(requested, granted) : granted
    if (needsRehash(user.hashed_password)) {
      await users.update(user.id, { hashed_password: await hashPassword(body.password) })
    }
    // The session's id is its first refresh token's, and its access tokens name it.
    const refresh = app.plinthTokens.nextRefresh()
    const pair = app.plinthTokens.issuePair({ id: user.id, scopes, grant: requested, sid: refresh.jti }, refresh)
    const token = { ...refresh, user_id: user.id, family_id: refresh.jti }
    await sessions.openSession(token, clientOf(request), counted)
    return pair
  }

  /** `requested` beyond the account's scopes or the login's narrowing is invalid_scope, the token unspent; a token that
   * cannot be rotated is refused by the rotation whatever it asks, so a replay still ends its family. */
  async function checkRequested (claims: TokenClaims, userId: number, requested: string[]) {
    const current = await sessions.scopesIfRotatable(claims.jti, userId)
    if (current === null) return
    const account = scopeList(current)
    narrowScopes(requested, claims.grant ? claims.grant.filter((scope) => account.includes(scope)) : account)
  }

  /** Rotation for /auth/refresh and the refresh grant: current scopes, within the login's narrowing and `scope`. */
  async function rotate (request: FastifyRequest, refreshToken: string, scope?: string): Promise<IssuedPair> {
    const { claims, userId } = refreshSubject(refreshToken)
    const requested = requestedScopes(scope)
    if (requested) await checkRequested(claims, userId, requested)
    const next = app.plinthTokens.nextRefresh()
    const rotated = await sessions.rotate(claims.jti, userId, next)
    if (!rotated) {
      const user = await users.get(userId)
      if (!user) throw new InvalidRefreshToken('the user no longer exists')
      if (!user.is_active) throw inactiveUser()
      throw refused(request, await sessions.revokeFamilyIfReplayed(claims.jti, userId), userId)
    }
    const current = scopeList(rotated.scopes)
    const grant = requested ?? claims.grant
    const scopes = grant ? grant.filter((item) => current.includes(item)) : current
    return app.plinthTokens.issuePair({ id: userId, scopes, grant, sid: rotated.sid }, next)
  }

  /** The pair as the token endpoint answers it: never cached, and saying which scopes it carries. */
  function sendPair (reply: FastifyReply, pair: IssuedPair) {
    const { refresh, ...body } = pair
    noStore(reply)
    return body
  }

  app.post('/auth/login', {
    schema: {
      operationId: 'login',
      summary: 'The OAuth 2.0 token endpoint: log in with the password grant, or refresh',
      description: 'RFC 6749: `grant_type=password` (the default; `username` is the email) or `grant_type=refresh_token`, ' +
        'as a form or JSON. `scope` narrows the token to some of the account\'s scopes. Errors are RFC 6749 section 5.2 errors, ' +
        'which are problem documents too; 429 and 503 are problem documents.',
      tags: authTags,
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: TokenRequestSchema,
      response: {
        200: ref(TokenPairSchema),
        400: oauthErrorResponse('invalid_request, invalid_grant (wrong credentials, an inactive account, a bad or spent refresh token), ' +
          'unsupported_grant_type or invalid_scope', ['invalid_grant', 'AUTH_INVALID_CREDENTIALS', 'Incorrect email or password']),
        401: oauthErrorResponse('invalid_client: the HTTP Basic credentials do not decode',
          ['invalid_client', 'AUTH_INVALID_CLIENT', 'Client authentication failed: the Basic credentials are not base64 of client_id:client_secret']),
        ...problemResponses(passwordChecked, 503)
      }
    },
    config: limit(limits.token, windowSeconds),
    errorHandler: oauthErrorHandler
  }, async function token (request, reply) {
    const body = request.body
    checkClient(request, body)
    const grant = body.grant_type ?? 'password'
    if (grant === 'password') return sendPair(reply, await passwordGrant(request, body))
    if (grant !== 'refresh_token') throw new UnsupportedGrantType(grant)
    if (body.refresh_token === undefined) throw new InvalidRequest('refresh_token is required for the refresh_token grant')
    return sendPair(reply, await rotate(request, body.refresh_token, body.scope))
  })

  app.post('/auth/refresh', {
    schema: {
      operationId: 'refresh',
      summary: 'Exchange a refresh token for a new pair (the presented token is revoked)',
      description: '`scope` narrows the new pair, as the token endpoint\'s refresh grant does; each must be in the login\'s narrowing and granted to the account.',
      tags: authTags,
      body: RefreshScopeRequestSchema,
      response: {
        200: ref(TokenPairSchema),
        ...problemResponses([...InvalidScope.example('scope not granted: admin'),
          'A scope the account lacks, or wider than the login\'s (AUTH_INVALID_SCOPE), the token left unspent; or the body does not parse'],
        401, 403, 422, ...limited('refresh', 'refresh'))
      }
    },
    config: limit(limits.refresh, windowSeconds)
  }, async function refresh (request, reply) {
    return sendPair(reply, await rotate(request, request.body.refresh_token, request.body.scope))
  })

  app.post('/auth/revoke', {
    schema: {
      operationId: 'revoke',
      summary: 'Revoke a token (RFC 7009): always 200, whatever the token',
      description: 'A refresh or access token of this server ends its session: its refresh token and its access tokens stop working.',
      tags: authTags,
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: RevocationRequestSchema,
      response: {
        200: Type.Null({ description: 'Revoked, or nothing to revoke' }),
        400: oauthErrorResponse('invalid_request: no token', ['invalid_request', 'AUTH_INVALID_REQUEST', 'token is required']),
        401: oauthErrorResponse('invalid_client: the HTTP Basic credentials do not decode',
          ['invalid_client', 'AUTH_INVALID_CLIENT', 'Client authentication failed: the Basic credentials are not base64 of client_id:client_secret']),
        ...problemResponses(...limited('revoke', 'revoke'), 503)
      }
    },
    config: limit(limits.revoke, windowSeconds),
    errorHandler: oauthErrorHandler
  }, async function revoke (request, reply) {
    checkClient(request, request.body)
    if (request.body.token === undefined) throw new InvalidRequest('token is required')
    // RFC 7009 section 2.2: 200 whatever the token; whatever the hint, a token of ours ends its session (access sid or refresh family).
    const access = accessClaims(request.body.token)
    if (access?.sid) await sessions.end(access.sid, subjectId(access))
    const claims = refreshClaims(request.body.token)
    if (claims) {
      const userId = subjectId(claims)
      if (await sessions.revoke(claims.jti, userId) === 'reused') logReplay(request, userId)
    }
    return noStore(reply).code(200).send()
  })

  app.post('/auth/logout', {
    schema: {
      operationId: 'logout',
      summary: 'End the session of this refresh token',
      tags: authTags,
      body: RefreshRequestSchema,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 422, ...limited('revoke', 'logout')) }
    },
    config: limit(limits.revoke, windowSeconds)
  }, async function logout (request, reply) {
    const { claims, userId } = refreshSubject(request.body.refresh_token)
    const outcome = await sessions.revoke(claims.jti, userId)
    if (outcome !== 'ok') throw refused(request, outcome, userId)
    return reply.code(204).send(null)
  })

  app.post('/auth/logout-all', {
    onRequest: app.plinthGuards.authenticate,
    schema: {
      operationId: 'logoutAll',
      summary: 'End every session of the current user, this one included',
      tags: authTags,
      security,
      response: { 204: Type.Null({ description: 'Ended' }), ...problemResponses(401, 403) }
    }
  }, async function logoutAll (request, reply) {
    await sessions.revokeAll(request.account.id)
    return reply.code(204).send(null)
  })
}
