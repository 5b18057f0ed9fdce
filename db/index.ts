/** `plinth/db`: the database below the plugins, for scripts and tooling. */
export { connect, connectPglite, type Database, type DatabaseClient, type DatabaseLoad, type Driver } from './client.js'
export { ResourceTableError } from './errors.js'
export { rowsOf } from './raw-rows.js'
export { BUILT_IN_TABLES, createTables, ensureResourceTable, resourceTableDdl } from './resources.js'
export * as tables from './schema.js'
