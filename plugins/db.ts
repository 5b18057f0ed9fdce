import fp from 'fastify-plugin'
import { systemClock, type Clock } from '../db/clock.js'
import { connect, postgresListen, type DatabaseClient } from '../db/client.js'
import { redactUrl } from '../db/redact-url.js'
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
  }
}

export type DbOptions = ({
  url: string
} | {
  /** An already open client, which stays the caller's to close. */
  client: DatabaseClient
}) & {
  migrate?: boolean
  /** Where plinth's time comes from; the system's by default. */
  clock?: Clock
  /** PostgreSQL only: where LISTEN connects, when the database URL is a pooler that cannot hold one (PgBouncer's transaction pooling). */
  listenUrl?: string
}

/** The given client, listening through `listenUrl` when one is given. */
function listeningThrough (client: DatabaseClient, listenUrl: string | undefined): DatabaseClient {
  if (listenUrl === undefined) return client
  if (client.driver !== 'postgres') throw new InvalidDbOptions('listenUrl is for PostgreSQL: PGlite listens in its own process')
  return { ...client, listen: postgresListen(listenUrl) }
}

/** Decorates `plinthDb`, a name of its own so a host's `db` stays the host's; closes only a client it opened. */
async function dbPlugin (app: App, opts: DbOptions) {
  if (opts.clock !== undefined && typeof opts.clock !== 'function') throw new InvalidDbOptions(`clock must be a function returning a Date (got ${shown(opts.clock)})`)
  if (opts.listenUrl !== undefined && !/^postgres(ql)?:\/\//.test(opts.listenUrl)) {
    throw new InvalidDbOptions(`listenUrl must be a postgres:// or postgresql:// URL (got ${shown(redactUrl(opts.listenUrl))})`)
  }
  const client = 'client' in opts ? listeningThrough(opts.client, opts.listenUrl) : await connect(opts.url, { listenUrl: opts.listenUrl })
  if (!('client' in opts)) app.addHook('onClose', () => client.close())
  if (opts.migrate !== false) await client.migrate()
  app.decorate('plinthDb', client)
  app.decorate('plinthClock', opts.clock ?? systemClock)
  app.log.debug({ driver: client.driver }, 'database ready')
}

export default fp(dbPlugin, { name: 'plinth-db', fastify: '5.x' })
