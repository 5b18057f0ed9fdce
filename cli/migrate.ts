import type { FastifyInstance } from 'fastify'
import type { DatabaseClient } from '../db/client.js'
import type { ResourceOptions } from '../routes/resources/options.js'
import { APP, DOCS, readConfig, readFiles, type Command, type Values } from './command.js'
import type { Options, Plugin } from './host-app.js'

export const migrate: Command = {
  synopsis: '[--app MODULE]',
  summary: 'apply the migrations, create or update the resource tables, say what it did',
  description: 'Applies the migrations not yet applied, creates the tables of RESOURCES, creates or adds\n' +
    'the new fields of the RESOURCES_FILE tables, prints what it did and exits. With --app, does\n' +
    'the same for a host app: the database of its dbPlugin, and the table of each of its\n' +
    'resourcePlugins, whatever their migrate and createTable say.',
  notes: 'Environment: DATABASE_URL, RESOURCES, RESOURCES_FILE; with --app, the app\'s own settings.\n' +
    `The module --app takes: ${DOCS}/plugins.md#your-own-app-from-the-command-line`,
  options: { app: APP },
  run: runMigrate
}

async function runMigrate (values: Values) {
  if (typeof values.app === 'string') return migrateApp(values.app)
  const { migrate } = await import('../db/migrate.js')
  const { fieldTablesOf } = await import('../settings/files.js')
  const config = await readConfig()
  const files = await readFiles({ RESOURCES: config.RESOURCES, RESOURCES_FILE: config.RESOURCES_FILE })
  console.log(await migrate(config.DATABASE_URL, { resources: config.RESOURCES, fieldTables: fieldTablesOf(files) }))
}

/** `migrate --app`: boots the host app with no schema work, then migrates it whatever its own switches say. */
async function migrateApp (path: string) {
  const { hostApp } = await import('./host-app.js')
  const { changes, schemaState } = await import('../db/migrate.js')
  const { createTables } = await import('../db/resources.js')
  const { resolveResourceOptions } = await import('../routes/resources/options.js')
  const { fieldTableSpecs } = await import('../settings/files.js')
  const fp = (await import('fastify-plugin')).default
  let opened: { client: DatabaseClient, before: Awaited<ReturnType<typeof schemaState>> } | undefined
  const resources: ResourceOptions[] = []
  // Read before anything changes it; the work itself waits for the boot, which the host's plugin timeout bounds.
  const reading = (plugin: Plugin): Plugin => fp(async (app: FastifyInstance, options: Options) => {
    await (plugin as (app: FastifyInstance, options: Options) => Promise<void>)(app, { ...options, migrate: false })
    opened = { client: app.plinthDb, before: await schemaState(app.plinthDb.db) }
  }, { name: 'plinth-db', fastify: '5.x' })
  const app = await hostApp(path, {
    'plinth-db': { plugin: reading, options: (options) => ({ ...options }) },
    'plinth-resource': {
      options: (options) => {
        resources.push(options as unknown as ResourceOptions)
        return { ...options, createTable: false }
      }
    },
    'plinth-accounts': { options: (options) => ({ ...options, firstSuperuser: undefined }) }
  })
  try {
    if (!opened) throw new Error(`--app ${path}: the app registers no dbPlugin: there is no database to migrate`)
    const tables = resources.map((options) => resolveResourceOptions(options))
    const records = tables.filter((table) => !table.fields).map((table) => table.table)
    await createTables(opened.client, records, fieldTableSpecs(tables))
    console.log(changes(opened.before, await schemaState(opened.client.db), tables.map((table) => table.table), opened.client.driver))
  } finally {
    await app.close()
  }
}
