import { Type, type TProperties } from '@sinclair/typebox'
import Fastify from 'fastify'
import t from 'tap'
import { BUILT_IN_TABLES } from '../../../db/resources.js'
import resourcePlugin from '../../../routes/resources/index.js'
import { resolveResourceOptions, type ResourceOptions } from '../../../routes/resources/options.js'
import { SUPPORTED_FIELDS } from '../../../schemas/fields.js'

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
    [{ name: 'records', routes: { remove: false } }, 'resource plugin: routes.remove is unknown: routes takes list, create, get, update, delete, events'],
    [{ name: 'records', routes: { delete: 'no' } }, 'resource plugin: routes.delete must be true or false (got "no")'],
    [{ name: 'records', routes: false }, 'resource plugin: routes must be an object such as { delete: false } (got false)'],
    [{ name: 'records', maxLimit: 0 }, 'resource plugin: maxLimit must be an integer from 1 to 2147483647 (got 0)'],
    [{ name: 'records', defaultLimit: 0 }, 'resource plugin: defaultLimit must be an integer from 1 to maxLimit (got 0)'],
    [{ name: 'records', defaultLimit: 11, maxLimit: 10 }, 'resource plugin: defaultLimit must be an integer from 1 to maxLimit (10) (got 11)'],
    [{ name: 'records', createTable: 'yes' }, 'resource plugin: createTable must be true or false (got "yes")'],
    [{ name: 'records', guard: () => {}, guards: {} }, 'resource plugin: "records": give guard (every route) or guards ({ read, write }), not both'],
    [{ name: 'records', guards: { read: undefined } }, `resource plugin: "records": guards.read must be a function such as app.authenticate (got undefined); ${REGISTER_AUTH}`],
    [{ name: 'tasks', fields: Type.Object({ at: Type.Date() }) }, `resource plugin: "tasks": field "at": type "Date" is not supported; a field is ${SUPPORTED_FIELDS}`],
    [{ name: 'tasks', fields: Type.Object({ id: Type.Integer() }) }, 'resource plugin: "tasks": field "id": id, created_at, updated_at, owner_id are set by the server'],
    [{ name: 'tasks', fields: Type.Object({ sort: Type.String() }) }, 'resource plugin: "tasks": field "sort": limit, offset, sort, cursor, count are query parameters of the list'],
    [{ name: 'tasks', fields: Type.Object({ n: Type.Integer({ maximum: 2 ** 40 }) }) }, 'resource plugin: "tasks": field "n": integers are PostgreSQL integers, from -2147483648 to 2147483647; use a number for larger values'],
    [{ name: 'tasks', fields: Type.Object({ n: Type.Array(Type.Integer()) }) }, 'resource plugin: "tasks": field "n": an array field holds strings: items must be { type: "string" } with minLength, maxLength, pattern or enum'],
    [{ name: 'tasks', fields: Type.Object({ n: Type.String({ format: 'ipv4' }) }) }, 'resource plugin: "tasks": field "n": format ipv4 is not supported'],
    [{ name: 'tasks', fields: { type: 'object', properties: { n: { type: 'string', enum: [] } } } }, 'resource plugin: "tasks": field "n": enum must be a non-empty list of strings'],
    [{ name: 'tasks', fields: { type: 'object', properties: { n: { type: 'integer', multipleOf: 5 } } } }, 'resource plugin: "tasks": field "n": multipleOf is not supported on integer fields'],
    [{ name: 'tasks', fields: Type.Object({ 'Bad-Name': Type.String() }) }, 'resource plugin: "tasks": field "Bad-Name": a field name is a lower-case identifier: a letter, then letters, digits or _, at most 63 characters'],
    [{ name: 'tasks', fields: Type.Object({ n: Type.Union([Type.String(), Type.Integer()]) }) }, 'resource plugin: "tasks": field "n": type {"anyOf":[{"type":"string"},{"type":"integer"}]} is not supported; a field is ' + SUPPORTED_FIELDS],
    [{ name: 'tasks', fields: Type.String() }, 'resource plugin: "tasks": fields must be an object schema such as Type.Object({ title: Type.String() })'],
    [{ name: 'tasks', fields: Type.Object({ n: Type.String() }), indexes: ['m'] }, 'resource plugin: "tasks": indexes names "m", which is not a field'],
    [{ name: 'records', indexes: ['title'] }, 'resource plugin: "records": indexes need fields; a resource of records is listed by id only']
  ]
  for (const [options, message] of cases) {
    const error = t.throws(() => resolveResourceOptions(options as ResourceOptions)) as Error & { code?: string }
    t.equal(error.message, message)
    t.equal(error.code, 'RESOURCE_INVALID_OPTIONS')
  }
})

