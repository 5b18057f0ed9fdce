import { randomUUID } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Server } from 'node:http'
import Fastify, { type FastifyHttpOptions } from 'fastify'
import { optionsOf, resolveConfig, type Config } from './config.js'
import { readSettingFiles, type SettingFiles } from './settings/files.js'
import { guardsOf, loadResourceHooks } from './settings/resources-file.js'
import type { DatabaseClient } from './db/client.js'
import { smtpSender } from './mail/senders.js'
import accounts from './routes/accounts/index.js'
import catalog from './routes/catalog/index.js'
import resources from './routes/resources/index.js'
import auth from './plugins/auth/index.js'
import changes from './plugins/changes.js'
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
import { requestLogSerializer } from './http/log-redaction.js'
import wellKnown from './plugins/well-known.js'
import type { App } from './http/types.js'
import { validatorCompiler } from './http/validation.js'

export type { App }

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
  /** The files the settings name, already read (readSettingFiles); read here when absent. */
  files?: SettingFiles
  /** The clock of every token, mailed link, rate window and purge; tests move it. */
  clock?: () => Date
}

const REQUEST_ID = /^[\w.:-]{1,128}$/

/** Logger options with plinth's `req` serializer (a stream's ticket redacted) unless they bring their own. */
function withRequestSerializer (logger: BuildOptions['logger']): Pick<BuildOptions, 'logger'> {
  if (logger === undefined || logger === false) return {}
  const given = logger === true ? {} : logger
  return { logger: { ...given, serializers: { req: requestLogSerializer, ...given.serializers } } }
}

/** Behind a proxy, its request id (nginx's `$request_id` in X-Request-Id), so one id follows a request across the hop in both logs. */
function proxyRequestId (request: { headers: Record<string, string | string[] | undefined> }): string {
  const id = request.headers['x-request-id']
  return typeof id === 'string' && REQUEST_ID.test(id) ? id : randomUUID()
}

/** The whole service as one Fastify instance; the registration order below is its architecture. */
export async function buildApp (settings: Partial<Config> = {}, { database, files: read, clock, ...options }: BuildOptions = {}): Promise<App> {
  const config = resolveConfig(settings)
  const files = read ?? readSettingFiles(config)
  const plugin = optionsOf(config, files)
  const app = Fastify({
    bodyLimit: config.BODY_LIMIT,
    // Which X-Forwarded-For hops to believe for request.ip, which every per-address rule reads.
    trustProxy: typeof config.TRUST_PROXY === 'number' ? trustHops(config.TRUST_PROXY) : config.TRUST_PROXY,
    genReqId: config.TRUST_PROXY === false || config.TRUST_PROXY === 0 ? () => randomUUID() : proxyRequestId,
    routerOptions: { ignoreTrailingSlash: true },
    // A new PGlite folder initialises its cluster on first open, which can take seconds.
    pluginTimeout: 60_000,
    // Errors before routing get the problem document and the security headers here, since no hook runs for them.
    frameworkErrors: (error, request, reply) => problemErrorHandler(error, request, reply.headers(apiSecurityHeaders)),
    clientErrorHandler,
    ...options,
    ...withRequestSerializer(options.logger)
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('plinthConfig', config)
  app.setValidatorCompiler(validatorCompiler)

  await app.register(errors)
  await app.register(cors, plugin.cors)
  await app.register(docs)
  await app.register(security)
  await app.register(db, { ...(database ? { client: database } : { url: config.DATABASE_URL }), ...plugin.db, clock })
  // Measured only when served: server.ts listens on METRICS_PORT.
  if (config.METRICS_PORT !== undefined) await app.register(metrics)
  await app.register(overload, plugin.overload)
  await app.register(auth, plugin.auth)
  await app.register(etags, plugin.etags)

  if (plugin.overload.behindProxy && config.PUBLIC_URL === undefined) app.log.warn(PROXY_WITHOUT_PUBLIC_URL)
  await app.register(wellKnown, { ...plugin.wellKnown, accountsPrefix: API_PREFIX })
  await app.register(health, { prefix: API_PREFIX })
  if (config.CATALOG) await app.register(catalog, { prefix: API_PREFIX, ...plugin.catalog, ...writeScope(app, config.CATALOG_WRITE_SCOPE) })
  const smtp = config.SMTP_URL === undefined ? undefined : smtpSender(config.SMTP_URL, plugin.accounts.mail!.timeoutMs!)
  if (smtp) app.addHook('onClose', async () => smtp.close())
  await app.register(accounts, { prefix: API_PREFIX, ...plugin.accounts, sendMail: smtp?.sendMail })
  for (const name of new Set(config.RESOURCES)) {
    await app.register(resources, { prefix: API_PREFIX, name, ...plugin.resources, ...writeScope(app, config.RECORDS_WRITE_SCOPE) })
  }
  // The change feed of RESOURCES_FILE's resources, with the retention the settings give; a host's resources register it with defaults.
  if (files.resources.length > 0) await app.register(changes, plugin.changes)
  for (const definition of files.resources) {
    await app.register(resources, { prefix: API_PREFIX, ...definition.options, guards: guardsOf(app, definition), ...await loadResourceHooks(definition), ...plugin.resources })
  }

  return app
}
