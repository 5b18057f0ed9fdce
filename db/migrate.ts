import type { Config } from '../config.js'
import { connect } from './client.js'
import { createTables } from './resources.js'

/**
 * `plinth migrate` (and `npm run db:migrate`): applies the committed migrations to DATABASE_URL and
 * creates the RESOURCES tables, then closes the database. Returns what it did, in one line.
 */
export async function migrate (config: Pick<Config, 'DATABASE_URL' | 'RESOURCES'>): Promise<string> {
  const client = await connect(config.DATABASE_URL)
  try {
    await createTables(client, config.RESOURCES)
    return `migrations applied, resource tables ready: ${[...new Set(config.RESOURCES)].join(', ')} (${client.driver})`
  } finally {
    await client.close()
  }
}
