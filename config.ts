import { readFileSync, statSync } from 'node:fs'
import { isIP } from 'node:net'
import createError from '@fastify/error'
import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { redactUrl } from './db/redact-url.js'
import { BUILT_IN_TABLES } from './db/resources.js'
import { readTemplatesDir } from './mail/templates.js'
import { ALGORITHMS, loadSigningKeys } from './plugins/auth/keys.js'
import { MIN_SECRET_BYTES } from './plugins/auth/keys.js'
import type { FieldTableSpec } from './db/field-table.js'
import { readResourcesFile, type FileResourceDefinition } from './routes/resources/file.js'
import { resolveResourceOptions } from './routes/resources/options.js'

// An address or CIDR, IPv4 or IPv6, or one of proxy-addr's names for a range.
const PROXY_ADDRESS = '^(loopback|linklocal|uniquelocal|[0-9a-fA-F.:]+(/\\d{1,3})?)$'

const Int = (min: number, fallback: number, max = 2147483647) =>
  Type.Integer({ minimum: min, maximum: max, default: fallback })

/** Every setting with its default: the only place that knows the environment variables. */
export const ConfigSchema = Type.Object({
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  PORT: Int(0, 8000, 65535),
  DATABASE_URL: Type.String({
    default: 'pglite://./data/pglite',
    pattern: '^(postgres|postgresql|pglite|memory)://',
    description: 'a postgres://, postgresql://, pglite://PATH or memory:// URL'
  }),
  SECRET_KEY: Type.Optional(Type.String({ minLength: 1 })),
  JWT_ALGORITHM: Type.Union(ALGORITHMS.map((name) => Type.Literal(name)), { default: 'HS256', description: `one of ${ALGORITHMS.join(', ')}` }),
  JWT_PRIVATE_KEY: Type.Optional(Type.String({ minLength: 1, description: 'a PEM or JWK private key' })),
  JWT_PRIVATE_KEY_FILE: Type.Optional(Type.String({ minLength: 1, description: 'the path of a PEM or JWK private key' })),
  JWT_PREVIOUS_KEYS: Type.Optional(Type.String({ minLength: 1, description: 'a JWK Set or a JSON array of JWKs' })),
  JWT_ISSUER: Type.Optional(Type.String({ minLength: 1 })),
  JWT_AUDIENCE: Type.Optional(Type.String({ minLength: 1 })),
  PUBLIC_URL: Type.Optional(Type.String({
    pattern: '^https?://[^/?#]+$',
    description: 'the origin clients reach the server at, such as https://api.example.com'
  })),
  APP_URL: Type.Optional(Type.String({
    pattern: '^https?://[^?#]+$',
    description: 'the URL of the front end that serves /reset-password, /verify-email and /confirm-email, such as https://app.example.com'
  })),
  SMTP_URL: Type.Optional(Type.String({
    pattern: '^smtps?://',
    description: 'an smtp:// or smtps:// URL such as smtps://user:password@smtp.example.com'
  })),
  MAIL_FROM: Type.String({ minLength: 3, default: 'plinth <no-reply@localhost>' }),
  MAIL_TEMPLATES_DIR: Type.Optional(Type.String({ minLength: 1, description: 'the path of a folder of mail templates' })),
  MAIL_TIMEOUT_SECONDS: Int(1, 10, 600),
  RESET_TOKEN_EXPIRE_MINUTES: Int(1, 30, 10080),
  VERIFY_TOKEN_EXPIRE_MINUTES: Int(1, 1440, 43200),
  REQUIRE_VERIFIED_EMAIL: Type.Boolean({ default: false }),
  REQUIRE_IF_MATCH: Type.Boolean({ default: false }),
  IDEMPOTENCY_TTL_HOURS: Int(1, 24, 8760),
  ACCESS_TOKEN_EXPIRE_MINUTES: Int(1, 30),
  REFRESH_TOKEN_EXPIRE_DAYS: Int(1, 14),
  FIRST_SUPERUSER_EMAIL: Type.Optional(Type.String({ minLength: 3 })),
  FIRST_SUPERUSER_PASSWORD: Type.Optional(Type.String({ minLength: 1 })),
  BACKEND_CORS_ORIGINS: Type.Array(Type.String({
    pattern: '^https?://[^/]+$',
    description: 'a comma-separated list of origins such as https://app.example.com'
  }), { default: [] }),
  DEFAULT_PAGE_LIMIT: Int(1, 20),
  MAX_PAGE_LIMIT: Int(1, 100),
  CREATE_TABLES_ON_STARTUP: Type.Boolean({ default: true }),
  RESOURCES: Type.Array(Type.String({
    pattern: '^[a-z][a-z0-9_]{0,62}$',
    description: 'a comma-separated list of lower-case identifiers such as records,notes'
  }), { default: ['records'] }),
  CATALOG: Type.Boolean({ default: true }),
  CATALOG_WRITE_SCOPE: Type.Optional(Type.String({
    pattern: '^[a-z][a-z0-9:_.-]{0,63}$',
    description: 'a scope name such as items:write: writes to /items then need a token with it'
  })),
  RECORDS_WRITE_SCOPE: Type.Optional(Type.String({
    pattern: '^[a-z][a-z0-9:_.-]{0,63}$',
    description: 'a scope name such as records:write: writes to the resources of RESOURCES then need a token with it'
  })),
  RESOURCES_FILE: Type.Optional(Type.String({
    minLength: 1,
    description: 'the path of a JSON file of resources with fields, such as resources.json'
  })),
  TRUST_PROXY: Type.Union([
    Type.Boolean(),
    Type.Integer({ minimum: 0, maximum: 64 }),
    Type.Array(Type.String({ pattern: PROXY_ADDRESS }), { minItems: 1 })
  ], {
    default: false,
    description: 'false, true, a hop count, or a comma-separated list of proxy addresses or CIDRs such as 10.0.0.0/8,loopback'
  }),
  PASSWORD_MIN_LENGTH: Int(1, 8, 1024),
  LOGIN_MAX_FAILURES: Int(0, 10),
  RATE_LIMIT_WINDOW_SECONDS: Int(1, 60, 86400),
  RATE_LIMIT_REGISTER: Int(0, 20),
  RATE_LIMIT_TOKEN: Int(0, 60),
  RATE_LIMIT_REFRESH: Int(0, 120),
  RATE_LIMIT_REVOKE: Int(0, 60),
  RATE_LIMIT_PASSWORD_RESET: Int(0, 10),
  RATE_LIMIT_VERIFY: Int(0, 10),
  RATE_LIMIT_PASSWORD_CHECK: Int(0, 10),
  RATE_LIMIT_MAILS_PER_EMAIL: Int(0, 5),
  RATE_LIMIT_MAILS_WINDOW_SECONDS: Int(1, 3600, 604800),
  REFRESH_REUSE_DETECTION: Type.Boolean({ default: false }),
  REFRESH_REUSE_INTERVAL_SECONDS: Int(0, 10, 3600),
  SESSION_CHECK: Type.Boolean({ default: true }),
  // setInterval's longest delay is 2^31-1 ms, about 24.8 days.
  PURGE_INTERVAL_SECONDS: Int(1, 3600, 2_147_483),
  WORKERS: Int(1, 1, 64),
  // Graceful overload (plugins/overload.ts): past these, requests are answered 503 at once; 0 turns a check off.
  OVERLOAD_MAX_IN_FLIGHT: Int(0, 300),
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: Int(0, 200),
  OVERLOAD_MAX_DB_WAITING: Int(0, 200),
  OVERLOAD_MAX_HASH_WAITING: Int(0, 64),
  OVERLOAD_MAX_HASH_WAITING_PER_CLIENT: Int(0, 4),
  OVERLOAD_RETRY_AFTER_SECONDS: Int(1, 2, 86400),
  // Slow clients (plugins/overload.ts): how long a body may take to arrive, how many connections one address holds (0: any).
  BODY_TIMEOUT_SECONDS: Int(1, 20, 3600),
  MAX_CONNECTIONS_PER_ADDRESS: Int(0, 100),
  METRICS_PORT: Type.Optional(Type.Integer({
    minimum: 0,
    maximum: 65535,
    description: 'a port for GET /metrics, apart from PORT (unset: no metrics)'
  })),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  OTEL_TRACING: Type.Boolean({ default: false }),
  BODY_LIMIT: Int(1, 1048576),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((level) => Type.Literal(level)),
    { default: 'info', description: 'one of fatal, error, warn, info, debug, trace, silent' }
  )
})

