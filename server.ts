import cluster from 'node:cluster'
import { once } from 'node:events'
import { Server } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import closeWithGrace from 'close-with-grace'
import type { FastifyBaseLogger } from 'fastify'
import { pino, type LoggerOptions } from 'pino'
import { AggregatorRegistry, type Registry } from 'prom-client'
import { buildApp, type App } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { fieldTablesOf, readSettingFiles, type SettingFiles } from './settings/files.js'
import { checkSigningKeys } from './settings/signing-keys.js'
import { connect, isPostgresUrl } from './db/client.js'
import { isDatabaseUnavailable, sqlState } from './db/errors.js'
import { redactUrl, redactUrlsIn } from './db/redact-url.js'
import { createTables } from './db/resources.js'
import { withoutValues } from './http/problems.js'
import { metricsServer } from './plugins/metrics.js'
import { startTracing } from './telemetry/tracing.js'

const GRACE_MS = 10_000
const DRAIN_MS = 2_000
const HEADERS_TIMEOUT_MS = 10_000
// A worker's exit code for a failure no restart can mend (sysexits' EX_CONFIG): the primary stops instead of forking again.
const EXIT_CONFIG = 78

class StartError extends Error {}

function readConfig (): Config {
  try {
    return loadConfig()
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    console.error(`plinth: invalid configuration: ${err.message}`)
    process.exit(1)
  }
}

const config = readConfig()
const loggerOptions: LoggerOptions = {
  level: config.LOG_LEVEL,
  redact: ['req.headers.authorization', 'req.headers.cookie'],
  // Errors are logged without their statement's bound values or any URL's password (Node's invalid-URL error keeps it in `input`).
  serializers: { err: (error: Error) => redactUrlsIn(pino.stdSerializers.err(withoutValues(error) as Error)) },
  // A person reads a terminal, a collector reads a pipe: the output decides, never NODE_ENV.
  ...(process.stdout.isTTY ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {})
}
const log = pino(loggerOptions)

function warnAboutWorkerSecrets () {
  if (config.SECRET_KEY || config.JWT_ALGORITHM !== 'HS256') return
  log.warn('SECRET_KEY is not set: each worker signs with its own random key, so workers refuse each other\'s tokens and every token dies at restart')
}

// Node's server.close() drops idle-looking keep-alive connections, cutting off requests sent but not yet
// read: so the listener closes alone, requests drain with `Connection: close`, and the app closes last.
async function drainAndClose (app: App) {
  app.server.prependListener('request', (_request, response) => { response.shouldKeepAlive = false })
  const drained = once(app.server, 'close')
  Server.prototype.close.call(app.server)
  await Promise.race([drained, sleep(DRAIN_MS, undefined, { ref: false })])
  await app.close()
}

async function listenOn (prefix: '' | 'METRICS_', listen: (address: { host: string, port: number }) => Promise<string>): Promise<string> {
  const host = config[`${prefix}HOST`]
  const port = config[`${prefix}PORT`] ?? 0
  try {
    return await listen({ host, port })
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE') throw new StartError(`${prefix}PORT: ${host}:${port} is in use by another process; stop it, or choose another ${prefix}PORT`)
    if (code === 'EADDRNOTAVAIL') throw new StartError(`${prefix}HOST: ${host} is not an address of this machine`)
    throw err
  }
}

async function serveMetrics (logger: FastifyBaseLogger, read: () => Promise<string>, contentType: string): Promise<() => Promise<void>> {
  if (config.METRICS_PORT === undefined) return async () => {}
  const server = metricsServer(read, contentType, logger)
  const url = await listenOn('METRICS_', (address) => server.listen(address))
  logger.info({ url: `${url}/metrics` }, 'metrics listening')
  return () => server.close()
}

function answerPrimary (registry: Registry): AggregatorRegistry<Registry['contentType']> {
  AggregatorRegistry.setRegistries([registry])
  return new AggregatorRegistry()
}

