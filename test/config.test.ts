import { readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { TSchema } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { generateKey } from '../plugins/auth/keys.js'
import { ConfigError, ConfigSchema, VARIABLES, loadConfig, resolveConfig } from '../config.js'
import { readSettingFiles } from '../settings/files.js'
import { PLUGIN_SCHEMAS, TARGETS, optionsOf } from '../config.js'
import { checkSigningKeys } from '../settings/signing-keys.js'
import { PG_INT_MAX } from '../schemas/common.js'
import { build } from './support/app.js'
import { rowsOf } from './support/database.js'
import { untilAnswered } from './support/until.js'

t.test('an empty environment gives the documented defaults', async (t) => {
  t.same(loadConfig({}), {
    HOST: '127.0.0.1',
    PORT: 8000,
    DATABASE_URL: 'pglite://./data/pglite',
    DATABASE_POOL_MODE: 'session',
    DATABASE_REPLICA_URLS: [],
    DATABASE_REPLICA_MAX_LAG_SECONDS: 10,
    DATABASE_STATEMENT_TIMEOUT_MS: 5000,
    JWT_ALGORITHM: 'HS256',
    MAIL_FROM: 'plinth <no-reply@localhost>',
    MAIL_TIMEOUT_SECONDS: 10,
    RESET_TOKEN_EXPIRE_MINUTES: 30,
    VERIFY_TOKEN_EXPIRE_MINUTES: 1440,
    REQUIRE_VERIFIED_EMAIL: false,
    REQUIRE_IF_MATCH: false,
    IDEMPOTENCY_TTL_HOURS: 24,
    EVENTS_RETENTION_HOURS: 24,
    EVENTS_MAX_EVENTS: 1000000,
    EVENTS_PURGE_INTERVAL_SECONDS: 60,
    EVENTS_MAX_STREAMS_PER_ACCOUNT: 20,
    EVENTS_MAX_STREAMS_PER_ADDRESS: 100,
    ACCESS_TOKEN_EXPIRE_MINUTES: 30,
    REFRESH_TOKEN_EXPIRE_DAYS: 14,
    BACKEND_CORS_ORIGINS: [],
    DEFAULT_PAGE_LIMIT: 20,
    MAX_PAGE_LIMIT: 100,
    CREATE_TABLES_ON_STARTUP: true,
    RESOURCES: ['records'],
    CATALOG: true,
    TRUST_PROXY: false,
    PASSWORD_MIN_LENGTH: 8,
    LOGIN_MAX_FAILURES: 10,
    RATE_LIMIT_WINDOW_SECONDS: 60,
    RATE_LIMIT_REGISTER: 20,
    RATE_LIMIT_TOKEN: 60,
    RATE_LIMIT_REFRESH: 120,
    RATE_LIMIT_REVOKE: 60,
    RATE_LIMIT_PASSWORD_RESET: 10,
    RATE_LIMIT_VERIFY: 10,
    RATE_LIMIT_PASSWORD_CHECK: 10,
    RATE_LIMIT_MAILS_PER_EMAIL: 5,
    RATE_LIMIT_MAILS_WINDOW_SECONDS: 3600,
    REFRESH_REUSE_DETECTION: false,
    REFRESH_REUSE_INTERVAL_SECONDS: 10,
    SESSION_CHECK: true,
    PURGE_INTERVAL_SECONDS: 3600,
    WORKERS: 1,
    OVERLOAD_MAX_IN_FLIGHT: 300,
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: 200,
    OVERLOAD_MAX_DB_WAITING: 200,
    OVERLOAD_MAX_HASH_WAITING: 64,
    OVERLOAD_MAX_HASH_WAITING_PER_CLIENT: 4,
    OVERLOAD_RETRY_AFTER_SECONDS: 2,
    BODY_TIMEOUT_SECONDS: 20,
    MAX_CONNECTIONS_PER_ADDRESS: 100,
    METRICS_HOST: '127.0.0.1',
    OTEL_TRACING: false,
    BODY_LIMIT: 1048576,
    LOG_LEVEL: 'info'
  })
})

t.test('environment strings become typed values', async (t) => {
  const config = loadConfig({
    PORT: '9000',
    DATABASE_URL: 'postgresql://u@127.0.0.1:5432/db',
    SECRET_KEY: 'a-secret-key-of-at-least-32-bytes',
    BACKEND_CORS_ORIGINS: 'http://localhost:3000, https://app.example.com,',
    CREATE_TABLES_ON_STARTUP: 'false',
    RESOURCES: 'records,notes',
    LOGIN_MAX_FAILURES: '0',
    LOG_LEVEL: 'warn'
  })
  t.equal(config.PORT, 9000)
  t.equal(config.DATABASE_URL, 'postgresql://u@127.0.0.1:5432/db')
  t.equal(config.SECRET_KEY, 'a-secret-key-of-at-least-32-bytes')
  t.same(config.BACKEND_CORS_ORIGINS, ['http://localhost:3000', 'https://app.example.com'])
  t.equal(config.CREATE_TABLES_ON_STARTUP, false)
  t.same(config.RESOURCES, ['records', 'notes'])
  t.equal(config.LOGIN_MAX_FAILURES, 0)
  t.equal(config.LOG_LEVEL, 'warn')
})

t.test('booleans accept true/false/1/0/yes/no in any case', async (t) => {
  for (const [raw, value] of [['true', true], ['1', true], ['YES', true], ['False', false], ['0', false], ['no', false]] as const) {
    t.equal(loadConfig({ CREATE_TABLES_ON_STARTUP: raw }).CREATE_TABLES_ON_STARTUP, value, raw)
  }
})

t.test('an empty variable counts as unset', async (t) => {
  const config = loadConfig({ SECRET_KEY: '', PORT: ' ' })
  t.equal(config.SECRET_KEY, undefined)
  t.equal(config.PORT, 8000)
})

t.test('every database URL scheme is accepted', async (t) => {
  for (const url of ['postgres://h/db', 'postgresql://h/db', 'pglite://./x', 'memory://']) {
    t.equal(loadConfig({ DATABASE_URL: url }).DATABASE_URL, url)
  }
})

t.test('a bad value stops the start with one line naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'abc' }, /^PORT must be an integer \(got "abc"\)$/],
    [{ PORT: '70000' }, /^PORT: .*65535.*\(got 70000\)$/],
    [{ PORT: '80.5' }, /^PORT must be an integer/],
    [{ MAX_PAGE_LIMIT: '0' }, /^MAX_PAGE_LIMIT: .*1.*\(got 0\)$/],
    [{ DATABASE_URL: 'mysql://h/db' }, /^DATABASE_URL: must be a postgres:\/\/, postgresql:\/\/, pglite:\/\/PATH or memory:\/\/ URL \(got "mysql:\/\/h\/db"\)$/],
    [{ CREATE_TABLES_ON_STARTUP: 'maybe' }, /^CREATE_TABLES_ON_STARTUP must be one of true\/false\/1\/0\/yes\/no \(got "maybe"\)$/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent \(got "loud"\)$/],
    [{ WORKERS: '0' }, /^WORKERS: /],
    [{ RESOURCES: 'Bad-Name' }, /^RESOURCES: must be a comma-separated list of lower-case identifiers/],
    [{ RESOURCES: 'notes,users' }, /^RESOURCES: "users" is a table of the service \(.*items.*\); choose another name$/],
    [{ BACKEND_CORS_ORIGINS: 'localhost:3000' }, /^BACKEND_CORS_ORIGINS: must be a comma-separated list of origins/],
    [{ DEFAULT_PAGE_LIMIT: '50', MAX_PAGE_LIMIT: '10' }, /^DEFAULT_PAGE_LIMIT \(50\) must not exceed MAX_PAGE_LIMIT \(10\)$/]
  ]
  for (const [env, message] of cases) {
    const error = t.throws(() => loadConfig(env), ConfigError, JSON.stringify(env)) as Error
    t.match(error.message, message, JSON.stringify(env))
    t.notMatch(error.message, /\n/, 'one line')
  }
})

