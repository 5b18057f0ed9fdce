import type { DatabaseClient } from '../db/client.js'

/** A driverless Drizzle that refuses every query: the document depends on settings, not data. */
export async function noDatabase (): Promise<DatabaseClient> {
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const schema = await import('../db/schema.js')
  const refuse = async () => { throw new Error('plinth openapi runs without a database') }
  return { db: drizzle.mock({ schema }), driver: 'postgres', load: () => ({ size: 0, running: 0, waiting: 0 }), migrate: refuse, ping: refuse, close: async () => {} }
}
