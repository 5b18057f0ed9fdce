import { randomBytes } from 'node:crypto'
import jwt from '@fastify/jwt'
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { createUsers, scopeList, type User } from '../../db/users.js'
import { inactiveUser, insufficientScope, invalidToken, notAuthenticated, notSuperuser } from './errors.js'
import { TokenError, createTokens, subjectId, type TokenClaims, type Tokens } from './tokens.js'

export interface AuthOptions {
  /** HS256 signing key; a random one per process when absent (tokens die at restart). */
  secret?: string
  accessTokenMinutes?: number
  refreshTokenDays?: number
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: TokenClaims
    /** The account behind the access token, loaded fresh on every request. */
    user: User
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    tokens: Tokens
    /** Guard: a valid access token of an existing, active user; sets `request.user`. */
    authenticate: preHandlerAsyncHookHandler
    /** Guard: `authenticate`, then the user must be a superuser. */
    requireSuperuser: preHandlerAsyncHookHandler
    /** Guard: `authenticate`, then every scope must be in the token and on the user's record. */
    requireScopes (...scopes: string[]): preHandlerAsyncHookHandler
  }
  interface FastifyRequest {
    /** The claims of the verified access token. */
    tokenClaims: TokenClaims | null
  }
}

function bearerToken (request: FastifyRequest): string {
  const header = request.headers.authorization
  if (!header) throw notAuthenticated()
  const [scheme, token, ...rest] = header.split(' ')
  if (scheme?.toLowerCase() !== 'bearer' || !token || rest.length > 0) throw invalidToken('expected "Authorization: Bearer <token>"')
  return token
}

/**
 * JWT access tokens (HS256 only) and the three guards of Profile A, on the root instance so any
 * plugin, a host app's included, can protect its routes with them.
 * @see https://www.rfc-editor.org/rfc/rfc6750
 */
async function authPlugin (app: FastifyInstance, opts: AuthOptions) {
  await app.register(jwt, {
    secret: opts.secret ?? randomBytes(32).toString('base64url'),
    sign: { algorithm: 'HS256' },
    // Pinning the algorithm refuses `alg: none` and every asymmetric or other-key trick.
    verify: { algorithms: ['HS256'] }
  })
  const tokens = createTokens(app.jwt, {
    accessSeconds: (opts.accessTokenMinutes ?? 30) * 60,
    refreshSeconds: (opts.refreshTokenDays ?? 14) * 86400
  })
  const users = createUsers(app.db)

  async function authenticate (request: FastifyRequest) {
    let claims: TokenClaims
    try {
      claims = tokens.verify(bearerToken(request), 'access')
    } catch (err) {
      if (err instanceof TokenError) throw invalidToken(err.message)
      throw err
    }
    const user = await users.get(subjectId(claims))
    if (!user) throw invalidToken('the user no longer exists')
    if (!user.is_active) throw inactiveUser()
    request.user = user
    request.tokenClaims = claims
  }

  app.decorate('tokens', tokens)
  app.decorateRequest('tokenClaims', null)
  app.decorate('authenticate', authenticate)
  app.decorate('requireSuperuser', async function requireSuperuser (request: FastifyRequest) {
    await authenticate(request)
    if (!request.user.is_superuser) throw notSuperuser()
  })
  app.decorate('requireScopes', (...scopes: string[]) => async function requireScopes (request: FastifyRequest) {
    await authenticate(request)
    // The token says what was granted at login; the record says what is granted now.
    const granted = new Set(request.tokenClaims?.scopes)
    const current = new Set(scopeList(request.user.scopes))
    if (!scopes.every((scope) => granted.has(scope) && current.has(scope))) throw insufficientScope(scopes)
  })
}

export default fp(authPlugin, { name: 'auth', fastify: '5.x', dependencies: ['db'] })
export { TokenError, type TokenClaims, type Tokens } from './tokens.js'
