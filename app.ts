import { randomUUID } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Server } from 'node:http'
import Fastify, { type FastifyHttpOptions } from 'fastify'
import { mailTemplatesOf, privateKeyOf, resolveConfig, resourcesFile, type Config } from './config.js'
import type { DatabaseClient } from './db/client.js'
import { smtpSender } from './mail/senders.js'
import accounts from './routes/accounts/index.js'
import catalog from './routes/catalog/index.js'
import { guardsOf, type FileResourceDefinition } from './routes/resources/file.js'
import resources from './routes/resources/index.js'
import auth from './plugins/auth/index.js'
import cors from './plugins/cors.js'
import db from './plugins/db.js'
import docs from './plugins/docs.js'
import etags from './plugins/etags.js'
import errors from './plugins/errors.js'
import { clientErrorHandler, problemErrorHandler } from './http/problems.js'
import health from './plugins/health.js'
import metrics from './plugins/metrics.js'
import overload from './plugins/overload.js'
import security from './plugins/security.js'
import { apiSecurityHeaders } from './http/security-headers.js'
import wellKnown from './plugins/well-known.js'
import type { App } from './http/types.js'
import { validatorCompiler } from './http/validation.js'

export type { App }

/** The scopes the server checks: `me`, the catalog's and the records' write scopes and those of RESOURCES_FILE's guards. */
function advertisedScopes (config: Config, files: FileResourceDefinition[]): string[] {
  const guards = files.flatMap(({ guards }) => [guards.read, guards.write])
  const named = guards.flatMap((guard) => typeof guard === 'object' && guard !== null ? guard.scopes : [])
  const settings = [config.CATALOG_WRITE_SCOPE, config.RECORDS_WRITE_SCOPE].filter((scope) => scope !== undefined)
  return [...new Set(['me', ...settings, ...named])]
}

/** The guards of a mount whose writes need `scope` when it is set, such as CATALOG_WRITE_SCOPE. */
const writeScope = (app: App, scope: string | undefined) => scope ? { guards: { write: app.plinthGuards.requireScopes(scope) } } : {}

declare module 'fastify' {
  interface FastifyInstance {
    plinthConfig: Config
  }
}

export const API_PREFIX = '/api/v1'

const PROXY_WITHOUT_PUBLIC_URL = 'TRUST_PROXY is set without PUBLIC_URL: /.well-known/oauth-authorization-server builds its URLs ' +
  'from the forwarded headers, which clients can send too, and is served uncached; set PUBLIC_URL to the origin clients reach'

/** A hop count as Fastify's runtime reads one (its types take no number): the nearest `hops` proxies. */
const trustHops = (hops: number) => (_address: string, hop: number) => hop < hops

export type BuildOptions = FastifyHttpOptions<Server> & {
  /** Use this open database client instead of connecting to DATABASE_URL; the caller closes it. */
  database?: DatabaseClient
}

