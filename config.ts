import { isIP } from 'node:net'
import { Type, type Static, type TInteger, type TObject, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from './settings/error.js'
import { Int, option, optionalOption, requiredOption, server, type Variable } from './settings/variables.js'
import { isPostgresUrl } from './db/client.js'
import { redactUrl } from './db/redact-url.js'
import { BUILT_IN_TABLES } from './db/resources.js'
import { AuthOptionsSchema, MIN_SECRET_BYTES, type AuthOptions } from './plugins/auth/options.js'
import { ChangesOptionsSchema, type ChangesOptions } from './plugins/changes.js'
import { CorsOptionsSchema, type CorsOptions } from './plugins/cors.js'
import { StatementTimeoutMsSchema } from './plugins/db.js'
import type { EtagsOptions } from './plugins/etags.js'
import { OverloadOptionsSchema, type OverloadOptions } from './plugins/overload.js'
import { WellKnownOptionsSchema, type WellKnownOptions } from './plugins/well-known.js'
import { AccountsOptionsSchema, type AccountsOptions } from './routes/accounts/options.js'
import { CatalogOptionsSchema, type CatalogOptions } from './routes/catalog/options.js'
import { ResourceOptionsSchema, type ResourceOptions } from './routes/resources/index.js'
import type { SettingFiles } from './settings/files.js'
import { IDENTIFIER_PATTERN, SCOPE_PATTERN } from './schemas/common.js'

export { ConfigError }

// An address or CIDR, IPv4 or IPv6, or one of proxy-addr's names for a range.
const PROXY_ADDRESS = '^(loopback|linklocal|uniquelocal|[0-9a-fA-F.:]+(/\\d{1,3})?)$'

const auth = AuthOptionsSchema.properties
const overload = OverloadOptionsSchema.properties
const accounts = AccountsOptionsSchema.properties
const { mail, rateLimits } = { mail: accounts.mail.properties, rateLimits: accounts.rateLimits.properties }
const catalog = CatalogOptionsSchema.properties
const resources = ResourceOptionsSchema.properties
const changes = ChangesOptionsSchema.properties
const firstSuperuser = accounts.firstSuperuser.properties
const SECONDS = { scale: 1000 }

/** Every environment variable: the plugin option it sets (its schema gives default and bounds, seconds where it is ms), or a server setting. */
export const VARIABLES = {
  HOST: server(Type.String({ minLength: 1, default: '127.0.0.1' })),
  PORT: server(Int(0, 8000, 65535)),
  DATABASE_URL: server(Type.String({
    default: 'pglite://./data/pglite',
    pattern: '^(postgres|postgresql|pglite|memory)://',
    description: 'a postgres://, postgresql://, pglite://PATH or memory:// URL'
  })),
  DATABASE_LISTEN_URL: server(Type.Optional(Type.String({
    pattern: '^postgres(ql)?://',
    description: 'a postgres:// or postgresql:// URL of a direct connection to the database of DATABASE_URL, for LISTEN'
  }))),
  DATABASE_POOL_MODE: server(Type.Union([Type.Literal('session'), Type.Literal('transaction')], {
    default: 'session',
    description: 'session, or transaction when DATABASE_URL is a pooler in transaction mode such as PgBouncer\'s (PostgreSQL only)'
  })),
  DATABASE_REPLICA_URLS: server(Type.Array(Type.String({ pattern: '^postgres(ql)?://' }), {
    default: [],
    description: 'a comma-separated list of postgres:// URLs of streaming replicas, for reads of lists and rows'
  })),
  DATABASE_REPLICA_MAX_LAG_SECONDS: server(Int(1, 10, 3600)),
  DATABASE_STATEMENT_TIMEOUT_MS: server(StatementTimeoutMsSchema),
  SECRET_KEY: option(auth.secret),
  JWT_ALGORITHM: option(auth.algorithm, { description: `one of ${auth.algorithm.anyOf.map(({ const: name }) => name).join(', ')}` }),
  JWT_PRIVATE_KEY: option(auth.privateKey, { description: 'a PEM or JWK private key' }),
  JWT_PRIVATE_KEY_FILE: server(Type.Optional(Type.String({ minLength: 1, description: 'the path of a PEM or JWK private key' }))),
  JWT_PREVIOUS_KEYS: option(auth.previousKeys, { description: 'a JWK Set or a JSON array of JWKs' }),
  JWT_ISSUER: option(auth.issuer),
  JWT_AUDIENCE: option(auth.audience),
  PUBLIC_URL: option(WellKnownOptionsSchema.properties.publicUrl, { description: 'the origin clients reach the server at, such as https://api.example.com' }),
  APP_URL: optionalOption(mail.appUrl, {
    description: 'the URL of the front end that serves /reset-password, /verify-email and /confirm-email, such as https://app.example.com'
  }),
  SMTP_URL: server(Type.Optional(Type.String({
    pattern: '^smtps?://',
    description: 'an smtp:// or smtps:// URL such as smtps://user:password@smtp.example.com'
  }))),
  MAIL_FROM: option(mail.from),
  MAIL_TEMPLATES_DIR: server(Type.Optional(Type.String({ minLength: 1, description: 'the path of a folder of mail templates' }))),
  MAIL_TIMEOUT_SECONDS: option(mail.timeoutMs, SECONDS),
  RESET_TOKEN_EXPIRE_MINUTES: option(accounts.resetTokenMinutes),
  VERIFY_TOKEN_EXPIRE_MINUTES: option(accounts.verifyTokenMinutes),
  REQUIRE_VERIFIED_EMAIL: option(accounts.requireVerified),
  REQUIRE_IF_MATCH: option(catalog.requireIfMatch),
  IDEMPOTENCY_TTL_HOURS: option(catalog.idempotencyTtlHours),
  EVENTS_RETENTION_HOURS: option(changes.retentionHours),
  EVENTS_MAX_EVENTS: option(changes.maxEvents),
  EVENTS_PURGE_INTERVAL_SECONDS: option(changes.purgeIntervalMs, SECONDS),
  EVENTS_MAX_STREAMS_PER_ACCOUNT: option(changes.maxStreamsPerAccount),
  EVENTS_MAX_STREAMS_PER_ADDRESS: option(changes.maxStreamsPerAddress),
  ACCESS_TOKEN_EXPIRE_MINUTES: option(auth.accessTokenMinutes),
  REFRESH_TOKEN_EXPIRE_DAYS: option(auth.refreshTokenDays),
  FIRST_SUPERUSER_EMAIL: optionalOption(firstSuperuser.email),
  FIRST_SUPERUSER_PASSWORD: optionalOption(firstSuperuser.password),
  BACKEND_CORS_ORIGINS: option(CorsOptionsSchema.properties.origins, { description: 'a comma-separated list of origins such as https://app.example.com' }),
  DEFAULT_PAGE_LIMIT: requiredOption<TInteger>([catalog.defaultLimit, accounts.defaultLimit]),
  MAX_PAGE_LIMIT: option([catalog.maxLimit, accounts.maxLimit]),
  CREATE_TABLES_ON_STARTUP: option(resources.createTable),
  RESOURCES: server(Type.Array(Type.String({
    pattern: IDENTIFIER_PATTERN,
    description: 'a comma-separated list of lower-case identifiers such as records,notes'
  }), { default: ['records'] })),
  CATALOG: server(Type.Boolean({ default: true })),
  CATALOG_WRITE_SCOPE: server(Type.Optional(Type.String({
    pattern: SCOPE_PATTERN,
    description: 'a scope name such as items:write: writes to /items then need a token with it'
  }))),
  RECORDS_WRITE_SCOPE: server(Type.Optional(Type.String({
    pattern: SCOPE_PATTERN,
    description: 'a scope name such as records:write: writes to the resources of RESOURCES then need a token with it'
  }))),
  RESOURCES_FILE: server(Type.Optional(Type.String({
    minLength: 1,
    description: 'the path of a JSON file of resources with fields, such as resources.json'
  }))),
  TRUST_PROXY: server(Type.Union([
    Type.Boolean(),
    Type.Integer({ minimum: 0, maximum: 64 }),
    Type.Array(Type.String({ pattern: PROXY_ADDRESS }), { minItems: 1 })
  ], {
    default: false,
    description: 'false, true, a hop count, or a comma-separated list of proxy addresses or CIDRs such as 10.0.0.0/8,loopback'
  })),
  PASSWORD_MIN_LENGTH: option(accounts.passwordMinLength),
  LOGIN_MAX_FAILURES: option(accounts.loginMaxFailures),
  RATE_LIMIT_WINDOW_SECONDS: option(rateLimits.windowSeconds),
  RATE_LIMIT_REGISTER: option(rateLimits.register),
  RATE_LIMIT_TOKEN: option(rateLimits.token),
  RATE_LIMIT_REFRESH: option(rateLimits.refresh),
  RATE_LIMIT_REVOKE: option(rateLimits.revoke),
  RATE_LIMIT_PASSWORD_RESET: option(rateLimits.passwordReset),
  RATE_LIMIT_VERIFY: option(rateLimits.verify),
  RATE_LIMIT_PASSWORD_CHECK: option(rateLimits.passwordCheck),
  RATE_LIMIT_MAILS_PER_EMAIL: option(rateLimits.mailsPerEmail),
  RATE_LIMIT_MAILS_WINDOW_SECONDS: option(rateLimits.mailWindowSeconds),
  REFRESH_REUSE_DETECTION: option(accounts.reuseDetection),
  REFRESH_REUSE_INTERVAL_SECONDS: option(accounts.reuseIntervalSeconds),
  SESSION_CHECK: option(auth.sessionCheck),
  PURGE_INTERVAL_SECONDS: option(accounts.purgeIntervalMs, SECONDS),
  WORKERS: server(Int(1, 1, 64)),
  OVERLOAD_MAX_IN_FLIGHT: option(overload.maxInFlight),
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: option(overload.maxEventLoopDelayMs),
  OVERLOAD_MAX_DB_WAITING: option(overload.maxDbWaiting),
  OVERLOAD_MAX_HASH_WAITING: option(overload.maxHashWaiting),
  OVERLOAD_MAX_HASH_WAITING_PER_CLIENT: option(accounts.maxHashWaitingPerClient),
  OVERLOAD_RETRY_AFTER_SECONDS: option(overload.retryAfterSeconds),
  BODY_TIMEOUT_SECONDS: option(overload.bodyTimeoutMs, SECONDS),
  MAX_CONNECTIONS_PER_ADDRESS: option(overload.maxConnectionsPerAddress),
  METRICS_PORT: server(Type.Optional(Type.Integer({
    minimum: 0,
    maximum: 65535,
    description: 'a port for GET /metrics, apart from PORT (unset: no metrics)'
  }))),
  METRICS_HOST: server(Type.String({ minLength: 1, default: '127.0.0.1' })),
  OTEL_TRACING: server(Type.Boolean({ default: false })),
  BODY_LIMIT: server(Int(1, 1048576)),
  LOG_LEVEL: server(Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info', description: 'one of fatal, error, warn, info, debug, trace, silent' }
  ))
}