export type Config = Static<typeof ConfigSchema>
type Key = keyof Config

/** A setting that is missing or malformed: the server refuses to start and says which. */
export const ConfigError = createError('PLINTH_INVALID_CONFIG', '%s')

/** A value as an error message quotes it: JSON, with the password of any URL in it hidden. */
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

/** TRUST_PROXY as Fastify's trustProxy takes it: true or false, a hop count, or the proxies' addresses. */
function trustProxyOf (raw: string): unknown {
  const text = raw.trim().toLowerCase()
  // Only the words are booleans here: "1" is one hop, which trusts far less than true.
  if (text === 'true' || text === 'false') return text === 'true'
  if (/^\d+$/.test(text)) return Number(text)
  return raw.split(',').map((part) => part.trim()).filter(Boolean)
}

const NO_RESOURCES = 'RESOURCES=none mounts no generic resource'

/** RESOURCES as written: `none` for no generic resource; a list that names none otherwise is a mistake. */
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
  if (config.RESOURCES_FILE !== undefined) {
    const both = resourcesFile(config).find(({ options }) => config.RESOURCES.includes(options.name))
    if (both) throw new ConfigError(`"${both.options.name}" is both in RESOURCES and in RESOURCES_FILE; keep one`)
  }
  return config
}

/** The resources of RESOURCES_FILE, read and checked; none without one. */
export function resourcesFile (config: Config): FileResourceDefinition[] {
  return config.RESOURCES_FILE === undefined ? [] : readResourcesFile(config.RESOURCES_FILE, (message) => new ConfigError(message))
}