t.test('a SECRET_KEY shorter than 32 bytes stops the start, naming SECRET_KEY but not the key', async (t) => {
  for (const key of ['a', 'change-me', 'x'.repeat(31)]) {
    const error = t.throws(() => loadConfig({ SECRET_KEY: key }), ConfigError) as Error
    t.equal(error.message, `SECRET_KEY: must be at least 32 bytes (got ${key.length}); plinth secret generate prints a new one`)
  }
  t.throws(() => resolveConfig({ SECRET_KEY: 'a' }), /^SECRET_KEY: must be at least 32 bytes/, 'settings passed to buildApp too')
  t.equal(loadConfig({ SECRET_KEY: 'x'.repeat(32) }).SECRET_KEY, 'x'.repeat(32))
  t.equal(loadConfig({ SECRET_KEY: '\u00e9'.repeat(16) }).SECRET_KEY, '\u00e9'.repeat(16), 'bytes, not characters: 16 of 2 bytes each')
  t.equal(loadConfig({}).SECRET_KEY, undefined, 'unset stays allowed: a random key per process, with a warning')
})

t.test('resolveConfig takes typed settings and fills in defaults', async (t) => {
  const config = resolveConfig({ MAX_PAGE_LIMIT: 5, DEFAULT_PAGE_LIMIT: 5 })
  t.equal(config.MAX_PAGE_LIMIT, 5)
  t.equal(config.PORT, 8000)
  t.throws(() => resolveConfig({ PORT: -1 }), /^PORT: /)
})

