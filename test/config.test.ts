import t from 'tap'
import { ConfigError, loadConfig, resolveConfig } from '../config.js'

t.test('an empty environment gives the documented defaults', async (t) => {
  t.same(loadConfig({}), {
    HOST: '127.0.0.1',
    PORT: 8000,
    DATABASE_URL: 'pglite://./data/pglite',
    JWT_ALGORITHM: 'HS256',
    MAIL_FROM: 'plinth <no-reply@localhost>',
    MAIL_TIMEOUT_SECONDS: 10,
    RESET_TOKEN_EXPIRE_MINUTES: 30,
    VERIFY_TOKEN_EXPIRE_MINUTES: 1440,
    REQUIRE_VERIFIED_EMAIL: false,
    REQUIRE_IF_MATCH: false,
    IDEMPOTENCY_TTL_HOURS: 24,
    ACCESS_TOKEN_EXPIRE_MINUTES: 30,
    REFRESH_TOKEN_EXPIRE_DAYS: 14,
    BACKEND_CORS_ORIGINS: [],
    DEFAULT_PAGE_LIMIT: 20,
    MAX_PAGE_LIMIT: 100,
    CREATE_TABLES_ON_STARTUP: true,
    RESOURCES: ['records'],
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
