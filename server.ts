import cluster from 'node:cluster'
import { once } from 'node:events'
import { Server } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import closeWithGrace from 'close-with-grace'
import { pino, type LoggerOptions } from 'pino'
import { buildApp, type App } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { connect } from './db/client.js'
import { createTables } from './db/resources.js'

const GRACE_MS = 10_000
// How long a shutdown waits for open connections to finish before closing those still idle.
const DRAIN_MS = 2_000

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
  // Request logs carry no headers today; this keeps tokens out if a serializer ever adds them.
  redact: ['req.headers.authorization', 'req.headers.cookie'],
  // A person reads a terminal, a collector reads a pipe: the output decides, never NODE_ENV.
  ...(process.stdout.isTTY ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {})
}
const log = pino(loggerOptions)

// A single process hears it from the auth plugin; workers also refuse each other's tokens.
function warnAboutWorkerSecrets () {
  if (config.SECRET_KEY) return
  log.warn('SECRET_KEY is not set: each worker signs with its own random key, so workers refuse each other\'s tokens and every token dies at restart')
}

/**
 * Shutdown in order: stop accepting connections, let every request already sent be answered with
 * `Connection: close`, close the connections still idle, then the app and the database last.
 * Node's own `server.close()` closes idle-looking keep-alive connections at once, and so cuts off
 * requests that clients had sent but a busy event loop had not read yet (test/reliability/shutdown
 * with 32 clients: 3 cut off on PostgreSQL, 32 on PGlite). So the listener is closed alone first,
 * and Fastify's close (which calls `server.close()`) comes after the drain.
 */
async function drainAndClose (app: App) {
  app.server.prependListener('request', (_request, response) => { response.shouldKeepAlive = false })
  const drained = once(app.server, 'close')
  Server.prototype.close.call(app.server)
  await Promise.race([drained, sleep(DRAIN_MS, undefined, { ref: false })])
  await app.close()
}

/** One server process: the app on HOST:PORT, closed gracefully on SIGTERM and SIGINT. */
async function serve () {
  const app = await buildApp(config, {
    logger: loggerOptions,
    // Bound what a slow or silent client can hold: the headers (10 s), the whole request, a
    // silent new connection. Keep-alive outlives the 60 s idle timeout of common load balancers,
    // so they, not we, close an idle connection and never send on one we are closing.
    requestTimeout: 30_000,
    connectionTimeout: 60_000,
    keepAliveTimeout: 72_000,
    // Node enforces the header and request timeouts only when it checks, every 30 s by default:
    // a silent client would hold its connection up to 40 s instead of 10.
    http: { headersTimeout: 10_000, connectionsCheckingInterval: 2_000 },
    // During a shutdown the database stays open until the last request is answered, so those
    // requests are served, not refused with Fastify's 503 (which is not a problem document).
    return503OnClosing: false
  })
  closeWithGrace({ delay: GRACE_MS, logger: app.log }, async ({ err, signal }) => {
    if (err) app.log.error({ err }, 'closing after an unexpected error')
    else app.log.info({ signal }, 'closing')
    await drainAndClose(app)
  })
  await app.listen({ host: config.HOST, port: config.PORT })
}

/**
 * WORKERS > 1: the primary applies migrations once, then forks workers that share the port
 * (node:cluster) and never touch the schema, and replaces any worker that dies.
 */
async function supervise () {
  if (!/^postgres(ql)?:/.test(config.DATABASE_URL)) {
    log.fatal('WORKERS > 1 needs PostgreSQL: PGlite is a single-process database. Set DATABASE_URL to a postgres:// URL or WORKERS=1')
    process.exit(1)
  }
  if (config.CREATE_TABLES_ON_STARTUP) {
    const client = await connect(config.DATABASE_URL)
    try { await createTables(client, config.RESOURCES) } finally { await client.close() }
  }
  let closing = false
  const fork = () => cluster.fork({ CREATE_TABLES_ON_STARTUP: 'false' })
  cluster.on('exit', (worker, code, signal) => {
    if (closing) return
    log.error({ pid: worker.process.pid, code, signal }, 'worker died; starting another')
    fork()
  })
  for (let i = 0; i < config.WORKERS; i++) fork()
  closeWithGrace({ delay: GRACE_MS, logger: log }, async ({ signal }) => {
    closing = true
    log.info({ signal }, 'stopping workers')
    await Promise.all(Object.values(cluster.workers ?? {}).map((worker) => new Promise<void>((resolve) => {
      worker?.once('exit', () => resolve())
      worker?.process.kill('SIGTERM')
    })))
  })
}

try {
  if (config.WORKERS > 1 && cluster.isPrimary) {
    warnAboutWorkerSecrets()
    await supervise()
  } else {
    await serve()
  }
} catch (err) {
  log.fatal({ err }, 'could not start')
  process.exit(1)
}