t.test('a configuration error shows a URL without its password', async (t) => {
  const cases: Array<[Record<string, string>, string]> = [
    [{ DATABASE_URL: 'mysql://admin:pw-s3cret@db.example.com/app' }, '(got "mysql://admin:***@db.example.com/app")'],
    // An unencoded "@", "/" or "#" in the password: everything up to the host's "@" is hidden.
    [{ DATABASE_URL: 'mysql://admin:pw@s3c/r#et@db.example.com/app' }, '(got "mysql://admin:***@db.example.com/app")'],
    [{ DATABASE_URL: 'mysql://admin:pw s3cret@db.example.com/app' }, '(got "mysql://admin:***@db.example.com/app")'],
    [{ SMTP_URL: 'smtp2://mailer:pw-s3cret@smtp.example.com' }, '(got "smtp2://mailer:***@smtp.example.com")'],
    [{ PORT: 'http://admin:pw-s3cret@example.com' }, '(got "http://admin:***@example.com")']
  ]
  for (const [env, got] of cases) {
    const error = t.throws(() => loadConfig(env), ConfigError) as Error
    t.ok(error.message.endsWith(got), error.message)
    t.notMatch(error.message, /s3c/)
  }
})

t.test('DATABASE_URL=pglite:// without a folder is refused; memory:// is the database in memory', async (t) => {
  for (const url of ['pglite://', 'pglite://  ']) {
    t.throws(() => loadConfig({ DATABASE_URL: url }), {
      message: 'DATABASE_URL: pglite:// needs the path of a folder, such as pglite://./data/pglite; memory:// is a database in memory, lost at exit'
    }, JSON.stringify(url))
  }
  t.equal(loadConfig({ DATABASE_URL: 'memory://' }).DATABASE_URL, 'memory://')
})

