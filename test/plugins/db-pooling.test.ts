import Fastify from 'fastify'
import t from 'tap'
import { ConfigError, loadConfig, optionsOf } from '../../config.js'
import { connect } from '../../db/client.js'
import dbPlugin from '../../plugins/db.js'
import resourcePlugin from '../../routes/resources/index.js'
import { API_PREFIX } from '../../app.js'
import { readSettingFiles } from '../../settings/files.js'
import { build } from '../support/app.js'
import { collector } from '../support/change-collector.js'
import { TEST_DATABASE_URL, connectTo, freshDatabase, freshPostgresUrl } from '../support/database.js'
import { TaskFields } from '../support/tasks.js'

const PG = TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL'

t.test('DATABASE_POOL_MODE and DATABASE_REPLICA_URLS reach the db plugin, for PostgreSQL only', async (t) => {
  const config = loadConfig({
    DATABASE_URL: 'postgres://plinth@pgbouncer:6432/app',
    DATABASE_POOL_MODE: 'transaction',
    DATABASE_REPLICA_URLS: ' postgres://plinth@replica-a/app, postgres://plinth@replica-b/app',
    DATABASE_REPLICA_MAX_LAG_SECONDS: '3'
  })
  t.match(optionsOf(config, readSettingFiles(config)).db, {
    poolMode: 'transaction', replicaUrls: ['postgres://plinth@replica-a/app', 'postgres://plinth@replica-b/app'], replicaMaxLagSeconds: 3
  })
  t.throws(() => loadConfig({ DATABASE_POOL_MODE: 'transaction' }), new ConfigError(
    'DATABASE_POOL_MODE=transaction is for a PostgreSQL pooler: PGlite is one connection in this process; unset it'))
  t.throws(() => loadConfig({ DATABASE_REPLICA_URLS: 'postgres://replica/app' }), new ConfigError(
    'DATABASE_REPLICA_URLS is set but DATABASE_URL is not PostgreSQL: PGlite has no replicas; unset it'))
  t.throws(() => loadConfig({ DATABASE_URL: 'postgres://db/app', DATABASE_POOL_MODE: 'statement' }), /^DATABASE_POOL_MODE/)
  const error = t.throws(() => loadConfig({ DATABASE_URL: 'postgres://db/app', DATABASE_REPLICA_URLS: 'mysql://root:hunter2@replica/app' })) as Error
  t.match(error.message, /^DATABASE_REPLICA_URLS/)
  t.notOk(error.message.includes('hunter2'), 'the password is not printed')
  t.throws(() => loadConfig({ DATABASE_URL: 'postgres://db/app', DATABASE_REPLICA_MAX_LAG_SECONDS: '0' }), /^DATABASE_REPLICA_MAX_LAG_SECONDS/)
})

t.test('the db plugin refuses pool and replica options it cannot use, before any route is open', async (t) => {
  const database = await freshDatabase(t)
  const refused = async (options: Record<string, unknown>) => {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    await app.register(dbPlugin, { url: 'memory://', migrate: false, ...options } as never).ready()
  }
  const given = async (options: Record<string, unknown>) => {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    await app.register(dbPlugin, { client: database, migrate: false, ...options } as never).ready()
  }
  await t.rejects(refused({ poolMode: 'statement' }), { code: 'DB_INVALID_OPTIONS', message: 'db plugin: poolMode must be \'session\' or \'transaction\' (got "statement")' })
  await t.rejects(refused({ poolMode: 'transaction' }), { message: 'a pool mode is for PostgreSQL: PGlite is one connection in this process' })
  await t.rejects(given({ replicaUrls: ['mysql://root:hunter2@replica/app'] }), {
    code: 'DB_INVALID_OPTIONS', message: 'db plugin: replicaUrls must be postgres:// or postgresql:// URLs (got ["mysql://root:***@replica/app"])'
  })
  await t.rejects(given({ replicaUrls: 'postgres://replica/app' }), { code: 'DB_INVALID_OPTIONS', message: /^db plugin: replicaUrls must be postgres:\/\/ or postgresql:\/\/ URLs/ })
  await t.rejects(given({ replicaUrls: ['postgres://replica/app'], replicaMaxLagSeconds: 0 }), {
    code: 'DB_INVALID_OPTIONS', message: 'db plugin: replicaMaxLagSeconds must be a positive number (got 0)'
  })
  if (database.driver === 'pglite') {
    await t.rejects(given({ replicaUrls: ['postgres://replica/app'] }), { code: 'DB_INVALID_OPTIONS', message: 'db plugin: replicaUrls are for PostgreSQL: PGlite has no replicas' })
  }
  await t.rejects(connect('memory://', { poolMode: 'transaction' }), { message: 'a pool mode is for PostgreSQL: PGlite is one connection in this process' })
})

t.test('without a listen URL, a transaction-pooled feed listens nowhere and polls: it still delivers every write', { skip: PG }, async (t) => {
  const url = await freshPostgresUrl(t)
  const database = await connectTo(url, { poolMode: 'transaction', listenUrl: undefined })
  t.teardown(() => database.close())
  const app = await build(t, { DATABASE_URL: url, DATABASE_POOL_MODE: 'transaction', RESOURCES: [] }, { database })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields })
  await app.ready()
  t.equal(app.plinthDb.poolMode, 'transaction')
  const listening = await app.plinthDb.listen!('plinth_resource_events', () => t.fail('nothing listens'))
  t.equal(await listening.renew(), false, 'no LISTEN to renew: there is none through a transaction pooler')
  await listening.close()
  const seen = collector()
  app.plinthChanges.subscribe('tasks', seen.listener)
  await app.plinthChanges.ready()
  t.equal((await app.inject({ method: 'POST', url: `${API_PREFIX}/tasks/`, payload: { title: 'polled' } })).statusCode, 201)
  await seen.until(1)
  t.equal(JSON.parse(seen.events[0]!.row).title, 'polled', 'delivered by the poll')
})
