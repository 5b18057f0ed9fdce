import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { connect, type DatabaseClient } from '../db/client.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** plinth's database: the Drizzle instance (`.db`) every profile uses, its driver, ping and migrations. */
    plinthDb: DatabaseClient
  }
}

export type DbOptions = ({
  /** A DATABASE_URL: postgres://, postgresql://, pglite://PATH or memory:// */
  url: string
} | {
  /** An already open client, which stays the caller's to close. */
  client: DatabaseClient
}) & {
  /** Apply the committed migrations before the app is ready (CREATE_TABLES_ON_STARTUP). */
  migrate?: boolean
}

/**
 * Opens the database (or takes an open client), applies migrations when asked, and decorates
 * `plinthDb`: a name of its own, so a host's `db` decorator stays the host's.
 * A client it opened, it closes when the app closes.
 */
async function dbPlugin (app: FastifyInstance, opts: DbOptions) {
  const client = 'client' in opts ? opts.client : await connect(opts.url)
  if (!('client' in opts)) app.addHook('onClose', () => client.close())
  if (opts.migrate !== false) await client.migrate()
  app.decorate('plinthDb', client)
  app.log.debug({ driver: client.driver }, 'database ready')
}

export default fp(dbPlugin, { name: 'plinth-db', fastify: '5.x' })
