import Fastify from 'fastify'
import t from 'tap'
import { BUILT_IN_TABLES } from '../../../db/resources.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { resolveResourceOptions, type ResourceOptions } from '../../../routes/resources/options.js'

const REGISTER_AUTH = 'app.authenticate and app.requireScopes exist once authPlugin is registered: register it, awaited, before this plugin'
const IDENTIFIER = 'must be a lower-case identifier: a letter, then letters, digits or _, at most 63 characters'

t.test('the built-in tables come from db/schema.ts', async (t) => {
  for (const table of ['users', 'refresh_tokens', 'login_failures', 'items']) t.ok(BUILT_IN_TABLES.includes(table), table)
})

t.test('bad options fail with a message naming the option', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{}, `resource plugin: name ${IDENTIFIER} (got undefined)`],
    [{ name: 'Records' }, `resource plugin: name ${IDENTIFIER} (got "Records")`],
    [{ name: '1records' }, `resource plugin: name ${IDENTIFIER} (got "1records")`],
    [{ name: 'my-records' }, `resource plugin: name ${IDENTIFIER} (got "my-records")`],
    [{ name: '_records' }, `resource plugin: name ${IDENTIFIER} (got "_records")`],
    [{ name: 'a'.repeat(64) }, `resource plugin: name ${IDENTIFIER} (got "${'a'.repeat(64)}")`],
    [{ name: 'records', table: 'Bad Table' }, `resource plugin: table ${IDENTIFIER} (got "Bad Table")`],
    [{ name: 'records', guard: 'authenticate' }, `resource plugin: "records": guard must be a function such as app.authenticate (got "authenticate"); ${REGISTER_AUTH}`],
    [{ name: 'records', guard: undefined }, `resource plugin: "records": guard must be a function such as app.authenticate (got undefined); ${REGISTER_AUTH}`],
    [{ name: 'records', guard: null }, `resource plugin: "records": guard must be a function such as app.authenticate (got null); ${REGISTER_AUTH}`],
    [{ name: 'records', routes: { remove: false } }, 'resource plugin: routes.remove is unknown: routes takes list, create, get, update, delete'],
    [{ name: 'records', routes: { delete: 'no' } }, 'resource plugin: routes.delete must be true or false (got "no")'],
    [{ name: 'records', routes: false }, 'resource plugin: routes must be an object such as { delete: false } (got false)'],
    [{ name: 'records', maxLimit: 0 }, 'resource plugin: maxLimit must be an integer from 1 to 2147483647 (got 0)'],
    [{ name: 'records', defaultLimit: 0 }, 'resource plugin: defaultLimit must be an integer from 1 to maxLimit (got 0)'],
    [{ name: 'records', defaultLimit: 11, maxLimit: 10 }, 'resource plugin: defaultLimit must be an integer from 1 to maxLimit (10) (got 11)'],
    [{ name: 'records', createTable: 'yes' }, 'resource plugin: createTable must be true or false (got "yes")']
  ]
  for (const [options, message] of cases) {
    const error = t.throws(() => resolveResourceOptions(options as ResourceOptions)) as Error & { code?: string }
    t.equal(error.message, message)
    t.equal(error.code, 'RESOURCE_INVALID_OPTIONS')
  }
})

t.test('no resource may use a table of the service, whatever its name', async (t) => {
  for (const table of BUILT_IN_TABLES) {
    const message = `resource plugin: the table "${table}" belongs to the service (${BUILT_IN_TABLES.join(', ')}); choose another name or a table option`
    t.equal((t.throws(() => resolveResourceOptions({ name: table })) as Error).message, message, table)
    t.equal((t.throws(() => resolveResourceOptions({ name: 'mine', table })) as Error).message, message, `mine in ${table}`)
  }
  t.equal(resolveResourceOptions({ name: 'users', table: 'people' }).table, 'people', 'the name alone is free; the table is what must not collide')
})

t.test('defaults: every route, a page of 100 up to 1000, the table named after the resource and created', async (t) => {
  const { guard, ...options } = resolveResourceOptions({ name: 'records' })
  t.equal(guard, undefined)
  t.same(options, {
    name: 'records',
    table: 'records',
    createTable: true,
    routes: { list: true, create: true, get: true, update: true, delete: true },
    defaultLimit: 100,
    maxLimit: 1000
  })
  t.equal(resolveResourceOptions({ name: 'records', maxLimit: 10 }).defaultLimit, 10, 'the default page never exceeds the maximum')
  t.same(resolveResourceOptions({ name: 'records', routes: { delete: false } }).routes, { list: true, create: true, get: true, update: true, delete: false })
})

t.test('a bad name fails the boot of the host app', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.register(resourcePlugin, { prefix: '/api/v1', name: 'Bad-Name' })
  await t.rejects(async () => app.ready(), { code: 'RESOURCE_INVALID_OPTIONS', message: `resource plugin: name ${IDENTIFIER} (got "Bad-Name")` })
})

t.test('a resource needs the db plugin, and says which resource at boot', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  app.register(resourcePlugin, { prefix: '/api/v1', name: 'notes' })
  await t.rejects(async () => app.ready(), /The dependency 'plinth-db' of plugin 'plinth-resource:notes' is not registered/)
})