type Schemas<T extends Record<string, Variable>> = { [K in keyof T]: T[K]['schema'] }
const schemasOf = <T extends Record<string, Variable>> (variables: T) =>
  Object.fromEntries(Object.entries(variables).map(([name, { schema }]) => [name, schema])) as Schemas<T>

/** Every setting with its default and bounds, derived from VARIABLES: the only place that knows the environment variables. */
export const ConfigSchema = Type.Object(schemasOf(VARIABLES))

export type Config = Static<typeof ConfigSchema>
type Key = keyof Config

/** JSON, with the password of any URL in it hidden. */
const quoted = (value: unknown) => JSON.stringify(value, (_key, entry: unknown) => typeof entry === 'string' ? redactUrl(entry) : entry)

const TRUE = new Set(['true', '1', 'yes'])
const FALSE = new Set(['false', '0', 'no'])

function isProxyAddress (entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const version = isIP(address)
  if (version === 0 || rest.length > 0) return false
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128))
}

function trustProxyOf (raw: string): unknown {
  const text = raw.trim().toLowerCase()
  // Only the words are booleans here: "1" is one hop, which trusts far less than true.
  if (text === 'true' || text === 'false') return text === 'true'
  if (/^\d+$/.test(text)) return Number(text)
  return raw.split(',').map((part) => part.trim()).filter(Boolean)
}

