import { loadConfig } from '../config.js'
import { connect } from './client.js'
import { createTables } from './resources.js'

/** `npm run db:migrate`: applies the committed migrations to DATABASE_URL, creates the RESOURCES tables and exits. */
const config = loadConfig()
const client = await connect(config.DATABASE_URL)
try {
  await createTables(client, config.RESOURCES)
  console.log(`migrations applied, resource tables ready: ${config.RESOURCES.join(', ')} (${client.driver})`)
} finally {
  await client.close()
}
