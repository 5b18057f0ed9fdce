import { defineProblems } from '../../http/problem-error.js'

// RFC 6750 section 3: the challenge tells the client why its bearer token was refused.
const challenge = (params = '') => ({ 'www-authenticate': params ? `Bearer ${params}` : 'Bearer' })
const quote = (text: string | number) => String(text).replace(/["\\]/g, '')

/** Every code the auth plugin throws, with the challenge each 401 (and a missing scope's 403) carries. */
export const authProblems = defineProblems({
  InvalidAuthOptions: { code: 'AUTH_INVALID_OPTIONS', message: 'auth plugin: %s' },
  // A token that does not verify, before the guard turns it into AUTH_INVALID_TOKEN.
  TokenError: { code: 'AUTH_TOKEN_INVALID', message: '%s' },
  NotAuthenticated: {
    status: 401,
    code: 'AUTH_NOT_AUTHENTICATED',
    message: 'Not authenticated: send an access token as "Authorization: Bearer <token>"',
    headers: challenge()
  },
  InvalidToken: {
    status: 401,
    code: 'AUTH_INVALID_TOKEN',
    message: 'Invalid access token: %s',
    headers: (why: string | number) => challenge(`error="invalid_token", error_description="${quote(why)}"`)
  },
  InactiveUser: { status: 403, code: 'AUTH_INACTIVE_USER', message: 'This account is inactive' },
  NotSuperuser: { status: 403, code: 'AUTH_NOT_SUPERUSER', message: 'This needs a superuser account' },
  NotVerified: { status: 403, code: 'AUTH_NOT_VERIFIED', message: 'This needs a verified email address: ask for a link with POST /auth/verify/request' },
  InsufficientScope: {
    status: 403,
    code: 'AUTH_INSUFFICIENT_SCOPE',
    message: 'This needs the scope(s): %s',
    headers: (scopes: string | number) => challenge(`error="insufficient_scope", scope="${quote(scopes)}"`)
  }
})

const { NotAuthenticated, InvalidToken, InactiveUser, NotSuperuser, NotVerified, InsufficientScope } = authProblems
export const { InvalidAuthOptions, TokenError } = authProblems

export const notAuthenticated = () => new NotAuthenticated()
export const invalidToken = (why: string) => new InvalidToken(why)
export const inactiveUser = () => new InactiveUser()
export const notSuperuser = () => new NotSuperuser()
export const notVerified = () => new NotVerified()
export const insufficientScope = (scopes: readonly string[]) => new InsufficientScope(scopes.join(' '))