/** The signing key of JWT_PRIVATE_KEY, or of the file JWT_PRIVATE_KEY_FILE names; none when neither is set. */
export function privateKeyOf (config: Config): string | undefined {
  const path = config.JWT_PRIVATE_KEY_FILE
  if (path === undefined) return config.JWT_PRIVATE_KEY
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`JWT_PRIVATE_KEY_FILE ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`)
  }
}

/** The variable to fix for a key the auth plugin refuses, by the option its message names. */
function keyVariable (config: Config, message: string): string {
  if (message.startsWith('previousKeys')) return 'JWT_PREVIOUS_KEYS'
  if (message.startsWith('privateKey is')) return config.JWT_PRIVATE_KEY_FILE === undefined ? 'JWT_PRIVATE_KEY' : 'JWT_PRIVATE_KEY_FILE'
  return 'JWT_ALGORITHM'
}

/** Loads the signing keys as the auth plugin will, so that a missing or unfit key stops a start before the database opens. */
export function checkSigningKeys (config: Config): void {
  try {
    loadSigningKeys({ algorithm: config.JWT_ALGORITHM, secret: config.SECRET_KEY ?? '', privateKey: privateKeyOf(config), previousKeys: config.JWT_PREVIOUS_KEYS })
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'AUTH_INVALID_OPTIONS') throw err
    // The plugin's prefix names no setting; the variable does.
    const reason = (err as Error).message.replace(/^auth plugin: /, '')
    throw new ConfigError(`${keyVariable(config, reason)}: ${reason}`)
  }
}

/** The mail templates of MAIL_TEMPLATES_DIR, which must be a folder; the defaults without one. */
export function mailTemplatesOf (config: Config): ReturnType<typeof readTemplatesDir> {
  const dir = config.MAIL_TEMPLATES_DIR
  if (dir === undefined) return {}
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a folder')
    return readTemplatesDir(dir)
  } catch (err) {
    throw new ConfigError(`MAIL_TEMPLATES_DIR ${dir}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such folder' : (err as Error).message}`)
  }
}

/** The tables of RESOURCES_FILE's resources, for processes that prepare the database without serving it. */
export function fieldTablesOf (config: Config): FieldTableSpec[] {
  return resourcesFile(config).map(({ options }) => {
    const { table, fields = [], owner, indexes } = resolveResourceOptions(options)
    return { table, fields, owner, indexes }
  })
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
