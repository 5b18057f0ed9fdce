import { sql } from 'drizzle-orm'
import Fastify from 'fastify'
import postgres from 'postgres'
import t, { type Test } from 'tap'
import { loadConfig, ConfigError, optionsOf } from '../../config.js'
import { WITHOUT_STATEMENT_TIMEOUT, type ConnectOptions, type DatabaseClient } from '../../db/client.js'
import dbPlugin from '../../plugins/db.js'
import { readSettingFiles } from '../../settings/files.js'
import { build } from '../support/app.js'
import { TEST_DATABASE_URL, TEST_POOL_MODE, connectTo, freshPostgresUrl, rawOptions, rowsOf } from '../support/database.js'

const PG = TEST_DATABASE_URL ? false : 'PostgreSQL only: PGlite cannot interrupt a statement'
const BOUND_MS = 300

t.test('DATABASE_STATEMENT_TIMEOUT_MS reaches the db plugin, 5000 by default, and a bound out of range stops the boot', async (t) => {
  t.equal(optionsOf(loadConfig({}), readSettingFiles(loadConfig({}))).db.statementTimeoutMs, 5000)
  const config = loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '250' })
  t.equal(optionsOf(config, readSettingFiles(config)).db.statementTimeoutMs, 250)
  for (const value of ['0', '99', '3600001', 'soon']) {
    t.throws(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: value }), ConfigError, value)
  }
  for (const value of [0, 99.5, 3_600_001, '5000', null]) {
    const app = Fastify()
    t.teardown(() => app.close())
    app.register(dbPlugin, { url: 'memory://', migrate: false, statementTimeoutMs: value as never })
    await t.rejects(async () => app.ready(), { code: 'DB_INVALID_OPTIONS', message: /^db plugin: statementTimeoutMs must be an integer from 100 to 3600000/ }, String(value))
  }
})

/** A client of a new database bounded at BOUND_MS, as `mode` reaches it. */
async function boundedClient (t: Test, mode: string): Promise<DatabaseClient> {
  const url = new URL(await freshPostgresUrl(t))
  // A startup option of the URL's own takes the place of plinth's, as a pooler that drops startup options does.
  if (mode === 'session pooling, startup option dropped') url.searchParams.set('options', '-c application_name=plinth')
  const options: ConnectOptions = { statementTimeoutMs: BOUND_MS, poolMode: mode === 'transaction pooling' ? 'transaction' : 'session' }
  const client = await connectTo(url.toString(), options)
  t.teardown(() => client.close())
  await client.migrate()
  return client
}

const MODES = ['session pooling', 'session pooling, startup option dropped', 'transaction pooling']

for (const mode of MODES) {
  t.test(`${mode}: a statement past the timeout is cancelled, inside a transaction or not, and the pool goes on`, { skip: PG }, async (t) => {
    const client = await boundedClient(t, mode)
    const { db } = client
    await t.rejects(db.execute(sql`select pg_sleep(30)`), { cause: { code: '57014' } }, 'a statement alone')
    await t.rejects(db.transaction((tx) => tx.execute(sql`select pg_sleep(30)`)), { cause: { code: '57014' } }, 'a statement in a transaction')
    t.same(rowsOf(await db.execute(sql`select 1 as one`)), [{ one: 1 }], 'the connection serves the next statement')
    const lifted = await db.transaction(async (tx) => {
      await tx.execute(WITHOUT_STATEMENT_TIMEOUT)
      return rowsOf(await tx.execute(sql`select pg_sleep(${BOUND_MS * 2 / 1000}) is null as slept`))
    })
    t.same(lifted, [{ slept: false }], 'maintenance work lifts the bound for its own transaction')
    await t.rejects(db.execute(sql`select pg_sleep(30)`), { cause: { code: '57014' } }, 'and only there')
  })
}