const NO_RESOURCES = 'RESOURCES=none mounts no generic resource'

function resourceNames (raw: string): string[] {
  if (raw.trim() === 'none') return []
  const names = raw.split(',').map((part) => part.trim()).filter(Boolean)
  if (names.length === 0) throw new ConfigError(`RESOURCES: names no resource (got ${quoted(raw)}); ${NO_RESOURCES}`)
  return names
}

function fromEnv (name: string, raw: string, schema: TSchema): unknown {
  if (name === 'TRUST_PROXY') return trustProxyOf(raw)
  switch (schema.type) {
    case 'integer': {
      const text = raw.trim()
      if (!/^-?\d+$/.test(text)) throw new ConfigError(`${name} must be an integer (got ${quoted(raw)})`)
      return Number(text)
    }
    case 'boolean': {
      const text = raw.trim().toLowerCase()
      if (TRUE.has(text)) return true
      if (FALSE.has(text)) return false
      throw new ConfigError(`${name} must be one of true/false/1/0/yes/no (got ${quoted(raw)})`)
    }
    case 'array':
      return name === 'RESOURCES' ? resourceNames(raw) : raw.split(',').map((part) => part.trim()).filter(Boolean)
    default:
      return raw
  }
}

export function resolveConfig (partial: Partial<Config> = {}): Config {
  const defined = Object.fromEntries(Object.entries(partial).filter(([, value]) => value !== undefined))
  const config = Value.Default(ConfigSchema, Value.Clone(defined)) as Config
  const error = Value.Errors(ConfigSchema, config).First()
  if (error) {
    const name = error.path.split('/')[1] ?? 'config'
    const got = name in config ? ` (got ${quoted(config[name as Key])})` : ''
    const expected = error.schema.description ? `must be ${error.schema.description}` : error.message.toLowerCase()
    throw new ConfigError(`${name}: ${expected}${got}`)
  }
  // An empty path would be PGlite's in-memory database: everything lost at exit, with no word of it.
  if (/^pglite:\/\/\s*$/.test(config.DATABASE_URL)) {
    throw new ConfigError('DATABASE_URL: pglite:// needs the path of a folder, such as pglite://./data/pglite; memory:// is a database in memory, lost at exit')
  }
  const onPostgres = isPostgresUrl(config.DATABASE_URL)
  if (config.DATABASE_POOL_MODE !== 'session' && !onPostgres) {
    throw new ConfigError('DATABASE_POOL_MODE=transaction is for a PostgreSQL pooler: PGlite is one connection in this process; unset it')
  }
  if (config.DATABASE_REPLICA_URLS.length > 0 && !onPostgres) {
    throw new ConfigError('DATABASE_REPLICA_URLS is set but DATABASE_URL is not PostgreSQL: PGlite has no replicas; unset it')
  }
  if (config.DATABASE_LISTEN_URL !== undefined && !onPostgres) {
    throw new ConfigError('DATABASE_LISTEN_URL is set but DATABASE_URL is not PostgreSQL: PGlite listens in its own process; unset it')
  }
  if (config.DEFAULT_PAGE_LIMIT > config.MAX_PAGE_LIMIT) {
    throw new ConfigError(
      `DEFAULT_PAGE_LIMIT (${config.DEFAULT_PAGE_LIMIT}) must not exceed MAX_PAGE_LIMIT (${config.MAX_PAGE_LIMIT})`
    )
  }
  const taken = config.RESOURCES.find((name) => BUILT_IN_TABLES.includes(name))
  if (taken) {
    throw new ConfigError(`RESOURCES: "${taken}" is a table of the service (${BUILT_IN_TABLES.join(', ')}); choose another name`)
  }
  if (config.RESOURCES.includes('none')) {
    throw new ConfigError(`RESOURCES: "none" is not a resource name but the whole setting: ${NO_RESOURCES}`)
  }
  if (config.CATALOG_WRITE_SCOPE !== undefined && !config.CATALOG) {
    throw new ConfigError('CATALOG_WRITE_SCOPE is set but CATALOG=false mounts no catalog; unset one of them')
  }
  if (config.RECORDS_WRITE_SCOPE !== undefined && config.RESOURCES.length === 0) {
    throw new ConfigError('RECORDS_WRITE_SCOPE is set but RESOURCES=none mounts no resource to guard; unset one of them')
  }
  const badProxy = Array.isArray(config.TRUST_PROXY) ? config.TRUST_PROXY.find((entry) => !isProxyAddress(entry)) : undefined
  if (badProxy !== undefined) {
    throw new ConfigError(`TRUST_PROXY: "${badProxy}" is not an IP address, a CIDR such as 10.0.0.0/8, or loopback, linklocal, uniquelocal`)
  }
  // Its length is all the message tells: the key itself stays out of logs and terminals.
  if (config.SECRET_KEY !== undefined && Buffer.byteLength(config.SECRET_KEY) < MIN_SECRET_BYTES) {
    throw new ConfigError(`SECRET_KEY: must be at least ${MIN_SECRET_BYTES} bytes (got ${Buffer.byteLength(config.SECRET_KEY)}); plinth secret generate prints a new one`)
  }
  if (config.JWT_PRIVATE_KEY !== undefined && config.JWT_PRIVATE_KEY_FILE !== undefined) {
    throw new ConfigError('JWT_PRIVATE_KEY and JWT_PRIVATE_KEY_FILE are both set; keep one')
  }
  if (config.METRICS_PORT !== undefined && config.METRICS_PORT !== 0 && config.METRICS_PORT === config.PORT) {
    throw new ConfigError(`METRICS_PORT (${config.METRICS_PORT}) must differ from PORT: metrics are never served on the API's port`)
  }
  return config
}

