import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import fp from 'fastify-plugin'
import { createSessionRepository } from '../../db/sessions.js'
import { createUserRepository } from '../../db/users.js'
import { hashPassword } from '../../plugins/auth/passwords.js'
import { documentRoutes } from '../../plugins/docs.js'
import { problemErrorHandler } from '../../plugins/errors.js'
import { validatorCompiler } from '../../plugins/validation.js'
import { addSchemas } from '../../schemas/common.js'
import { ProblemSchema, ValidationProblemSchema } from '../../schemas/error.js'
import { ScopesSchema, UserPageSchema, UserSchema } from '../../schemas/user.js'
import { TokenPairSchema } from '../../schemas/token.js'
import { authRoutes } from './auth-routes.js'
import { accountsSchemas } from './schemas.js'
import type { AccountsContext } from './context.js'
import { usersRoutes } from './users-routes.js'

const Count = (min: number, fallback: number) => Type.Integer({ minimum: min, default: fallback })

export const AccountsOptionsSchema = Type.Object({
  passwordMinLength: Count(1, 8),
  /** Failed logins per email and address per window before 429; 0 disables the limit. */
  loginMaxFailures: Count(0, 10),
  loginWindowSeconds: Count(1, 900),
  defaultLimit: Count(1, 20),
  maxLimit: Count(1, 100),
  /** How often unusable refresh records and expired login counters are deleted. */
  purgeIntervalMs: Count(1000, 3_600_000),
  /** A revoked refresh token presented again revokes its whole family (RFC 9700 4.14.2). */
  reuseDetection: Type.Boolean({ default: false }),
  firstSuperuser: Type.Optional(Type.Object({ email: Type.String({ minLength: 3 }), password: Type.String({ minLength: 1 }) }))
})

export type AccountsOptions = Partial<Static<typeof AccountsOptionsSchema>>

function resolveOptions (opts: AccountsOptions) {
  const resolved = Value.Default(AccountsOptionsSchema, Value.Clone(opts)) as Static<typeof AccountsOptionsSchema>
  const error = Value.Errors(AccountsOptionsSchema, resolved).First()
  if (error) throw new Error(`accounts plugin: option ${error.path.slice(1)} ${error.message.toLowerCase()}`)
  return resolved
}

/**
 * Profile A: accounts and sessions. Registration, password login, single-use rotating refresh
 * tokens tracked in the database, logout, logout-all, the current user and superuser administration.
 * Needs plinth's `db` and `auth` plugins, registered before it.
 */
const accounts: FastifyPluginAsyncTypebox<AccountsOptions> = async (app, opts) => {
  const options = resolveOptions(opts)
  const ctx: AccountsContext = {
    ...options,
    users: createUserRepository(app.plinthDb.db),
    sessions: createSessionRepository(app.plinthDb.db, options),
    schemas: accountsSchemas(options)
  }

  app.setValidatorCompiler(validatorCompiler)
  app.setErrorHandler(problemErrorHandler)
  // A host that parses forms already keeps its parser; a second one would fail the boot.
  if (!app.hasContentTypeParser('application/x-www-form-urlencoded')) await app.register(formbody)
  addSchemas(app, [ProblemSchema, ValidationProblemSchema, UserSchema, UserPageSchema, ScopesSchema, TokenPairSchema])
  documentRoutes(app, {
    OAuth2PasswordBearer: {
      type: 'oauth2',
      flows: { password: { tokenUrl: `${app.prefix}/auth/login`, scopes: { me: 'Read your own profile and scopes' } } }
    }
  })

  if (options.firstSuperuser) {
    const { email, password } = options.firstSuperuser
    const { created, user } = await ctx.users.createIfAbsent({
      email, hashed_password: await hashPassword(password), is_superuser: true, scopes: 'me'
    })
    // An existing account is never changed here: not its password, and never promoted.
    if (created) app.log.info({ email: user.email }, 'first superuser created')
    else if (!user.is_superuser) app.log.warn({ email: user.email }, 'FIRST_SUPERUSER_EMAIL belongs to an account that is not a superuser; left unchanged')
  }

  const purge = () => ctx.sessions.purge()
    .then((purged) => app.log.debug(purged, 'purged unusable session records'))
    .catch((err: unknown) => app.log.warn({ err }, 'purging session records failed'))
  const timer = setInterval(purge, options.purgeIntervalMs).unref()
  app.addHook('onClose', async () => clearInterval(timer))

  authRoutes(app, ctx)
  usersRoutes(app, ctx)
}

export default fp(accounts, {
  name: 'plinth-accounts',
  fastify: '5.x',
  dependencies: ['plinth-db', 'plinth-auth'],
  decorators: { fastify: ['authenticate', 'requireSuperuser', 'requireScopes', 'plinthTokens', 'plinthDb'] },
  encapsulate: true
})