/** The whole service as one Fastify instance; the registration order below is its architecture. */
export async function buildApp (settings: Partial<Config> = {}, { database, ...options }: BuildOptions = {}): Promise<App> {
  const config = resolveConfig(settings)
  const app = Fastify({
    bodyLimit: config.BODY_LIMIT,
    // Which X-Forwarded-For hops to believe for request.ip, which every per-address rule reads.
    trustProxy: typeof config.TRUST_PROXY === 'number' ? trustHops(config.TRUST_PROXY) : config.TRUST_PROXY,
    genReqId: () => randomUUID(),
    routerOptions: { ignoreTrailingSlash: true },
    // A new PGlite folder initialises its cluster on first open, which can take seconds.
    pluginTimeout: 60_000,
    // Errors before routing get the problem document and the security headers here, since no hook runs for them.
    frameworkErrors: (error, request, reply) => problemErrorHandler(error, request, reply.headers(apiSecurityHeaders)),
    clientErrorHandler,
    ...options
  }).withTypeProvider<TypeBoxTypeProvider>()

  const fileResources = resourcesFile(config)
  app.decorate('plinthConfig', config)
  app.setValidatorCompiler(validatorCompiler)

  await app.register(errors)
  await app.register(cors, { origins: config.BACKEND_CORS_ORIGINS })
  await app.register(docs)
  await app.register(security)
  const migrate = config.CREATE_TABLES_ON_STARTUP
  await app.register(db, database ? { client: database, migrate } : { url: config.DATABASE_URL, migrate })
  // Measured only when served: server.ts listens on METRICS_PORT.
  if (config.METRICS_PORT !== undefined) await app.register(metrics)
  await app.register(overload, {
    maxInFlight: config.OVERLOAD_MAX_IN_FLIGHT,
    maxEventLoopDelayMs: config.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS,
    maxDbWaiting: config.OVERLOAD_MAX_DB_WAITING,
    maxHashWaiting: config.OVERLOAD_MAX_HASH_WAITING,
    retryAfterSeconds: config.OVERLOAD_RETRY_AFTER_SECONDS,
    bodyTimeoutMs: config.BODY_TIMEOUT_SECONDS * 1000,
    maxConnectionsPerAddress: config.MAX_CONNECTIONS_PER_ADDRESS,
    behindProxy: config.TRUST_PROXY !== false && config.TRUST_PROXY !== 0
  })

  const privateKey = privateKeyOf(config)
  await app.register(auth, {
    algorithm: config.JWT_ALGORITHM,
    secret: config.SECRET_KEY,
    privateKey,
    previousKeys: config.JWT_PREVIOUS_KEYS,
    issuer: config.JWT_ISSUER,
    audience: config.JWT_AUDIENCE,
    sessionCheck: config.SESSION_CHECK,
    accessTokenMinutes: config.ACCESS_TOKEN_EXPIRE_MINUTES,
    refreshTokenDays: config.REFRESH_TOKEN_EXPIRE_DAYS
  })
  // Keyed by what every process of the deployment already shares, so their ETags agree.
  await app.register(etags, { secret: config.SECRET_KEY ?? privateKey })

  // Behind a proxy the metadata's origin comes from X-Forwarded-Host, which a client can send as well.
  if (config.TRUST_PROXY !== false && config.TRUST_PROXY !== 0 && config.PUBLIC_URL === undefined) app.log.warn(PROXY_WITHOUT_PUBLIC_URL)
  await app.register(wellKnown, { accountsPrefix: API_PREFIX, publicUrl: config.PUBLIC_URL, scopes: advertisedScopes(config, fileResources) })
  await app.register(health, { prefix: API_PREFIX })
  if (config.CATALOG) {
    await app.register(catalog, {
      prefix: API_PREFIX,
      defaultLimit: config.DEFAULT_PAGE_LIMIT,
      maxLimit: config.MAX_PAGE_LIMIT,
      requireIfMatch: config.REQUIRE_IF_MATCH,
      idempotencyTtlHours: config.IDEMPOTENCY_TTL_HOURS,
      ...writeScope(app, config.CATALOG_WRITE_SCOPE)
    })
  }
  const smtp = config.SMTP_URL === undefined ? undefined : smtpSender(config.SMTP_URL, config.MAIL_TIMEOUT_SECONDS * 1000)
  if (smtp) app.addHook('onClose', async () => smtp.close())
  await app.register(accounts, {
    prefix: API_PREFIX,
    passwordMinLength: config.PASSWORD_MIN_LENGTH,
    loginMaxFailures: config.LOGIN_MAX_FAILURES,
    maxHashWaitingPerClient: config.OVERLOAD_MAX_HASH_WAITING_PER_CLIENT,
    rateLimits: {
      windowSeconds: config.RATE_LIMIT_WINDOW_SECONDS,
      register: config.RATE_LIMIT_REGISTER,
      token: config.RATE_LIMIT_TOKEN,
      refresh: config.RATE_LIMIT_REFRESH,
      revoke: config.RATE_LIMIT_REVOKE,
      passwordReset: config.RATE_LIMIT_PASSWORD_RESET,
      verify: config.RATE_LIMIT_VERIFY,
      passwordCheck: config.RATE_LIMIT_PASSWORD_CHECK,
      mailsPerEmail: config.RATE_LIMIT_MAILS_PER_EMAIL,
      mailWindowSeconds: config.RATE_LIMIT_MAILS_WINDOW_SECONDS
    },
    requireVerified: config.REQUIRE_VERIFIED_EMAIL,
    requireIfMatch: config.REQUIRE_IF_MATCH,
    resetTokenMinutes: config.RESET_TOKEN_EXPIRE_MINUTES,
    verifyTokenMinutes: config.VERIFY_TOKEN_EXPIRE_MINUTES,
    mail: {
      from: config.MAIL_FROM,
      appUrl: config.APP_URL ?? config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`,
      timeoutMs: config.MAIL_TIMEOUT_SECONDS * 1000,
      templates: mailTemplatesOf(config)
    },
    sendMail: smtp?.sendMail,
    reuseDetection: config.REFRESH_REUSE_DETECTION,
    reuseIntervalSeconds: config.REFRESH_REUSE_INTERVAL_SECONDS,
    purgeIntervalMs: config.PURGE_INTERVAL_SECONDS * 1000,
    defaultLimit: config.DEFAULT_PAGE_LIMIT,
    maxLimit: config.MAX_PAGE_LIMIT,
    firstSuperuser: config.FIRST_SUPERUSER_EMAIL && config.FIRST_SUPERUSER_PASSWORD
      ? { email: config.FIRST_SUPERUSER_EMAIL, password: config.FIRST_SUPERUSER_PASSWORD }
      : undefined
  })
  for (const name of new Set(config.RESOURCES)) {
    await app.register(resources, {
      prefix: API_PREFIX, name, createTable: config.CREATE_TABLES_ON_STARTUP, requireIfMatch: config.REQUIRE_IF_MATCH, idempotencyTtlHours: config.IDEMPOTENCY_TTL_HOURS, ...writeScope(app, config.RECORDS_WRITE_SCOPE)
    })
  }
  for (const definition of fileResources) {
    await app.register(resources, {
      prefix: API_PREFIX, ...definition.options, guards: guardsOf(app, definition), createTable: config.CREATE_TABLES_ON_STARTUP, requireIfMatch: config.REQUIRE_IF_MATCH, idempotencyTtlHours: config.IDEMPOTENCY_TTL_HOURS
    })
  }

  return app
}
