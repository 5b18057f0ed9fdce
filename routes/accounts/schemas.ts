import { httpProblems } from '../../http/errors.js'
import type { ProblemExample } from '../../schemas/error.js'
import { EmailTaken, UserNotFound, accountProblems } from './errors.js'

// The parts of route schemas that several accounts route files share; each route's own schema sits beside its handler.

export const authTags = ['auth']
export const security = [{ OAuth2PasswordBearer: [] }]

export const userNotFound: ProblemExample = UserNotFound.example(7)

export const emailTakenOrInFlight: ProblemExample = [...EmailTaken.example('ada@example.com'),
  'The email is already registered (ACCOUNT_EMAIL_TAKEN), or the request first sent with this Idempotency-Key is still in progress (IDEMPOTENCY_KEY_IN_FLIGHT)']

/** The 429 of a route that checks a password. */
export const passwordChecked: ProblemExample = [...accountProblems.TooManyFailures.example(840),
  'Too many requests from this address (RATE_LIMITED), failed password checks of this account from it (AUTH_TOO_MANY_FAILURES), ' +
  'or password hashes of either waiting (TOO_MANY_PASSWORD_HASHES); retry after Retry-After seconds']

export function accountsSchemas ({ rateLimits }: {
  rateLimits: Record<'register' | 'token' | 'refresh' | 'revoke' | 'passwordReset' | 'verify' | 'passwordCheck', number>
}) {
  return {
    limited: (route: keyof typeof rateLimits, path: string): ProblemExample[] => rateLimits[route] > 0
      ? [httpProblems.RateLimited.example(`/api/v1/auth/${path}`, 42)]
      : []
  }
}
