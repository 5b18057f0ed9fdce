import type { Config } from '../config.js'
import { connect } from './client.js'
import { createTables } from './resources.js'

/** `plinth migrate` and `npm run db:migrate`: migrations and RESOURCES tables; returns what it did, in one line. */
export async function migrate (config: Pick<Config, 'DATABASE_URL' | 'RESOURCES'>): Promise<string> {
  const client = await connect(config.DATABASE_URL)
  try {
    await createTables(client, config.RESOURCES)
    return `migrations applied, resource tables ready: ${[...new Set(config.RESOURCES)].join(', ')} (${client.driver})`
  } finally {
    await client.close()
  }
}
