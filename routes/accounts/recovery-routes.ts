import type { TokenRefusal } from '../../db/account-tokens.js'
import { hashPassword } from '../../plugins/auth/passwords.js'
import type { App } from '../../http/types.js'
import { toPublic, type AccountsContext } from './context.js'
import { hashShare } from './password-check.js'
import { AlreadyVerified, EmailTaken, InvalidEmailChangeToken, InvalidResetToken, InvalidVerifyToken, tooManyMails } from './errors.js'
import { limit } from '../../http/rate-limits.js'

export const FORGOT_NOTICE = 'If an active account has this email, a link to reset its password has been sent to it'

const RESET_REFUSALS: Record<TokenRefusal, string> = {
  unknown: 'it is unknown or was already used',
  expired: 'it has expired; ask for a new link',
  stale: 'the password or the email changed since it was sent; ask for a new link'
}

const VERIFY_REFUSALS: Record<TokenRefusal, string> = {
  unknown: 'it is unknown or was already used',
  expired: 'it has expired; ask for a new link',
  stale: 'the account\'s email changed since it was sent'
}

const EMAIL_CHANGE_REFUSALS: Record<TokenRefusal, string> = {
  unknown: 'it is unknown or was already used',
  expired: 'it has expired; ask again',
  stale: 'the password or the email changed since it was sent; ask again'
}

/** Password recovery, email verification and email changes, through links mailed to the address. */
export function recoveryRoutes (app: App, ctx: AccountsContext) {
  const { tokens, mail, schemas } = ctx
  const { windowSeconds, passwordReset, verify } = ctx.rateLimits

  app.post('/auth/forgot-password', {
    schema: schemas.forgotPassword,
    config: limit(passwordReset, windowSeconds)
  }, async function forgotPassword (request, reply) {
    mail.reset(request, request.body.email)
    return reply.code(202).send({ detail: FORGOT_NOTICE })
  })

  app.post('/auth/reset-password', {
    schema: schemas.resetPassword,
    config: limit(passwordReset, windowSeconds)
  }, async function resetPassword (request, reply) {
    const { token, new_password: password } = request.body
    const reset = await tokens.resetPassword(token, await hashPassword(password, ctx.passwordQueue, undefined, hashShare(ctx, request)), ctx.now())
    if (typeof reset === 'string') throw new InvalidResetToken(RESET_REFUSALS[reset])
    request.log.info({ userId: reset.id }, 'password reset through a mailed link: every session ended')
    return reply.code(204).send(null)
  })

  app.post('/auth/verify/request', {
    onRequest: app.plinthGuards.authenticate,
    schema: schemas.requestVerification,
    config: limit(verify, windowSeconds)
  }, async function requestVerification (request, reply) {
    const { account } = request
    if (account.is_verified) throw new AlreadyVerified(account.email)
    const wait = await mail.verify(request, account)
    if (wait > 0) throw tooManyMails(account.email, wait)
    return reply.code(202).send({ detail: `A link to verify ${account.email} has been sent to it` })
  })

  app.post('/auth/verify', {
    schema: schemas.verify,
    config: limit(verify, windowSeconds)
  }, async function verifyEmail (request) {
    const verified = await tokens.verify(request.body.token, ctx.now())
    if (typeof verified === 'string') throw new InvalidVerifyToken(VERIFY_REFUSALS[verified])
    return toPublic(verified)
  })

  app.post('/auth/confirm-email', {
    schema: schemas.confirmEmail,
    config: limit(verify, windowSeconds)
  }, async function confirmEmail (request) {
    const moved = await tokens.confirmEmailChange(request.body.token, ctx.now())
    if (typeof moved === 'string') throw new InvalidEmailChangeToken(EMAIL_CHANGE_REFUSALS[moved])
    if ('taken' in moved) throw new EmailTaken(moved.taken)
    request.log.info({ userId: moved.id }, 'email changed through a mailed link: every session ended')
    return toPublic(moved)
  })
}