t.test('checkSigningKeys refuses a missing or unfit key, naming the variable to fix', async (t) => {
  const ed = JSON.stringify(generateKey('EdDSA'))
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ JWT_ALGORITHM: 'EdDSA' }, /^JWT_ALGORITHM: EdDSA needs a privateKey \(JWT_PRIVATE_KEY or JWT_PRIVATE_KEY_FILE\)/],
    [{ JWT_PRIVATE_KEY: ed }, /^JWT_ALGORITHM: privateKey and previousKeys are for EdDSA and ES256/],
    [{ JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEY: ed }, /^JWT_PRIVATE_KEY: privateKey is not an EC key on P-256/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: ed, JWT_PREVIOUS_KEYS: 'not json' }, /^JWT_PREVIOUS_KEYS: previousKeys must be a JWK Set/]
  ]
  for (const [env, message] of cases) {
    t.throws(() => checkSigningKeys(loadConfig(env)), { code: 'PLINTH_INVALID_CONFIG', message }, Object.keys(env).join(','))
  }
  const dir = await mkdtemp('/tmp/plinth-config-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'key.pem')
  await writeFile(file, 'not a key')
  t.throws(() => checkSigningKeys(loadConfig({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY_FILE: file })), { message: /^JWT_PRIVATE_KEY_FILE: privateKey is not a PEM or JWK key/ })
  t.doesNotThrow(() => checkSigningKeys(loadConfig({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: ed })))
  t.doesNotThrow(() => checkSigningKeys(loadConfig({})), 'HS256 without SECRET_KEY: a random key, with a warning')
})