/** Reads the process environment (or the given one). An empty variable counts as unset. */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  const partial: Record<string, unknown> = {}
  for (const [name, schema] of Object.entries(ConfigSchema.properties)) {
    const raw = env[name]
    if (raw === undefined || raw.trim() === '') continue
    partial[name] = fromEnv(name, raw, schema)
  }
  return resolveConfig(partial as Partial<Config>)
}

/** The plugins the variables set options of, by the name optionsOf gives their options. */
export const PLUGIN_SCHEMAS = {
  auth: AuthOptionsSchema,
  cors: CorsOptionsSchema,
  overload: OverloadOptionsSchema,
  wellKnown: WellKnownOptionsSchema,
  accounts: AccountsOptionsSchema,
  catalog: CatalogOptionsSchema,
  resources: ResourceOptionsSchema,
  changes: ChangesOptionsSchema
}

export interface PluginOptions {
  auth: AuthOptions
  cors: CorsOptions
  overload: OverloadOptions
  wellKnown: WellKnownOptions
  accounts: AccountsOptions
  catalog: CatalogOptions
  /** Those of every resource mounted, RESOURCES' and RESOURCES_FILE's. */
  resources: Partial<ResourceOptions>
  changes: ChangesOptions
  etags: EtagsOptions
  db: { migrate: boolean, poolMode: 'session' | 'transaction', listenUrl?: string, replicaUrls: string[], replicaMaxLagSeconds: number, statementTimeoutMs: number }
}

