import { Type } from '@sinclair/typebox'
import type { TokenRefusal } from '../../db/account-tokens.js'
import { hashPassword } from '../../plugins/auth/passwords.js'
import type { App } from '../../http/types.js'
import { toPublic, type AccountsContext } from './context.js'
import { hashShare } from './password-check.js'
import { AlreadyVerified, EmailTaken, InvalidEmailChangeToken, InvalidResetToken, InvalidVerifyToken, accountProblems, tooManyMails } from './errors.js'
import { limit } from '../../http/rate-limits.js'
import { ref } from '../../schemas/common.js'
import { problemResponses } from '../../schemas/error.js'
import { ForgotPasswordSchema, NoticeSchema, ResetPasswordSchema, VerifySchema } from '../../schemas/recovery.js'
import { UserSchema } from '../../schemas/user.js'
import { authTags, security } from './schemas.js'

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
  const { tokens, mail } = ctx
  const { limited } = ctx.schemas
  const { windowSeconds, passwordReset, verify } = ctx.rateLimits

  app.post('/auth/forgot-password', {
    schema: {
      operationId: 'forgotPassword',
      summary: 'Mail a link to reset the password of the account with this email, if there is one',
      description: 'Always 202 with the same body, answered before the email is looked up, so it takes the same time whether or not an active account has it. ' +
        'The link works once, for a limited time, and only while the password and the email stay as they are.',
      tags: authTags,
      body: ForgotPasswordSchema,
      response: { 202: ref(NoticeSchema), ...problemResponses(422, ...limited('passwordReset', 'forgot-password')) }
    },
    config: limit(passwordReset, windowSeconds)
  }, async function forgotPassword (request, reply) {
    mail.reset(request, request.body.email)
    return reply.code(202).send({ detail: FORGOT_NOTICE })
  })

  app.post('/auth/reset-password', {
    schema: {
      operationId: 'resetPassword',
      summary: 'Set a new password with the token of a mailed reset link; every session ends',
      tags: authTags,
      body: ResetPasswordSchema(ctx.passwordMinLength),
      response: {
        204: Type.Null({ description: 'The password is changed, the email counts as verified, and every session has ended' }),
        ...problemResponses([...InvalidResetToken.example('it is unknown or was already used'),
          'The token is unknown, already used, expired, or its password or email changed since (AUTH_INVALID_RESET_TOKEN); or the body does not parse'], 422,
        ...limited('passwordReset', 'reset-password'))
      }
    },
    config: limit(passwordReset, windowSeconds)
  }, async function resetPassword (request, reply) {
    const { token, new_password: password } = request.body
    const reset = await tokens.resetPassword(token, await hashPassword(password, { queue: ctx.passwordQueue, share: hashShare(ctx, request) }))
    if (typeof reset === 'string') throw new InvalidResetToken(RESET_REFUSALS[reset])
    request.log.info({ userId: reset.id }, 'password reset through a mailed link: every session ended')
    return reply.code(204).send(null)
  })

  app.post('/auth/verify/request', {
    onRequest: app.plinthGuards.authenticate,
    schema: {
      operationId: 'requestVerification',
      summary: 'Mail a link to verify the current user\'s email',
      tags: authTags,
      security,
      response: {
        202: ref(NoticeSchema),
        ...problemResponses(401, 403, [...AlreadyVerified.example('ada@example.com'), 'The email is already verified'],
          [...accountProblems.TooManyMails.example('ada@example.com', 1800),
            'Too many requests from this address (RATE_LIMITED), or mails to this email (MAIL_RATE_LIMITED); retry after Retry-After seconds'])
      }
    },
    config: limit(verify, windowSeconds)
  }, async function requestVerification (request, reply) {
    const { account } = request
    if (account.is_verified) throw new AlreadyVerified(account.email)
    const wait = await mail.verify(request, account)
    if (wait > 0) throw tooManyMails(account.email, wait)
    return reply.code(202).send({ detail: `A link to verify ${account.email} has been sent to it` })
  })

  app.post('/auth/verify', {
    schema: {
      operationId: 'verifyEmail',
      summary: 'Verify an email with the token of a mailed link',
      tags: authTags,
      body: VerifySchema,
      response: {
        200: ref(UserSchema),
        ...problemResponses([...InvalidVerifyToken.example('it has expired; ask for a new link'),
          'The token is unknown, already used, expired, or the email changed since (AUTH_INVALID_VERIFY_TOKEN); or the body does not parse'], 422,
        ...limited('verify', 'verify'))
      }
    },
    config: limit(verify, windowSeconds)
  }, async function verifyEmail (request) {
    const verified = await tokens.verify(request.body.token)
    if (typeof verified === 'string') throw new InvalidVerifyToken(VERIFY_REFUSALS[verified])
    return toPublic(verified)
  })

  app.post('/auth/confirm-email', {
    schema: {
      operationId: 'confirmEmail',
      summary: 'Change the email with the token of a link mailed to the new address; every session ends',
      description: 'The token comes from the link `PATCH /users/me` mails to the new address. It works once, for as long as a reset link, ' +
        'and only while the account\'s password and email stay as they were and it stays active.',
      tags: authTags,
      body: VerifySchema,
      response: {
        200: ref(UserSchema),
        ...problemResponses([...InvalidEmailChangeToken.example('it has expired; ask again'),
          'The token is unknown, already used, expired, or the password or email changed since (AUTH_INVALID_EMAIL_CHANGE_TOKEN); or the body does not parse'],
        [...EmailTaken.example('ada@example.com'), 'Another account has registered the new email since the link was sent'],
        422, ...limited('verify', 'confirm-email'))
      }
    },
    config: limit(verify, windowSeconds)
  }, async function confirmEmail (request) {
    const moved = await tokens.confirmEmailChange(request.body.token)
    if (typeof moved === 'string') throw new InvalidEmailChangeToken(EMAIL_CHANGE_REFUSALS[moved])
    if ('taken' in moved) throw new EmailTaken(moved.taken)
    request.log.info({ userId: moved.id }, 'email changed through a mailed link: every session ended')
    return toPublic(moved)
  })
}
