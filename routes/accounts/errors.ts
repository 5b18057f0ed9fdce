import { defineProblems } from '../../http/problem-error.js'

const retryIn = (seconds: string | number) => ({ 'retry-after': String(seconds) })
// A refused JSON route's 401 challenges for a bearer token; the token endpoint answers these as invalid_grant, without it.
const bearer = { 'www-authenticate': 'Bearer' }

/** Every code the accounts profile throws, the token endpoint's OAuth refusals included, with the headers each carries. */
export const accountProblems = defineProblems({
  InvalidAccountsOptions: { code: 'ACCOUNTS_INVALID_OPTIONS', message: 'accounts plugin: %s' },
  // RFC 6749 section 5.2 refusals of the token endpoint, answered by oauthErrorHandler.
  InvalidRequest: { status: 400, code: 'AUTH_INVALID_REQUEST', message: '%s' },
  InvalidClient: {
    status: 401,
    code: 'AUTH_INVALID_CLIENT',
    message: 'Client authentication failed: %s',
    headers: { 'www-authenticate': 'Basic realm="plinth", charset="UTF-8"' }
  },
  UnsupportedGrantType: { status: 400, code: 'AUTH_UNSUPPORTED_GRANT_TYPE', message: 'grant_type %s is not supported: use password or refresh_token' },
  InvalidScope: { status: 400, code: 'AUTH_INVALID_SCOPE', message: '%s' },
  InvalidCredentials: { status: 401, code: 'AUTH_INVALID_CREDENTIALS', message: 'Incorrect email or password', headers: bearer },
  InvalidRefreshToken: { status: 401, code: 'AUTH_INVALID_REFRESH_TOKEN', message: 'Invalid refresh token: %s', headers: bearer },
  InvalidResetToken: { status: 400, code: 'AUTH_INVALID_RESET_TOKEN', message: 'Invalid password reset token: %s' },
  InvalidVerifyToken: { status: 400, code: 'AUTH_INVALID_VERIFY_TOKEN', message: 'Invalid verification token: %s' },
  InvalidEmailChangeToken: { status: 400, code: 'AUTH_INVALID_EMAIL_CHANGE_TOKEN', message: 'Invalid email change token: %s' },
  UnverifiedEmail: { status: 400, code: 'AUTH_UNVERIFIED_EMAIL', message: 'The email address is not verified: a link to verify it has been sent to it' },
  WrongCurrentPassword: { status: 403, code: 'ACCOUNT_WRONG_PASSWORD', message: 'current_password is incorrect' },
  UserNotFound: { status: 404, code: 'ACCOUNT_USER_NOT_FOUND', message: 'user %s not found' },
  SessionNotFound: { status: 404, code: 'ACCOUNT_SESSION_NOT_FOUND', message: 'session %s not found' },
  EmailTaken: { status: 409, code: 'ACCOUNT_EMAIL_TAKEN', message: 'The email %s is already registered' },
  AlreadyVerified: { status: 409, code: 'ACCOUNT_ALREADY_VERIFIED', message: 'The email %s is already verified' },
  LastSuperuser: {
    status: 409,
    code: 'ACCOUNT_LAST_SUPERUSER',
    message: 'This is the last active superuser: make another account an active superuser first, so the service keeps one'
  },
  FormNotTaken: {
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'Content type "%s" is not taken here: this route takes application/json only (only /auth/login and /auth/revoke take forms)'
  },
  TooManyFailures: {
    status: 429,
    code: 'AUTH_TOO_MANY_FAILURES',
    message: 'Too many failed logins for this account from this address; retry in %s seconds',
    headers: retryIn
  },
  TooManyHashes: {
    status: 429,
    code: 'TOO_MANY_PASSWORD_HASHES',
    message: 'This account or address has too many password hashes waiting; retry after %s s',
    headers: retryIn
  },
  TooManyMails: {
    status: 429,
    code: 'MAIL_RATE_LIMITED',
    message: 'Too many mails of this kind to %s; retry in %s seconds',
    headers: (_email: string | number, seconds: string | number) => retryIn(seconds)
  }
})

export const {
  InvalidAccountsOptions, InvalidRequest, InvalidClient, UnsupportedGrantType, InvalidScope, InvalidCredentials, InvalidRefreshToken,
  InvalidResetToken, InvalidVerifyToken, InvalidEmailChangeToken, UnverifiedEmail, WrongCurrentPassword, UserNotFound, SessionNotFound,
  EmailTaken, AlreadyVerified, LastSuperuser, FormNotTaken
} = accountProblems

const { TooManyFailures, TooManyHashes, TooManyMails } = accountProblems
export const tooManyFailures = (retryAfter: number) => new TooManyFailures(retryAfter)
export const tooManyHashes = (retryAfter: number) => new TooManyHashes(retryAfter)
export const tooManyMails = (email: string, retryAfter: number) => new TooManyMails(email, retryAfter)