function * optionsIn (schema: TObject, path: string[]): Generator<[TSchema, string[]]> {
  for (const [key, property] of Object.entries(schema.properties)) {
    yield [property, [...path, key]]
    if (property.type === 'object' && property.properties) yield * optionsIn(property as TObject, [...path, key])
  }
}

const places = new Map<TSchema, string[][]>()
for (const [plugin, schema] of Object.entries(PLUGIN_SCHEMAS)) {
  for (const [property, path] of optionsIn(schema, [plugin])) places.set(property, [...(places.get(property) ?? []), path])
}

/** Where each variable's value goes: every place in the plugins' schemas of the options it names. */
export const TARGETS = Object.fromEntries(Object.entries(VARIABLES).map(([name, { options }]) => {
  const paths = options.flatMap((schema) => places.get(schema) ?? [])
  if (paths.length < options.length) throw new Error(`${name}: an option it names is in no plugin's schema`)
  return [name, paths]
})) as Record<keyof Config, string[][]>

function put (target: Record<string, unknown>, [key, ...rest]: string[], value: unknown) {
  if (rest.length === 0) target[key!] = value
  else put((target[key!] ??= {}) as Record<string, unknown>, rest, value)
}

function advertisedScopes (config: Config, files: SettingFiles): string[] {
  const guards = files.resources.flatMap(({ guards }) => [guards.read, guards.write])
  const named = guards.flatMap((guard) => typeof guard === 'object' && guard !== null ? guard.scopes : [])
  const settings = [config.CATALOG_WRITE_SCOPE, config.RECORDS_WRITE_SCOPE].filter((scope) => scope !== undefined)
  return [...new Set(['me', ...settings, ...named])]
}

