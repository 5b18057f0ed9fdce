import fp from 'fastify-plugin'
import { connect, type DatabaseClient } from '../db/client.js'
import type { App } from '../http/types.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** plinth's database: the Drizzle instance (`.db`) every profile uses, its driver, ping and migrations. */
    plinthDb: DatabaseClient
  }
}

export type DbOptions = ({
  url: string
} | {
  /** An already open client, which stays the caller's to close. */
  client: DatabaseClient
}) & {
  migrate?: boolean
}

/** Decorates `plinthDb`, a name of its own so a host's `db` stays the host's; closes only a client it opened. */
async function dbPlugin (app: App, opts: DbOptions) {
  const client = 'client' in opts ? opts.client : await connect(opts.url)
  if (!('client' in opts)) app.addHook('onClose', () => client.close())
  if (opts.migrate !== false) await client.migrate()
  app.decorate('plinthDb', client)
  app.log.debug({ driver: client.driver }, 'database ready')
}

export default fp(dbPlugin, { name: 'plinth-db', fastify: '5.x' })