t.test('where the connections have the bound (a role\'s or database\'s default), no statement is wrapped in a transaction', { skip: PG }, async (t) => {
  // In a transaction that began before it, a statement starts later than its transaction.
  const wrapped = async (client: DatabaseClient) => rowsOf<{ wrapped: boolean }>(await client.db.execute(sql`select now() <> statement_timestamp() as wrapped`))[0]!.wrapped
  const cases: Array<[string, ConnectOptions['poolMode'], boolean, boolean]> = [
    // The pooled suite's PgBouncer drops the startup option: there the statements are wrapped.
    ['session pooling', 'session', false, TEST_POOL_MODE === 'transaction'],
    ['transaction pooling', 'transaction', false, true],
    ['transaction pooling, the database\'s default', 'transaction', true, false]
  ]
  for (const [name, poolMode, defaulted, expected] of cases) {
    const url = await freshPostgresUrl(t)
    if (defaulted) {
      // From another database: a pooler's connection to this one, opened now, would not have the default.
      const owner = postgres(TEST_DATABASE_URL!, rawOptions)
      await owner.unsafe(`alter database ${new URL(url).pathname.slice(1)} set statement_timeout = ${BOUND_MS}`)
      await owner.end()
    }
    const client = await connectTo(url, { statementTimeoutMs: BOUND_MS, poolMode })
    t.teardown(() => client.close())
    t.equal(await wrapped(client), expected, name)
    await t.rejects(client.db.execute(sql`select pg_sleep(30)`), { cause: { code: '57014' } }, `${name}: bounded either way`)
  }
})

t.test('the request whose statement passes the timeout answers 503 with Retry-After; the others on the pool are served', { skip: PG }, async (t) => {
  for (const mode of MODES) {
    const client = await boundedClient(t, mode)
    const app = await build(t, { RESOURCES: ['records'] }, { database: client })
    await app.ready()
    // A lock held elsewhere: a list of the catalog waits on it until the timeout cancels the wait.
    const locker = postgres(urlOf(client), rawOptions)
    t.teardown(() => locker.end())
    const release = await holdLock(locker, 'items')
    const stuck = app.inject({ method: 'GET', url: '/api/v1/items' })
    const others = await Promise.all(Array.from({ length: 5 }, () => app.inject({ method: 'GET', url: '/api/v1/health/ready' })))
    t.same(others.map((res) => res.statusCode), [200, 200, 200, 200, 200], `${mode}: other requests are served meanwhile`)
    const res = await stuck
    t.equal(res.statusCode, 503, mode)
    t.equal(res.headers['retry-after'], '5')
    t.match(res.json(), {
      code: 'DATABASE_STATEMENT_TIMEOUT',
      detail: `A statement of this request ran past the statement timeout of ${BOUND_MS} ms and was cancelled; ask for less (a filter, a smaller limit) or try again shortly`
    })
    await release()
    t.equal((await app.inject({ method: 'GET', url: '/api/v1/items' })).statusCode, 200, `${mode}: the same request, once the lock is gone`)
  }
})

t.test('the db plugin bounds the clients it opens', { skip: PG }, async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(dbPlugin, { url: await freshPostgresUrl(t), statementTimeoutMs: BOUND_MS }).ready()
  t.equal(app.plinthDb.statementTimeoutMs, BOUND_MS)
  t.same(rowsOf(await app.plinthDb.db.execute(sql`select current_setting('statement_timeout') as value`)), [{ value: `${BOUND_MS}ms` }])
  await t.rejects(app.plinthDb.db.execute(sql`select pg_sleep(30)`), { cause: { code: '57014' } })
})

t.test('PGlite takes the setting but cannot interrupt a statement: it runs to its end', { skip: !PG && 'PGlite only' }, async (t) => {
  // A cold in-memory PGlite can take longer than Fastify's default 10 s plugin timeout.
  const app = Fastify({ pluginTimeout: 120_000 })
  t.teardown(() => app.close())
  await app.register(dbPlugin, { url: 'memory://', migrate: false, statementTimeoutMs: 100 }).ready()
  t.equal(app.plinthDb.statementTimeoutMs, undefined, 'no bound is claimed')
  const slept = await app.plinthDb.db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('statement_timeout', '100', true)`)
    return rowsOf(await tx.execute(sql`select pg_sleep(0.3) is null as slept`))
  })
  t.same(slept, [{ slept: false }], 'PGlite\'s own statement_timeout never fires')
})

const urlOf = (client: DatabaseClient) => {
  const { host, port, database, user } = ((client.db as unknown as { $client: { options: { host: string[], port: number[], database: string, user: string } } }).$client.options)
  return `postgres://${user}@${host[0]}:${port[0]}/${database}`
}

/** Takes `table`'s strongest lock in an open transaction; the answer releases it. */
async function holdLock (locker: postgres.Sql, table: string): Promise<() => Promise<void>> {
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  let locked!: () => void
  const held = new Promise<void>((resolve) => { locked = resolve })
  const transaction = locker.begin(async (tx) => {
    await tx.unsafe(`lock table ${table} in access exclusive mode`)
    locked()
    await released
  })
  await held
  return async () => { release(); await transaction }
}
