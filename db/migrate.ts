import { fieldTablesOf, type Config } from '../config.js'
import { connect } from './client.js'
import { createTables } from './resources.js'

/** `plinth migrate` and `npm run db:migrate`: migrations and RESOURCES tables; returns what it did, in one line. */
export async function migrate (config: Config): Promise<string> {
  const client = await connect(config.DATABASE_URL)
  const fieldTables = fieldTablesOf(config)
  try {
    await createTables(client, config.RESOURCES, fieldTables)
    const names = [...new Set(config.RESOURCES), ...fieldTables.map((spec) => spec.table)]
    return `migrations applied, resource tables ready: ${names.join(', ')} (${client.driver})`
  } finally {
    await client.close()
  }
}
