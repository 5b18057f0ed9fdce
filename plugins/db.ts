import { Type } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { systemClock, type Clock } from '../db/clock.js'
import { connect, isPostgresUrl, postgresListen, type DatabaseClient, type PoolMode } from '../db/client.js'
import { redactUrl } from '../db/redact-url.js'
import { connectReplicas, type ReplicaSet } from '../db/replicas.js'
import { shown } from '../http/options.js'
import type { App } from '../http/types.js'
import { defineProblems } from '../http/problem-error.js'

export const dbPluginProblems = defineProblems({ InvalidDbOptions: { code: 'DB_INVALID_OPTIONS', message: 'db plugin: %s' } })
export const { InvalidDbOptions } = dbPluginProblems

declare module 'fastify' {
  interface FastifyInstance {
    /** plinth's database: the Drizzle instance (`.db`) every profile uses, its driver, ping and migrations. */
    plinthDb: DatabaseClient
    /** The clock every token, mailed link, rate window, session and purge of plinth reads. */
    plinthClock: Clock
    /** The replicas that serve reads of lists and rows, or null: everything reads the primary. */
    plinthReplicas: ReplicaSet | null
  }
}

/** `statementTimeoutMs`: long enough for any page a request may ask for, short enough that a runaway statement frees its connection. */
export const StatementTimeoutMsSchema = Type.Integer({ minimum: 100, maximum: 3_600_000, default: 5000 })

export type DbOptions = ({
  url: string
  /** PostgreSQL only, `session` by default: `transaction` when `url` is a pooler in transaction mode (PgBouncer's). */
  poolMode?: PoolMode
  /**
   * PostgreSQL only: the server cancels a statement that runs longer, and its request answers 503; 5000 by default, 100 to
   * 3,600,000. Migrations, boot DDL and the feed's purge are not bounded by it. A given `client` keeps the bound it was opened with.
   */
  statementTimeoutMs?: number
} | {
  /** An already open client, which stays the caller's to close. */
  client: DatabaseClient
}) & {
  migrate?: boolean
  /** Where plinth's time comes from; the system's by default. */
  clock?: Clock
  /** PostgreSQL only: where LISTEN connects, when the database URL is a pooler that cannot hold one (PgBouncer's transaction pooling). */
  listenUrl?: string
  /** PostgreSQL only: streaming replicas of the database, for reads of lists and rows. */
  replicaUrls?: string[]
  /** A replica further behind the primary than this serves no reads; 10 by default. */
  replicaMaxLagSeconds?: number
}

const REPLICA_CHECK_MS = 1000

/** The given client, listening through `listenUrl` when one is given. */
function listeningThrough (client: DatabaseClient, listenUrl: string | undefined): DatabaseClient {
  if (listenUrl === undefined) return client
  if (client.driver !== 'postgres') throw new InvalidDbOptions('listenUrl is for PostgreSQL: PGlite listens in its own process')
  return { ...client, listen: postgresListen(listenUrl) }
}

async function replicasOf (app: App, client: DatabaseClient, opts: DbOptions): Promise<ReplicaSet | null> {
  const urls = opts.replicaUrls ?? []
  const maxLagSeconds = opts.replicaMaxLagSeconds ?? 10
  if (!Array.isArray(urls) || urls.some((url) => typeof url !== 'string' || !isPostgresUrl(url))) {
    throw new InvalidDbOptions(`replicaUrls must be postgres:// or postgresql:// URLs (got ${shown(Array.isArray(urls) ? urls.map((url) => typeof url === 'string' ? redactUrl(url) : url) : urls)})`)
  }
  if (!(Number.isFinite(maxLagSeconds) && maxLagSeconds > 0)) throw new InvalidDbOptions(`replicaMaxLagSeconds must be a positive number (got ${shown(maxLagSeconds)})`)
  if (urls.length === 0) return null
  if (client.driver !== 'postgres') throw new InvalidDbOptions('replicaUrls are for PostgreSQL: PGlite has no replicas')
  const replicas = await connectReplicas(client.db, {
    urls,
    poolMode: client.poolMode,
    statementTimeoutMs: client.statementTimeoutMs,
    maxLagSeconds,
    checkIntervalMs: REPLICA_CHECK_MS,
    onChange: (report) => app.log[report.status === 'ok' ? 'info' : 'warn']({ replica: report }, `replica ${report.name} is ${report.status}`)
  })
  app.addHook('onClose', () => replicas.close())
  return replicas
}

/** The bound of the clients the plugin opens: the option, or its default; anything else stops the boot. */
function statementTimeoutOf (given: unknown): number {
  const { minimum, maximum, default: fallback } = StatementTimeoutMsSchema as { minimum: number, maximum: number, default: number }
  if (given === undefined) return fallback
  if (typeof given === 'number' && Number.isInteger(given) && given >= minimum && given <= maximum) return given
  throw new InvalidDbOptions(`statementTimeoutMs must be an integer from ${minimum} to ${maximum} (got ${shown(given)})`)
}

/** Decorates `plinthDb`, a name of its own so a host's `db` stays the host's; closes only a client it opened. */
async function dbPlugin (app: App, opts: DbOptions) {
  if (opts.clock !== undefined && typeof opts.clock !== 'function') throw new InvalidDbOptions(`clock must be a function returning a Date (got ${shown(opts.clock)})`)
  if (opts.listenUrl !== undefined && !isPostgresUrl(opts.listenUrl)) {
    throw new InvalidDbOptions(`listenUrl must be a postgres:// or postgresql:// URL (got ${shown(redactUrl(opts.listenUrl))})`)
  }
  if ('poolMode' in opts && opts.poolMode !== undefined && opts.poolMode !== 'session' && opts.poolMode !== 'transaction') {
    throw new InvalidDbOptions(`poolMode must be 'session' or 'transaction' (got ${shown(opts.poolMode)})`)
  }
  const statementTimeoutMs = 'url' in opts ? statementTimeoutOf(opts.statementTimeoutMs) : undefined
  const client = 'client' in opts
    ? listeningThrough(opts.client, opts.listenUrl)
    : await connect(opts.url, { listenUrl: opts.listenUrl, poolMode: opts.poolMode, statementTimeoutMs })
  if (client.poolMode === 'transaction' && opts.listenUrl === undefined) {
    app.log.warn('a transaction pooler cannot hold a LISTEN: the change feed polls every second; set DATABASE_LISTEN_URL (listenUrl) to a direct connection')
  }
  if (!('client' in opts)) app.addHook('onClose', () => client.close())
  if (opts.migrate !== false) await client.migrate()
  app.decorate('plinthDb', client)
  app.decorate('plinthReplicas', await replicasOf(app, client, opts))
  app.decorate('plinthClock', opts.clock ?? systemClock)
  app.log.debug({ driver: client.driver }, 'database ready')
}

export default fp(dbPlugin, { name: 'plinth-db', fastify: '5.x' })
