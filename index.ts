export { buildApp, API_PREFIX, type App, type BuildOptions } from './app.js'
export { ConfigSchema, ConfigError, loadConfig, resolveConfig, type Config } from './config.js'

export { default as dbPlugin, type DbOptions } from './plugins/db.js'
export { default as authPlugin, AuthOptionsSchema, TokenError, type AuthOptions, type Guard, type TokenClaims, type Tokens } from './plugins/auth/index.js'
export { default as errorsPlugin } from './plugins/errors.js'
export { problem, problemError, validationError, conflictError, forbiddenError, notFoundError } from './http/problems.js'
export { default as corsPlugin, type CorsOptions } from './plugins/cors.js'
export { default as docsPlugin, DocsOptionsSchema, type DocsOptions } from './plugins/docs.js'
export { default as etagsPlugin, EtagsOptionsSchema, type EtagsOptions } from './plugins/etags.js'
export { default as healthPlugin } from './plugins/health.js'
export { default as metricsPlugin, metricsServer, type MetricsOptions, type PlinthEvent, type PlinthMetrics } from './plugins/metrics.js'
export { default as overloadPlugin, OverloadOptionsSchema, neverShed, type OverloadOptions } from './plugins/overload.js'
export { startTracing, enableQueryTracing, type SpanProcessorLike, type TracingOptions } from './telemetry/tracing.js'
export { default as securityPlugin, apiSecurityHeaders } from './plugins/security.js'
export { default as wellKnownPlugin, WellKnownOptionsSchema, type WellKnownOptions } from './plugins/well-known.js'
export { ALGORITHMS, generateKey, type Algorithm } from './plugins/auth/keys.js'
export { validatorCompiler } from './http/validation.js'

export { default as accountsPlugin } from './routes/accounts/index.js'
export { AccountsOptionsSchema, type AccountsOptions } from './routes/accounts/options.js'
export { default as catalogPlugin } from './routes/catalog/index.js'
export { CatalogOptionsSchema, type CatalogOptions } from './routes/catalog/options.js'
export {
  default as resourcePlugin, ROUTE_NAMES, RecordNotFound, ResourceNotRegistered, ResourceOptionsSchema, resourceTable,
  type ResourceOptions, type ResourceTable, type RouteName
} from './routes/resources/index.js'
export { ResourcesFileSchema, guardsOf, readResourcesFile, type FileResourceDefinition } from './routes/resources/file.js'
export {
  createItemRepository, containsPattern,
  type ItemRepository, type ItemRow, type ItemSlice, type NewItem
} from './db/items.js'

export { connect, connectPglite, type Database, type DatabaseClient, type DatabaseLoad, type Driver } from './db/client.js'
export { rowsOf } from './db/raw-rows.js'
export { createRepository, definedOnly, type Repository, type Page, type TableWithId } from './db/crud.js'
export { ResourceTableError, isDatabaseUnavailable, sqlState } from './db/errors.js'
export { serverBusy, serverBusyIn, type ServerBusy, type ShedReason } from './concurrency/busy.js'
export { BUILT_IN_TABLES, createTables, ensureResourceTable, resourceTableDdl } from './db/resources.js'
export * as tables from './db/schema.js'

export * from './schemas/common.js'
export * from './schemas/error.js'
export { readFields, rowSchema, type Field, type FieldKind, type ResourceRow } from './schemas/fields.js'
export * from './schemas/health.js'
export * from './schemas/item.js'
export * from './schemas/page.js'
export * from './schemas/record.js'
export * from './schemas/token.js'
export * from './schemas/user.js'
