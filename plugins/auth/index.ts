import { randomBytes } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Versioned } from '../../db/crud.js'
import { createSessionLookup, recordSessionWrite } from '../../db/sessions.js'
import { createUserRepository, scopeList, type UserRow } from '../../db/users.js'
import { problemErrorHandler } from '../../http/problems.js'
import { TokenError, inactiveUser, insufficientScope, invalidToken, notAuthenticated, notSuperuser, notVerified } from './errors.js'
import { loadSigningKeys } from './keys.js'
import { resolveAuthOptions, type AuthOptions } from './options.js'
import { createTokens, subjectId, type TokenClaims, type Tokens } from './tokens.js'
import type { App, Guard } from '../../http/types.js'

/** The account behind a verified access token. A host adds its own columns' types with `declare module 'plinth'`. */
export interface PlinthAccount extends Versioned<UserRow> {}

/** plinth's guards, under a name of its own so that a host's `authenticate` never stands in the way. */
export interface PlinthGuards {
  /** A valid access token of an existing, active user; sets `request.account`. */
  authenticate: Guard
  requireSuperuser: Guard
  requireVerified: Guard
  /** `authenticate`, then every scope must be in the token and on the user's record. */
  requireScopes (...scopes: string[]): Guard
}

/** The short names of the guards, decorated too where the host has none of its own. */
export const GUARD_ALIASES = ['authenticate', 'requireSuperuser', 'requireVerified', 'requireScopes'] as const

declare module 'fastify' {
  interface FastifyInstance {
    plinthTokens: Tokens
    plinthGuards: PlinthGuards
    // Aliases of plinthGuards' members, unless the host decorated its own.
    authenticate: Guard
    requireSuperuser: Guard
    requireVerified: Guard
    requireScopes (...scopes: string[]): Guard
  }
  interface FastifyRequest {
    /** The account behind the verified access token, loaded fresh on every request. */
    account: PlinthAccount
    tokenClaims: TokenClaims | null
    /** Where the primary's WAL stood after the last write of the token's session (null: none yet), once a guard read its session. */
    sessionWriteLsn: bigint | null | undefined
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

export const SECRET_WARNING = 'SECRET_KEY is not set: tokens are signed with a random per-process key and become invalid at restart'

function bearerToken (request: FastifyRequest): string {
  const header = request.headers.authorization
  if (!header) throw notAuthenticated()
  const [scheme, token, ...rest] = header.split(' ')
  if (scheme?.toLowerCase() !== 'bearer' || !token || rest.length > 0) throw invalidToken('expected "Authorization: Bearer <token>"')
  return token
}

type GuardCheck = (request: FastifyRequest) => Promise<void>

const checks = new WeakMap<Guard, GuardCheck>()

/** What one of plinth's guards checks, without answering: for a request that outlives its start, such as an event stream, to check again. */
export const guardCheck = (guard: Guard): GuardCheck | undefined => checks.get(guard)

/** A guard whose refusal is a problem document under any error handler, a host's included. */
function guard (check: GuardCheck): Guard {
  const run: Guard = async function (request, reply) {
    try {
      await check(request)
    } catch (err) {
      return problemErrorHandler(err as Parameters<typeof problemErrorHandler>[0], request, reply)
    }
  }
  checks.set(run, check)
  return run
}

/** JWT access tokens and the guards, on the root instance so any plugin can use them. @see https://www.rfc-editor.org/rfc/rfc6750 */
async function authPlugin (app: App, opts: AuthOptions) {
  const { algorithm, secret, privateKey, keyId, previousKeys, issuer, audience, sessionCheck, accessTokenMinutes, refreshTokenDays } = resolveAuthOptions(opts)
  if (algorithm === 'HS256' && secret === undefined) app.log.warn(SECRET_WARNING)
  const keys = loadSigningKeys({ algorithm, secret: secret ?? randomBytes(32).toString('base64url'), privateKey, keyId, previousKeys })
  const tokens = createTokens(keys, { accessSeconds: accessTokenMinutes * 60, refreshSeconds: refreshTokenDays * 86400, issuer, audience, clock: app.plinthClock })
  const users = createUserRepository(app.plinthDb.db)
  const sessionUsers = createSessionLookup(app.plinthDb.db)

  /** The token's account, read fresh; with the session check, in the same statement as its session's state. */
  async function accountOf (request: FastifyRequest, claims: TokenClaims): Promise<Versioned<UserRow> | null> {
    if (!sessionCheck) return users.get(subjectId(claims))
    if (claims.sid === undefined) throw invalidToken('the token names no session; log in again')
    const found = await sessionUsers(subjectId(claims), claims.sid)
    // A deactivation ends every session: an inactive account is told so (403) before its ended session is (401).
    if (found && found.user.is_active && !found.live) throw invalidToken('its session has ended')
    request.sessionWriteLsn = found?.writeLsn
    return found?.user ?? null
  }

  async function authenticate (request: FastifyRequest) {
    let claims: TokenClaims
    try {
      claims = tokens.verify(bearerToken(request), 'access')
    } catch (err) {
      if (err instanceof TokenError) throw invalidToken(err.message)
      throw err
    }
    const user = await accountOf(request, claims)
    if (!user) throw invalidToken('the user no longer exists')
    if (!user.is_active) throw inactiveUser()
    request.account = user
    request.tokenClaims = claims
  }

  app.decorate('plinthTokens', tokens)
  app.decorateRequest('account', null as unknown as PlinthAccount)
  app.decorateRequest('tokenClaims', null)
  app.decorateRequest('sessionWriteLsn', undefined)
  // Read-your-writes on replicas: a session's write is answered only once its WAL position is on the session, for its next read on any process.
  if (sessionCheck && app.hasDecorator('plinthReplicas') && app.plinthReplicas !== null) {
    const db = app.plinthDb.db
    app.addHook('onSend', async function recordWrite (request, reply) {
      const sid = request.tokenClaims?.sid
      if (sid !== undefined && !SAFE_METHODS.has(request.method) && reply.statusCode < 400) await recordSessionWrite(db, sid)
    })
  }
  const guards: PlinthGuards = {
    authenticate: guard(authenticate),
    requireSuperuser: guard(async function requireSuperuser (request) {
      await authenticate(request)
      if (!request.account.is_superuser) throw notSuperuser()
    }),
    requireVerified: guard(async function requireVerified (request) {
      await authenticate(request)
      if (!request.account.is_verified) throw notVerified()
    }),
    requireScopes: (...scopes: string[]) => guard(async function requireScopes (request) {
      await authenticate(request)
      // The token says what was granted at login; the record says what is granted now.
      const granted = new Set(request.tokenClaims?.scopes)
      const current = new Set(scopeList(request.account.scopes))
      if (!scopes.every((scope) => granted.has(scope) && current.has(scope))) throw insufficientScope(scopes)
    })
  }
  app.decorate('plinthGuards', guards)
  for (const name of GUARD_ALIASES) {
    if (app.hasDecorator(name)) app.log.info(`auth: the app has its own ${name}; plinth's is app.plinthGuards.${name}`)
    else app.decorate(name, guards[name] as never)
  }
}

export default fp(authPlugin, {
  name: 'plinth-auth',
  fastify: '5.x',
  dependencies: ['plinth-db'],
  decorators: { fastify: ['plinthDb'] }
})
export type { Guard } from '../../http/types.js'
export { TokenError } from './errors.js'
export type { TokenClaims, Tokens } from './tokens.js'
export { AuthOptionsSchema, type AuthOptions } from './options.js'