async function serve (files: SettingFiles) {
  // Before buildApp: @fastify/otel traces the Fastify instances made after the SDK starts.
  const stopTracing = config.OTEL_TRACING ? await startTracing() : async () => {}
  const app = await buildApp(config, {
    files,
    logger: loggerOptions,
    // Bound what a slow client can hold; keep-alive outlives load balancers' 60 s idle timeout, so they close idle connections.
    // The body's own timeout (overload plugin) answers first; Node's request timeout backs it for the bodies it does not see.
    requestTimeout: HEADERS_TIMEOUT_MS + config.BODY_TIMEOUT_SECONDS * 1000,
    connectionTimeout: 60_000,
    keepAliveTimeout: 72_000,
    // Node checks the header and request timeouts only every 30 s by default: too coarse for a 10 s bound.
    http: { headersTimeout: HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 2_000 },
    // The database stays open until the last request is answered, so those are served, not refused with Fastify's bare 503.
    return503OnClosing: false
  })
  let closeMetrics = async () => {}
  closeWithGrace({ delay: GRACE_MS, logger: app.log }, async ({ err, signal }) => {
    if (err) app.log.error({ err }, 'closing after an unexpected error')
    else app.log.info({ signal }, 'closing')
    await closeMetrics()
    await drainAndClose(app)
    // Last, so the spans of the final requests are sent.
    await stopTracing()
  })
  await listenOn('', (address) => app.listen(address))
  const metrics = app.plinthMetrics
  if (!metrics) return
  if (cluster.isWorker) answerPrimary(metrics.registry)
  else closeMetrics = await serveMetrics(app.log, () => metrics.registry.metrics(), metrics.registry.contentType)
}

async function supervise (files: SettingFiles) {
  if (!isPostgresUrl(config.DATABASE_URL)) {
    log.fatal('WORKERS > 1 needs PostgreSQL: PGlite is a single-process database. Set DATABASE_URL to a postgres:// URL or WORKERS=1')
    process.exit(1)
  }
  if (config.CREATE_TABLES_ON_STARTUP) {
    const client = await connect(config.DATABASE_URL, { poolMode: config.DATABASE_POOL_MODE })
    try { await createTables(client, config.RESOURCES, fieldTablesOf(files)) } finally { await client.close() }
  }
  let closing = false
  const fork = () => cluster.fork({ CREATE_TABLES_ON_STARTUP: 'false' })
  cluster.on('exit', (worker, code, signal) => {
    if (closing) return
    if (code === EXIT_CONFIG) process.exit(1)
    log.error({ pid: worker.process.pid, code, signal }, 'worker died; starting another')
    fork()
  })
  for (let i = 0; i < config.WORKERS; i++) fork()
  const aggregator = new AggregatorRegistry()
  const closeMetrics = await serveMetrics(log, () => aggregator.clusterMetrics(), aggregator.contentType)
  closeWithGrace({ delay: GRACE_MS, logger: log }, async ({ signal }) => {
    closing = true
    log.info({ signal }, 'stopping workers')
    await closeMetrics()
    await Promise.all(Object.values(cluster.workers ?? {}).map((worker) => new Promise<void>((resolve) => {
      worker?.once('exit', () => resolve())
      worker?.process.kill('SIGTERM')
    })))
  })
}

function rootMessage (error: Error): string {
  return error.cause instanceof Error ? rootMessage(error.cause) : error.message
}

/** One line naming the setting that explains a failure at start; undefined for the unforeseen, logged with its stack. */
function explained (err: unknown): string | undefined {
  if (err instanceof ConfigError) return `invalid configuration: ${err.message}`
  if (err instanceof StartError) return err.message
  const code = (err as { code?: unknown }).code
  if (code === 'PLINTH_INVALID_DATABASE_URL' || code === 'PLINTH_PGLITE_IN_USE') return `DATABASE_URL: ${(err as Error).message}`
  const url = redactUrl(config.DATABASE_URL)
  if (isDatabaseUnavailable(err)) return `DATABASE_URL: cannot reach ${url}: ${rootMessage(err as Error)}`
  // Class 28, a refused login, and 3D000, a database that does not exist.
  if (/^(28|3D000)/.test(sqlState(err) ?? '')) return `DATABASE_URL: ${url} refused: ${rootMessage(err as Error)}`
  return undefined
}

try {
  const files = readSettingFiles(config)
  // Before the database opens: a key the auth plugin would refuse stops the start at once.
  checkSigningKeys(config, files.privateKey)
  if (config.WORKERS > 1 && cluster.isPrimary) {
    warnAboutWorkerSecrets()
    await supervise(files)
  } else {
    await serve(files)
  }
} catch (err) {
  const line = explained(err)
  if (line === undefined) log.fatal({ err }, 'could not start')
  else console.error(`plinth: ${line}`)
  process.exit(line !== undefined && cluster.isWorker ? EXIT_CONFIG : 1)
}
