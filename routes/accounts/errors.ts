import createError from '@fastify/error'

export const InvalidCredentials = createError('AUTH_INVALID_CREDENTIALS', 'Incorrect email or password', 401)
export const InvalidRefreshToken = createError('AUTH_INVALID_REFRESH_TOKEN', 'Invalid refresh token: %s', 401)
export const EmailTaken = createError('ACCOUNT_EMAIL_TAKEN', 'The email %s is already registered', 409)
export const WrongCurrentPassword = createError('ACCOUNT_WRONG_PASSWORD', 'current_password is incorrect', 403)
export const UserNotFound = createError('ACCOUNT_USER_NOT_FOUND', 'user %s not found', 404)
export const InvalidAccountsOptions = createError('ACCOUNTS_INVALID_OPTIONS', 'accounts plugin: %s')
const TooManyFailures = createError('AUTH_TOO_MANY_FAILURES', 'Too many failed logins for this account from this address; retry in %s seconds', 429)

export const tooManyFailures = (retryAfter: number) =>
  Object.assign(new TooManyFailures(retryAfter), { headers: { 'retry-after': String(retryAfter) } })
const TooManyHashes = createError('TOO_MANY_PASSWORD_HASHES', 'This account or address has too many password hashes waiting; retry after %s s', 429)
export const tooManyHashes = (retryAfter: number) =>
  Object.assign(new TooManyHashes(retryAfter), { headers: { 'retry-after': String(retryAfter) } })
export const FormNotTaken = createError('UNSUPPORTED_MEDIA_TYPE',
  'Content type "%s" is not taken here: this route takes application/json only (only /auth/login and /auth/revoke take forms)', 415)
export const SessionNotFound = createError('ACCOUNT_SESSION_NOT_FOUND', 'session %s not found', 404)
export const InvalidResetToken = createError('AUTH_INVALID_RESET_TOKEN', 'Invalid password reset token: %s', 400)
export const InvalidVerifyToken = createError('AUTH_INVALID_VERIFY_TOKEN', 'Invalid verification token: %s', 400)
export const InvalidEmailChangeToken = createError('AUTH_INVALID_EMAIL_CHANGE_TOKEN', 'Invalid email change token: %s', 400)
export const UnverifiedEmail = createError('AUTH_UNVERIFIED_EMAIL', 'The email address is not verified: a link to verify it has been sent to it', 400)
export const AlreadyVerified = createError('ACCOUNT_ALREADY_VERIFIED', 'The email %s is already verified', 409)
export const LastSuperuser = createError('ACCOUNT_LAST_SUPERUSER',
  'This is the last active superuser: make another account an active superuser first, so the service keeps one', 409)
const TooManyMails = createError('MAIL_RATE_LIMITED', 'Too many mails of this kind to %s; retry in %s seconds', 429)
export const tooManyMails = (email: string, retryAfter: number) =>
  Object.assign(new TooManyMails(email, retryAfter), { headers: { 'retry-after': String(retryAfter) } })
