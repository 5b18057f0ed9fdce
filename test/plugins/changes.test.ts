import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import Fastify from 'fastify'
import t from 'tap'
import { API_PREFIX } from '../../app.js'
import { ConfigError, loadConfig, optionsOf } from '../../config.js'
import { connect } from '../../db/client.js'
import changes from '../../plugins/changes.js'
import dbPlugin from '../../plugins/db.js'
import resourcePlugin from '../../routes/resources/index.js'
import { readSettingFiles } from '../../settings/files.js'
import { build } from '../support/app.js'
import { TEST_DATABASE_URL, freshDatabase, freshPostgresUrl, rowsOf, connectTo, listenUrlOf } from '../support/database.js'
import { buildResources } from '../support/resources.js'
import { collector } from '../support/change-collector.js'

const TaskFields = Type.Object({
  title: Type.String(),
  done: Type.Boolean({ default: false }),
  secret: Type.Optional(Type.String({ writeOnly: true }))
})

const TASKS = `${API_PREFIX}/tasks`

t.test('a resource with fields feeds plinthChanges: created, updated and deleted, with the row as the API shows it', async (t) => {
  const app = await buildResources(t, [{ name: 'tasks', fields: TaskFields }])
  await app.ready()
  const seen = collector()
  const unsubscribe = app.plinthChanges.subscribe('tasks', seen.listener)
  await app.plinthChanges.ready()

  const created = await app.inject({ method: 'POST', url: `${TASKS}/`, payload: { title: 'write the feed', secret: 'hunter2' } })
  t.equal(created.statusCode, 201)
  const id = created.json().id as number
  const patched = await app.inject({ method: 'PATCH', url: `${TASKS}/${id}`, payload: { done: true } })
  t.equal(patched.statusCode, 200)
  const deleted = await app.inject({ method: 'DELETE', url: `${TASKS}/${id}` })
  t.equal(deleted.statusCode, 204)
  await seen.until(3)
  unsubscribe()

  t.same(seen.events.map(({ op, rowId, table, ownerId }) => ({ op, rowId, table, ownerId })), [
    { op: 'created', rowId: id, table: 'tasks', ownerId: null },
    { op: 'updated', rowId: id, table: 'tasks', ownerId: null },
    { op: 'deleted', rowId: id, table: 'tasks', ownerId: null }
  ])
  t.same(JSON.parse(seen.events[0]!.row), created.json(), 'created: the body POST answered')
  t.same(JSON.parse(seen.events[1]!.row), patched.json(), 'updated: the body PATCH answered')
  t.same(JSON.parse(seen.events[2]!.row), patched.json(), 'deleted: the row as it last was')
  t.notOk(seen.events.some((event) => event.row.includes('hunter2')), 'no writeOnly value')
  t.equal(app.plinthChanges.position(), seen.events[2]!.id)
})

t.test('a resource whose events route is off logs nothing, and mounts no feed', async (t) => {
  const app = await buildResources(t, [{ name: 'quiet', fields: TaskFields, routes: { events: false } }])
  await app.ready()
  t.equal(app.hasDecorator('plinthChanges'), false)
  t.equal((await app.inject({ method: 'POST', url: `${API_PREFIX}/quiet/`, payload: { title: 'x' } })).statusCode, 201)
  const [count] = rowsOf<{ n: number }>(await app.plinthDb.db.execute(sql`select count(*)::int as n from resource_events`))
  t.equal(count!.n, 0)
  const [triggers] = rowsOf<{ n: number }>(await app.plinthDb.db.execute(sql`select count(*)::int as n from pg_trigger where tgrelid = 'quiet'::regclass and not tgisinternal`))
  t.equal(triggers!.n, 0, 'no trigger on its table')
})

t.test('switching the events route off drops the trigger a previous boot made', async (t) => {
  const database = await freshDatabase(t)
  const boot = async (events: boolean) => {
    const app = await build(t, { RESOURCES: [] }, { database })
    await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'toggled', fields: TaskFields, routes: { events } })
    await app.ready()
    await app.close()
  }
  const triggers = async () => rowsOf<{ n: number }>(await database.db.execute(sql`
    select count(*)::int as n from pg_trigger where tgrelid = 'toggled'::regclass and not tgisinternal`))[0]!.n
  await boot(true)
  t.equal(await triggers(), 3)
  await boot(false)
  t.equal(await triggers(), 0)
  await boot(true)
  t.equal(await triggers(), 3, 'and on again')
})

t.test('the records preset has no trigger', async (t) => {
  const app = await buildResources(t, ['records'])
  await app.ready()
  t.equal((await app.inject({ method: 'POST', url: `${API_PREFIX}/records/`, payload: { title: 'r' } })).statusCode, 201)
  const [count] = rowsOf<{ n: number }>(await app.plinthDb.db.execute(sql`select count(*)::int as n from resource_events`))
  t.equal(count!.n, 0)
})

