import { loadConfig } from '../config.js'
import { connect } from './client.js'

/** `npm run db:migrate`: applies the committed migrations to DATABASE_URL and exits. */
const client = await connect(loadConfig().DATABASE_URL)
try {
  await client.migrate()
  console.log(`migrations applied (${client.driver})`)
} finally {
  await client.close()
}
