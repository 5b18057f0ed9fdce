import createError from '@fastify/error'

// RFC 6750 section 3: the challenge tells the client why its bearer token was refused.
const challenge = (params = '') => ({ 'www-authenticate': params ? `Bearer ${params}` : 'Bearer' })
const quote = (text: string) => text.replace(/["\\]/g, '')

/** An error that carries the response headers the root error handler should send with it. */
function withHeaders<T extends Error> (error: T, headers: Record<string, string>): T & { headers: Record<string, string> } {
  return Object.assign(error, { headers })
}

export const InvalidAuthOptions = createError('AUTH_INVALID_OPTIONS', 'auth plugin: %s')

const NotAuthenticated = createError('AUTH_NOT_AUTHENTICATED', 'Not authenticated: send an access token as "Authorization: Bearer <token>"', 401)
const InvalidToken = createError('AUTH_INVALID_TOKEN', 'Invalid access token: %s', 401)
const InactiveUser = createError('AUTH_INACTIVE_USER', 'This account is inactive', 403)
const NotSuperuser = createError('AUTH_NOT_SUPERUSER', 'This needs a superuser account', 403)
const NotVerified = createError('AUTH_NOT_VERIFIED', 'This needs a verified email address: ask for a link with POST /auth/verify/request', 403)
const InsufficientScope = createError('AUTH_INSUFFICIENT_SCOPE', 'This needs the scope(s): %s', 403)

export const notAuthenticated = () => withHeaders(new NotAuthenticated(), challenge())
export const invalidToken = (why: string) =>
  withHeaders(new InvalidToken(why), challenge(`error="invalid_token", error_description="${quote(why)}"`))
export const inactiveUser = () => new InactiveUser()
export const notSuperuser = () => new NotSuperuser()
export const notVerified = () => new NotVerified()
export const insufficientScope = (scopes: readonly string[]) =>
  withHeaders(new InsufficientScope(scopes.join(' ')), challenge(`error="insufficient_scope", scope="${quote(scopes.join(' '))}"`))