t.test('a host registers the feed itself, with its own options, before the resources: they use it', async (t) => {
  const app = await build(t, { RESOURCES: [] })
  await app.register(changes, { retentionHours: 1, pollIntervalMs: 200 })
  const feed = app.plinthChanges
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'notes', fields: TaskFields })
  await app.ready()
  t.equal(app.plinthChanges, feed, 'one feed for every resource')
})

t.test('bad options stop the boot, naming the option', async (t) => {
  for (const [options, message] of [
    [{ retentionHours: 0 }, 'changes plugin: retentionHours must be an integer from 1 to 8760 (got 0)'],
    [{ pollIntervalMs: 'soon' }, 'changes plugin: pollIntervalMs must be an integer from 10 to 60000 (got "soon")'],
    [{ maxEvents: 10 }, 'changes plugin: maxEvents must be an integer from 1000 to 2147483647 (got 10)']
  ] as const) {
    const app = await build(t, { RESOURCES: [] })
    await t.rejects(async () => { await app.register(changes, options as never).ready() }, { code: 'CHANGES_INVALID_OPTIONS', message }, message)
  }
})

t.test('DATABASE_LISTEN_URL: a postgres URL, for PostgreSQL only, handed to the db plugin', async (t) => {
  const listen = 'postgres://plinth:secret@db-direct:5432/app'
  const config = loadConfig({ DATABASE_URL: 'postgres://plinth:secret@pgbouncer:6432/app', DATABASE_LISTEN_URL: listen })
  t.equal(optionsOf(config, readSettingFiles(config)).db.listenUrl, listen)
  const unset = loadConfig({ DATABASE_URL: 'postgres://plinth@db/app' })
  t.notOk('listenUrl' in optionsOf(unset, readSettingFiles(unset)).db, 'unset: LISTEN goes where DATABASE_URL does')
  t.throws(() => loadConfig({ DATABASE_LISTEN_URL: listen }), new ConfigError(
    'DATABASE_LISTEN_URL is set but DATABASE_URL is not PostgreSQL: PGlite listens in its own process; unset it'))
  const error = t.throws(() => loadConfig({ DATABASE_URL: 'postgres://db/app', DATABASE_LISTEN_URL: 'mysql://root:hunter2@db/app' })) as Error
  t.match(error.message, /^DATABASE_LISTEN_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/)
  t.notOk(error.message.includes('hunter2'), 'the password is not printed')
})

t.test('the db plugin refuses a listenUrl it cannot use', async (t) => {
  const database = await freshDatabase(t)
  const refused = async (options: Record<string, unknown>) => {
    const app = Fastify({ logger: false })
    t.teardown(() => app.close())
    await app.register(dbPlugin, { client: database, migrate: false, ...options } as never).ready()
  }
  await t.rejects(refused({ listenUrl: 'mysql://root:hunter2@db/app' }), {
    code: 'DB_INVALID_OPTIONS', message: 'db plugin: listenUrl must be a postgres:// or postgresql:// URL (got "mysql://root:***@db/app")'
  })
  if (database.driver === 'pglite') {
    await t.rejects(refused({ listenUrl: 'postgres://db/app' }), { code: 'DB_INVALID_OPTIONS', message: 'db plugin: listenUrl is for PostgreSQL: PGlite listens in its own process' })
    await t.rejects(connect('memory://', { listenUrl: 'postgres://db/app' }), { message: 'a listen URL is for PostgreSQL: PGlite listens in its own process' })
  }
})

t.test('with DATABASE_LISTEN_URL, the feed listens there, and hears writes made through DATABASE_URL', { skip: !TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, async (t) => {
  const url = await freshPostgresUrl(t)
  const database = await connectTo(url)
  t.teardown(() => database.close())
  // The server itself, past the suite's transaction pooler if it runs through one.
  const listenUrl = new URL(listenUrlOf(url) ?? url)
  listenUrl.searchParams.set('application_name', 'plinth_direct')
  const app = await build(t, { DATABASE_URL: url, DATABASE_LISTEN_URL: listenUrl.toString(), RESOURCES: [] }, { database })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields })
  await app.ready()
  const seen = collector()
  app.plinthChanges.subscribe('tasks', seen.listener)
  await app.plinthChanges.ready()
  const [listener] = rowsOf<{ query: string }>(await database.db.execute(sql`
    select query from pg_stat_activity where datname = current_database() and application_name = 'plinth_direct'`))
  t.equal(listener?.query, 'listen "plinth_resource_events"', 'the LISTEN is on the listen URL\'s connection')
  t.equal((await app.inject({ method: 'POST', url: `${TASKS}/`, payload: { title: 'through the pool' } })).statusCode, 201)
  await seen.until(1)
  t.equal(JSON.parse(seen.events[0]!.row).title, 'through the pool')
})
