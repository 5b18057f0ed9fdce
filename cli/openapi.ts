import type { DatabaseClient } from '../db/client.js'
import { APP, DOCS, readConfig, readFiles, type Command } from './command.js'
import type { Rewrite } from './host-app.js'

export const openapi: Command = {
  synopsis: '[--app MODULE]',
  summary: 'print the OpenAPI 3.1 document as JSON, without a database',
  description: 'Prints the OpenAPI 3.1 document the server serves at /docs/json, as JSON on stdout. With\n' +
    '--app, prints a host app\'s own document instead: its routes and resources beside plinth\'s. It\n' +
    'opens no database: plinth\'s plugins are given none, and create no table.',
  notes: 'Environment: RESOURCES, RESOURCES_FILE, and the limits the document states (DEFAULT_PAGE_LIMIT,\n' +
    'MAX_PAGE_LIMIT, PASSWORD_MIN_LENGTH...); with --app, the app\'s own settings.\n\n' +
    'A typed client: npx openapi-typescript openapi.json -o api.d.ts, then openapi-fetch; see\n' +
    `${DOCS}/plugins.md#the-typed-client`,
  options: { app: APP },
  run: (values) => typeof values.app === 'string' ? printAppOpenapi(values.app) : printOpenapi()
}

/** A driverless Drizzle that refuses every query: the document depends on settings, not data. */
async function noDatabase (): Promise<DatabaseClient> {
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const schema = await import('../db/schema.js')
  const refuse = async () => { throw new Error('plinth openapi runs without a database') }
  return { db: drizzle.mock({ schema }), driver: 'postgres', load: () => ({ size: 0, running: 0, waiting: 0 }), migrate: refuse, ping: refuse, close: async () => {} }
}

async function printOpenapi () {
  const config = await readConfig()
  const files = await readFiles(config)
  const { buildApp } = await import('../app.js')
  const app = await buildApp({ ...config, CREATE_TABLES_ON_STARTUP: false, FIRST_SUPERUSER_EMAIL: undefined }, { logger: false, database: await noDatabase(), files })
  try {
    await app.ready()
    process.stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
  } finally {
    await app.close()
  }
}

// Run for the document alone, a host app's boot must neither reach a database nor create anything.
const offline = (database: DatabaseClient): Record<string, Rewrite> => ({
  'plinth-db': { options: () => ({ client: database, migrate: false }) },
  'plinth-resource': { options: (options) => ({ ...options, createTable: false }) },
  'plinth-accounts': { options: (options) => ({ ...options, firstSuperuser: undefined }) }
})

async function printAppOpenapi (path: string) {
  const { hostApp } = await import('./host-app.js')
  const app = await hostApp(path, offline(await noDatabase()))
  try {
    if (typeof app.swagger !== 'function') throw new Error(`--app ${path}: the app has no OpenAPI document: register docsPlugin (or @fastify/swagger) in buildApp`)
    process.stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
  } finally {
    await app.close()
  }
}
