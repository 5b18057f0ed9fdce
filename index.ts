// The package's main entry, 'plinth': every name here is a semver promise, so it holds what a host
// registers, configures, throws and types. Lower layers have subpaths (package.json "exports").

export { buildApp, API_PREFIX, type App, type BuildOptions } from './app.js'
export { ConfigSchema, ConfigError, loadConfig, resolveConfig, type Config } from './config.js'

export { default as errorsPlugin } from './plugins/errors.js'
export { default as corsPlugin, CorsOptionsSchema, type CorsOptions } from './plugins/cors.js'
export { default as changesPlugin, ChangesOptionsSchema, type ChangesOptions } from './plugins/changes.js'
export { default as docsPlugin, DocsOptionsSchema, type DocsOptions } from './plugins/docs.js'
export { default as securityPlugin } from './plugins/security.js'
export { default as dbPlugin, type DbOptions } from './plugins/db.js'
export { default as metricsPlugin, metricsServer, type MetricsOptions, type PlinthEvent, type PlinthMetrics } from './plugins/metrics.js'
export { requestLogSerializer } from './http/log-redaction.js'
export { default as overloadPlugin, OverloadOptionsSchema, neverShed, type OverloadOptions } from './plugins/overload.js'
export {
  default as authPlugin, AuthOptionsSchema, TokenError,
  type AuthOptions, type Guard, type PlinthAccount, type PlinthGuards, type TokenClaims, type Tokens
} from './plugins/auth/index.js'
export { default as etagsPlugin, EtagsOptionsSchema, type EtagsOptions } from './plugins/etags.js'
export { default as wellKnownPlugin, WellKnownOptionsSchema, type WellKnownOptions } from './plugins/well-known.js'
export { default as healthPlugin } from './plugins/health.js'

export { default as accountsPlugin } from './routes/accounts/index.js'
export { AccountsOptionsSchema, type AccountsOptions } from './routes/accounts/options.js'
export { default as catalogPlugin } from './routes/catalog/index.js'
export { CatalogOptionsSchema, type CatalogOptions } from './routes/catalog/options.js'
export {
  default as resourcePlugin, ROUTE_NAMES, RecordNotFound, ResourceNotRegistered, ResourceOptionsSchema, resourceTable,
  type ResourceOptions, type ResourceTable, type RouteName
} from './routes/resources/index.js'
export { guardsOf, loadResourceHooks, readResourcesFile, type FileResourceDefinition } from './settings/resources-file.js'
export { Reference, type OnDelete, type ResourceRow } from './schemas/fields.js'
export { defineResource, type TypedResourceOptions } from './routes/resources/define.js'
export {
  resourceHooks, type CreateContext, type HookContext, type ResourceHooks, type TransactionContext
} from './routes/resources/hooks.js'

export { problem, problemError, validationError, conflictError, forbiddenError, notFoundError } from './http/problems.js'

export type { Database, DatabaseClient } from './db/client.js'
export type { ChangeEvent, ChangeFeed, ChangeOp, EventPage, EventScope } from './db/resource-events.js'
export { createRepository, type Page, type Repository, type TableWithId } from './db/crud.js'
export { createItemRepository, type ItemRepository, type ItemRow, type ItemSlice, type NewItem } from './db/items.js'
