import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { createAccountTokenRepository } from '../../db/account-tokens.js'
import { createRateCounter } from '../../db/rate-limits.js'
import { createSessionRepository } from '../../db/sessions.js'
import { createUserRepository } from '../../db/users.js'
import { createMailer } from '../../mail/mailer.js'
import { hashPassword } from '../../plugins/auth/passwords.js'
import { documentRoutes } from '../../plugins/docs.js'
import { problemErrorHandler } from '../../http/problems.js'
import { trailingSlashAliases } from '../../http/trailing-slash.js'
import { eventCounter } from '../../plugins/metrics.js'
import { validatorCompiler } from '../../http/validation.js'
import { addSchemas } from '../../schemas/common.js'
import { ProblemSchema, ValidationProblemSchema } from '../../schemas/error.js'
import { NoticeSchema } from '../../schemas/recovery.js'
import { SessionPageSchema, SessionSchema } from '../../schemas/session.js'
import { ScopesSchema, UserPageSchema, UserSchema } from '../../schemas/user.js'
import { OAuthErrorSchema, TokenPairSchema } from '../../schemas/token.js'
import { accountMail } from '../../mail/account-mail.js'
import { authRoutes } from './auth-routes.js'
import { formsForOAuthOnly } from './forms.js'
import { accountsSchemas } from './schemas.js'
import type { AccountsContext } from './context.js'
import { resolveAccountsOptions, type AccountsOptions } from './options.js'
import { registerRateLimits } from '../../http/rate-limits.js'
import { recoveryRoutes } from './recovery-routes.js'
import { sessionsRoutes } from './sessions-routes.js'
import { usersRoutes } from './users-routes.js'
import { idempotentCreates } from '../../http/idempotency.js'

export const NO_MAIL_WARNING = 'no mail server (SMTP_URL, or the sendMail option): account mails are written to the log instead of sent'

/** Accounts and sessions: registration, login, refresh, logout, sessions, recovery and verification by mail, administration. After `db` and `auth`. */
const accounts: FastifyPluginAsyncTypebox<AccountsOptions> = async (app, opts) => {
  const options = resolveAccountsOptions(opts)
  const { db } = app.plinthDb
  const count = eventCounter(app)
  const clock = opts.now ?? app.plinthClock
  const sessions = createSessionRepository(db, { ...options, clock, onEnded: (n) => count('session_ended', n), onReuse: () => count('refresh_reuse') })
  const tokens = createAccountTokenRepository(db, sessions, { clock })
  const counter = createRateCounter(db, { clock })
  const { mailsPerEmail, mailWindowSeconds } = options.rateLimits
  const mailer = createMailer({ ...options.mail, sendMail: options.sendMail, onDelivered: (sent) => count(sent ? 'mail_sent' : 'mail_failed') })
  if (!options.sendMail) app.log.warn(NO_MAIL_WARNING)
  const ctx: AccountsContext = {
    ...options,
    users: createUserRepository(db),
    sessions,
    tokens,
    mail: accountMail({ tokens, counter, mailer, mailsPerEmail, mailWindowSeconds, ...options, appUrl: options.mail.appUrl, clock }),
    schemas: accountsSchemas(options),
    idempotent: idempotentCreates(db, options.idempotencyTtlHours, clock),
    count,
    passwordQueue: app.hasDecorator('plinthOverload') ? app.plinthOverload.passwordQueue : undefined
  }

  app.setValidatorCompiler(validatorCompiler)
  app.setErrorHandler(problemErrorHandler)
  await formsForOAuthOnly(app)
  await registerRateLimits(app, counter)
  addSchemas(app, [ProblemSchema, ValidationProblemSchema, UserSchema, UserPageSchema, ScopesSchema, TokenPairSchema, OAuthErrorSchema, SessionSchema, SessionPageSchema, NoticeSchema])
  documentRoutes(app, {
    OAuth2PasswordBearer: {
      type: 'oauth2',
      flows: { password: { tokenUrl: `${app.prefix}/auth/login`, scopes: { me: 'Read your own profile and scopes' } } }
    }
  })
  trailingSlashAliases(app)

  if (options.firstSuperuser) {
    const email = options.firstSuperuser.email.toLowerCase()
    const outcome = await ctx.users.createFirstSuperuser({
      email, hashed_password: await hashPassword(options.firstSuperuser.password), is_verified: true, scopes: 'me'
    })
    if (outcome === 'created') app.log.info({ email }, 'first superuser created')
    else if (outcome === 'email_taken') app.log.warn({ email }, 'FIRST_SUPERUSER_EMAIL belongs to an account that is not a superuser; left unchanged')
    else app.log.debug('a superuser exists: FIRST_SUPERUSER_EMAIL and FIRST_SUPERUSER_PASSWORD create none')
  }

  const purge = () => Promise.all([sessions.purge(), counter.purge(), tokens.purge()])
    .then(([purged, rateCounters, mailedTokens]) => app.log.debug({ ...purged, rateCounters, mailedTokens }, 'purged unusable session records and rate counters'))
    .catch((err: unknown) => app.log.warn({ err }, 'purging session records failed'))
  const timer = setInterval(purge, options.purgeIntervalMs).unref()
  app.addHook('onClose', async () => {
    clearInterval(timer)
    await mailer.drain()
  })

  authRoutes(app, ctx)
  recoveryRoutes(app, ctx)
  usersRoutes(app, ctx)
  sessionsRoutes(app, ctx)
}

export default fp(accounts, {
  name: 'plinth-accounts',
  fastify: '5.x',
  dependencies: ['plinth-db', 'plinth-auth'],
  decorators: { fastify: ['plinthGuards', 'plinthTokens', 'plinthDb'] },
  encapsulate: true
})