t.test('a default its own field refuses fails the boot, naming the resource and the field', async (t) => {
  const field = (schema: object) => ({ name: 'tasks', fields: { type: 'object', properties: { x: schema } } })
  const cases: Array<[object, string]> = [
    [{ name: 'tasks', fields: Type.Object({ priority: Type.Integer({ maximum: 5, default: 9 }) }) }, 'field "priority": default 9 must be <= 5'],
    [field({ type: 'integer', minimum: 1, default: 0 }), 'field "x": default 0 must be >= 1'],
    [field({ type: 'string', enum: ['open', 'done'], default: 'later' }), 'field "x": default "later" must be equal to one of the allowed values'],
    [{ name: 'tasks', fields: Type.Object({ x: Type.Union([Type.Literal('a'), Type.Literal('b')], { default: 'c' }) }) }, 'field "x": default "c" must be equal to one of the allowed values'],
    [field({ type: 'string', pattern: '^[0-9]+$', default: 'abc' }), 'field "x": default "abc" must match pattern "^[0-9]+$"'],
    [field({ type: 'string', default: 5 }), 'field "x": default 5 must be string'],
    [field({ type: 'string', maxLength: 2, default: 'abc' }), 'field "x": default "abc" must NOT have more than 2 characters'],
    [field({ type: 'string', format: 'date', default: '2026-13-01' }), 'field "x": default "2026-13-01" must match format "date": YYYY-MM-DD, from 0001-01-01 to 9999-12-31'],
    [field({ type: 'string', format: 'email', default: 'nobody' }), 'field "x": default "nobody" must match format "email"'],
    [field({ type: 'string', default: null }), 'field "x": default null must be string'],
    [field({ type: 'array', items: { type: 'string', enum: ['a'] }, default: ['b'] }), 'field "x": default ["b"] at /0 must be equal to one of the allowed values'],
    [field({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], default: {} }), 'field "x": default {} must have required property \'n\''],
    [field({ type: 'object', properties: { n: { type: 'integer', default: 'one' } } }), 'field "x": default "one" at /n must be integer']
  ]
  for (const [options, message] of cases) {
    const error = t.throws(() => resolveResourceOptions(options as ResourceOptions)) as Error & { code?: string }
    t.equal(error.message, `resource plugin: "tasks": ${message}`)
    t.equal(error.code, 'RESOURCE_INVALID_OPTIONS')
  }
  t.ok(resolveResourceOptions(field({ type: 'string', nullable: true, default: null }) as ResourceOptions), 'null is the default of a nullable field')
  t.ok(resolveResourceOptions(field({ type: 'string', format: 'date-time', default: '2026-11-24T10:00:00Z' }) as ResourceOptions))
})

t.test('readOnly and writeOnly: a field is one or the other, and a readOnly one never needs a body', async (t) => {
  const cases: Array<[TProperties, string]> = [
    [{ x: Type.String({ readOnly: true, writeOnly: true }) }, 'field "x": a field is readOnly or writeOnly, not both'],
    [{ x: Type.String({ readOnly: true }) }, 'field "x": a readOnly field is never taken from a body, so a required one needs a default; give it one, or make it optional']
  ]
  for (const [properties, message] of cases) {
    const error = t.throws(() => resolveResourceOptions({ name: 'tasks', fields: Type.Object(properties) })) as Error & { code?: string }
    t.equal(error.message, `resource plugin: "tasks": ${message}`)
  }
  for (const fields of [
    Type.Object({ x: Type.String({ readOnly: true, default: 'a' }) }),
    Type.Object({ x: Type.Optional(Type.String({ readOnly: true })) }),
    Type.Object({ x: Type.Union([Type.String(), Type.Null()], { readOnly: true }) })
  ]) t.ok(resolveResourceOptions({ name: 'tasks', fields }), JSON.stringify(fields.properties.x))
})

t.test('no resource may use a table of the service, whatever its name', async (t) => {
  for (const table of BUILT_IN_TABLES) {
    const message = `resource plugin: the table "${table}" belongs to the service (${BUILT_IN_TABLES.join(', ')}); choose another name or a table option`
    t.equal((t.throws(() => resolveResourceOptions({ name: table })) as Error).message, message, table)
    t.equal((t.throws(() => resolveResourceOptions({ name: 'mine', table })) as Error).message, message, `mine in ${table}`)
  }
  t.equal(resolveResourceOptions({ name: 'users', table: 'people' }).table, 'people', 'the name alone is free; the table is what must not collide')
})

t.test('defaults: every route, a page of 100 up to 1000, the table named after the resource and created, If-Match optional', async (t) => {
  const { guards, ...options } = resolveResourceOptions({ name: 'records' })
  t.same(guards, {})
  t.same(options, {
    name: 'records',
    table: 'records',
    createTable: true,
    requireIfMatch: false,
    idempotencyTtlHours: 24,
    routes: { list: true, create: true, get: true, update: true, delete: true, events: false },
    owner: false,
    indexes: [],
    unique: [],
    search: [],
    maxEmbedRows: 20000,
    maxBatch: 1000,
    hooks: {},
    eventHeartbeatSeconds: 20,
    eventBufferBytes: 1048576,
    defaultLimit: 100,
    maxLimit: 1000
  })
  t.equal(resolveResourceOptions({ name: 'tasks', fields: Type.Object({ title: Type.String() }) }).routes.events, true, 'a resource with fields has a change feed')
  t.equal(resolveResourceOptions({ name: 'records', maxLimit: 10 }).defaultLimit, 10, 'the default page never exceeds the maximum')
  t.same(resolveResourceOptions({ name: 'records', routes: { delete: false } }).routes, { list: true, create: true, get: true, update: true, delete: false, events: false })
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