// docs/configuration.md is the reference a user reads: it must say what ConfigSchema does.
const docs = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8')
const section = (title: string) => docs.slice(docs.indexOf(`## ${title}\n`)).split(/\n## /)[0]!
const properties = ConfigSchema.properties as Record<string, TSchema>

/** The rows of the table of variables: each variable a row names, with the default and the range each is given there. */
function documented (): Array<{ name: string, fallback: string, range: string }> {
  return section('Variables').split('\n').filter((line) => line.startsWith('| `')).flatMap((line) => {
    const [names = '', defaults = '', ranges = ''] = line.slice(2).split(' | ')
    const variables = [...names.matchAll(/`([A-Z0-9_]+)`/g)].map((match) => match[1]!)
    const each = (cell: string, i: number) => {
      const parts = cell.split(' / ')
      return parts.length === variables.length ? parts[i]! : cell
    }
    return variables.map((name, i) => ({ name, fallback: each(defaults, i), range: each(ranges, i) }))
  })
}

/** A schema default as the table writes it. */
const shown = (value: unknown) => Array.isArray(value) ? (value.length === 0 ? 'empty' : `\`${value.join(',')}\``) : `\`${String(value)}\``

/** An integer's bounds as the table writes them: `1 to 600`, or `at least 0` up to PostgreSQL's integer; `-` for others. */
function rangeOf (schema: TSchema): string {
  if (schema.type !== 'integer') return '-'
  return schema.maximum === PG_INT_MAX ? `at least ${schema.minimum}` : `${schema.minimum} to ${schema.maximum}`
}

t.test('docs/configuration.md lists every setting of ConfigSchema, and no other, with its default and its range', async (t) => {
  const rows = documented()
  t.same(rows.map(({ name }) => name).sort(), Object.keys(properties).sort(), 'the same variables')
  for (const { name, fallback, range } of rows) {
    const schema = properties[name]!
    if (schema.default === undefined) t.notMatch(fallback, /^`[^`]*`$/, `${name}: no default, so none is shown`)
    else t.ok(fallback.startsWith(shown(schema.default)), `${name}: ${shown(schema.default)}`, { fallback })
    t.equal(range, rangeOf(schema), `${name}: range`)
  }
})

t.test('a variable that sets plugin options takes its default and bounds from the option, in its own unit', async (t) => {
  for (const [name, { options, scale }] of Object.entries(VARIABLES)) {
    const schema = properties[name]!
    t.equal(TARGETS[name as keyof typeof TARGETS].length >= options.length, true, `${name}: every option it names is in a plugin's schema`)
    for (const option of options) {
      const bound = (value: unknown) => typeof value === 'number' ? value / scale : value
      const { minimum, maximum } = option as { minimum?: number, maximum?: number }
      if (minimum !== undefined) t.equal(schema.minimum, Math.ceil(minimum / scale), `${name}: minimum`)
      if (maximum !== undefined) t.equal(schema.maximum, Math.floor(maximum / scale), `${name}: maximum`)
      const fallback = option.default ?? (option as { fallback?: unknown }).fallback
      if (fallback !== undefined && schema.default !== undefined) t.same(schema.default, bound(fallback), `${name}: default`)
    }
  }
})

t.test('the options of an empty environment are the plugins\' defaults', async (t) => {
  const options = optionsOf(loadConfig({}), readSettingFiles(loadConfig({})))
  for (const [plugin, schema] of Object.entries(PLUGIN_SCHEMAS)) {
    const given = options[plugin as keyof typeof options] as Record<string, unknown>
    for (const [key, value] of Object.entries(given)) {
      const option = (schema.properties as Record<string, TSchema>)[key]!
      const fallback = option.default ?? (option as { fallback?: unknown }).fallback
      if (fallback !== undefined && option.type !== 'object') t.same(value, fallback, `${plugin}.${key}`)
    }
  }
})

t.test('EVENTS_RETENTION_HOURS is the change feed\'s retention, within its bounds', async (t) => {
  t.equal(optionsOf(loadConfig({ EVENTS_RETENTION_HOURS: '48' }), readSettingFiles(loadConfig({}))).changes.retentionHours, 48)
  t.throws(() => loadConfig({ EVENTS_RETENTION_HOURS: '0' }), { code: 'PLINTH_INVALID_CONFIG', message: /EVENTS_RETENTION_HOURS/ })
})

t.test('EVENTS_MAX_EVENTS and EVENTS_PURGE_INTERVAL_SECONDS are the change feed\'s, within their bounds', async (t) => {
  const { changes } = optionsOf(loadConfig({ EVENTS_MAX_EVENTS: '5000', EVENTS_PURGE_INTERVAL_SECONDS: '30' }), readSettingFiles(loadConfig({})))
  t.match(changes, { maxEvents: 5000, purgeIntervalMs: 30_000 })
  t.throws(() => loadConfig({ EVENTS_MAX_EVENTS: '999' }), { code: 'PLINTH_INVALID_CONFIG', message: /^EVENTS_MAX_EVENTS: .*1000.*\(got 999\)$/ })
  t.throws(() => loadConfig({ EVENTS_PURGE_INTERVAL_SECONDS: '0' }), { code: 'PLINTH_INVALID_CONFIG', message: /^EVENTS_PURGE_INTERVAL_SECONDS: / })
  t.throws(() => loadConfig({ EVENTS_PURGE_INTERVAL_SECONDS: '86401' }), { code: 'PLINTH_INVALID_CONFIG', message: /^EVENTS_PURGE_INTERVAL_SECONDS: .*86400/ })
})

t.test('the server\'s feed keeps the newest EVENTS_MAX_EVENTS, purged every EVENTS_PURGE_INTERVAL_SECONDS', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-config-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'resources.json')
  await writeFile(file, JSON.stringify({ notes: { fields: { type: 'object', properties: { n: { type: 'integer' } } } } }))
  const app = await build(t, { RESOURCES_FILE: file, EVENTS_MAX_EVENTS: 1000, EVENTS_PURGE_INTERVAL_SECONDS: 1 })
  const { db } = app.plinthDb
  await db.execute(sql`insert into notes (n) select g from generate_series(1, 1500) g`)
  const count = async () => rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from resource_events`))[0]!.n
  t.equal(await count(), 1500, 'one event per row written')
  // The default interval is a minute: within 20 s only the setting can have run the purge.
  const purged = await untilAnswered('the purge to keep 1000 events', async () => (await count()) === 1000 ? true : undefined, 20_000)
  t.equal(purged, true, 'the oldest 500 are gone')
})

t.test('EVENTS_MAX_STREAMS_PER_ACCOUNT and _PER_ADDRESS are the change feed\'s caps on open streams, within their bounds', async (t) => {
  const settings = loadConfig({ EVENTS_MAX_STREAMS_PER_ACCOUNT: '5', EVENTS_MAX_STREAMS_PER_ADDRESS: '0' })
  t.match(optionsOf(settings, readSettingFiles(settings)).changes, { maxStreamsPerAccount: 5, maxStreamsPerAddress: 0 })
  t.throws(() => loadConfig({ EVENTS_MAX_STREAMS_PER_ACCOUNT: '-1' }), { code: 'PLINTH_INVALID_CONFIG', message: /EVENTS_MAX_STREAMS_PER_ACCOUNT/ })
  t.throws(() => loadConfig({ EVENTS_MAX_STREAMS_PER_ADDRESS: '100001' }), { code: 'PLINTH_INVALID_CONFIG', message: /EVENTS_MAX_STREAMS_PER_ADDRESS/ })
})

t.test('resolveConfig reads no file; readSettingFiles reads each once, with the same errors', async (t) => {
  const absent = { RESOURCES_FILE: '/nonexistent/resources.json', MAIL_TEMPLATES_DIR: '/nonexistent/templates' }
  const config = loadConfig(absent)
  t.equal(config.RESOURCES_FILE, absent.RESOURCES_FILE)
  t.throws(() => readSettingFiles(config), { code: 'PLINTH_INVALID_CONFIG', message: /^RESOURCES_FILE \/nonexistent\/resources.json: ENOENT/ })
  t.throws(() => readSettingFiles(loadConfig({ MAIL_TEMPLATES_DIR: absent.MAIL_TEMPLATES_DIR })), {
    code: 'PLINTH_INVALID_CONFIG', message: 'MAIL_TEMPLATES_DIR /nonexistent/templates: no such folder'
  })
  t.same(readSettingFiles(loadConfig({})), { resources: [], privateKey: undefined, templates: {} })
})

t.test('docs/configuration.md names every boolean, and only those, where it says how booleans are written', async (t) => {
  const list = /Booleans \(([^)]*)\) accept/.exec(section('Booleans'))?.[1] ?? ''
  const named = [...list.matchAll(/`([A-Z0-9_]+)`/g)].map((match) => match[1])
  const booleans = Object.entries(properties).filter(([, schema]) => schema.type === 'boolean').map(([name]) => name)
  t.same(named.sort(), booleans.sort())
})

t.test('every environment variable the product reads beside config.ts is in docs/configuration.md', async (t) => {
  const root = new URL('../', import.meta.url)
  const tooling = new Set(['node_modules', 'dist', 'build', 'test', 'bench', 'scripts', 'client', 'data'])
  const top = readdirSync(root, { withFileTypes: true }).filter((entry) => !entry.name.startsWith('.') && !tooling.has(entry.name))
  const sources = top.flatMap((entry) => entry.isDirectory()
    ? readdirSync(new URL(`${entry.name}/`, root), { recursive: true }).map((file) => `${entry.name}/${String(file)}`)
    : [entry.name]).filter((file) => file.endsWith('.ts') && file !== 'config.ts')
  const read = sources.flatMap((file) => [...readFileSync(new URL(file, root), 'utf8').matchAll(/process\.env\.([A-Z0-9_]+)/g)].map((match) => [file, match[1]!]))
  t.ok(read.length > 0, 'tracing reads OpenTelemetry\'s own variables')
  for (const [file, name] of read) t.match(docs, `\`${name}\``, `${name}, read in ${file}`)
})