export function optionsOf (config: Config, files: SettingFiles): PluginOptions {
  const options: Record<string, unknown> = { auth: {}, cors: {}, overload: {}, wellKnown: {}, accounts: { mail: {}, rateLimits: {} }, catalog: {}, resources: {}, changes: {} }
  for (const [name, paths] of Object.entries(TARGETS)) {
    const value = config[name as keyof Config]
    const { scale } = VARIABLES[name as keyof Config]
    if (value !== undefined) for (const path of paths) put(options, path, typeof value === 'number' ? value * scale : value)
  }
  const { auth, overload, wellKnown, accounts } = options as unknown as PluginOptions
  const { FIRST_SUPERUSER_EMAIL: email, FIRST_SUPERUSER_PASSWORD: password } = config
  // What no one variable gives: a value from several settings, or from a file.
  auth.privateKey = files.privateKey
  overload.behindProxy = config.TRUST_PROXY !== false && config.TRUST_PROXY !== 0
  wellKnown.scopes = advertisedScopes(config, files)
  accounts.firstSuperuser = email && password ? { email, password } : undefined
  accounts.mail = { ...accounts.mail, appUrl: config.APP_URL ?? config.PUBLIC_URL ?? `http://${config.HOST}:${config.PORT}`, templates: files.templates }
  return {
    ...options as unknown as PluginOptions,
    // Keyed by what every process of the deployment already shares, so their ETags agree.
    etags: { secret: config.SECRET_KEY ?? files.privateKey },
    db: {
      migrate: config.CREATE_TABLES_ON_STARTUP,
      poolMode: config.DATABASE_POOL_MODE,
      replicaUrls: config.DATABASE_REPLICA_URLS,
      replicaMaxLagSeconds: config.DATABASE_REPLICA_MAX_LAG_SECONDS,
      statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
      ...(config.DATABASE_LISTEN_URL === undefined ? {} : { listenUrl: config.DATABASE_LISTEN_URL })
    }
  }
}
