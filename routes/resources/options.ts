import { Type, type Static, type TObject } from '@sinclair/typebox'
import { BUILT_IN_TABLES } from '../../db/resources.js'
import type { Guard } from '../../http/types.js'
import { ConditionalOptions } from '../../http/conditional.js'
import { IdempotencyOptions } from '../../http/idempotency.js'
import { PageLimitOptions, pageLimits, readGuards, readOptions, type Guards } from '../../http/options.js'
import { validatorCompiler } from '../../http/validation.js'
import { IDENTIFIER_PATTERN } from '../../schemas/common.js'
import { bodyFieldSchema, isWriteOnly, readFields, type Field, type JsonSchema } from '../../schemas/fields.js'
import { FORMAT_MESSAGES } from '../../schemas/storable.js'
import { InvalidResourceOptions } from './errors.js'
import type { ResourceHooks } from './hooks.js'

export const ROUTE_NAMES = ['list', 'create', 'get', 'update', 'delete', 'events'] as const
export type RouteName = typeof ROUTE_NAMES[number]

export const IDENTIFIER = new RegExp(IDENTIFIER_PATTERN)

const Identifier = Type.String({
  pattern: IDENTIFIER_PATTERN,
  errorMessage: 'must be a lower-case identifier: a letter, then letters, digits or _, at most 63 characters'
})
const Switch = Type.Boolean({ errorMessage: 'must be true or false' })

export const ResourceOptionsSchema = Type.Object({
  /** Lower-case identifier: the path segment, the table (unless `table`), the tag and the operationId stem. */
  name: Identifier,
  /** The table's name when it differs from `name`. Never one of the service's own tables. Default: `name`. */
  table: Type.Optional(Identifier),
  /** Routes to leave out, e.g. `{ delete: false }`. Every route is on by default. */
  routes: Type.Optional(Type.Partial(Type.Object(Object.fromEntries(ROUTE_NAMES.map((route) => [route, Switch])) as Record<RouteName, typeof Switch>), {
    additionalProperties: false, errorMessage: 'must be an object such as { delete: false }'
  })),
  ...PageLimitOptions(1000),
  createTable: Type.Boolean({ default: true, errorMessage: 'must be true or false' }),
  /** With fields: each row belongs to the user who created it, and only that user (or a superuser) sees it. */
  owner: Type.Boolean({ default: false, errorMessage: 'must be true or false' }),
  /** With fields: fields to index as (field, id), for filters and sorts on large tables. */
  indexes: Type.Array(Identifier, { default: [], errorMessage: 'must be a list of field names' }),
  /** With fields: sets of fields no two rows may share, e.g. `['slug', ['project_id', 'title']]`; per owner in owner mode unless `global`. */
  unique: Type.Array(Type.Union([
    Identifier,
    Type.Array(Identifier, { minItems: 1 }),
    Type.Object({ fields: Type.Array(Identifier, { minItems: 1 }), global: Type.Optional(Switch) }, { additionalProperties: false })
  ]), { default: [], errorMessage: 'must be a list of field names, lists of field names, or { fields, global }' }),
  /** With fields: text fields that `?q=` searches, ranked. */
  search: Type.Array(Identifier, { default: [], errorMessage: 'must be a list of text field names' }),
  /** The most rows one answer may embed: the page's rows times each embed's limit (1 for a single row), summed; past it, a 422. */
  maxEmbedRows: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 20_000, errorMessage: 'must be an integer from 1 to 1000000' }),
  /** The most rows a JSON array body may create at once. */
  maxBatch: Type.Integer({ minimum: 1, maximum: 10_000, default: 1000, errorMessage: 'must be an integer from 1 to 10000' }),
  /** Seconds between the `: ping` comments of an event stream, which keep proxies from closing it. */
  eventHeartbeatSeconds: Type.Number({ exclusiveMinimum: 0, maximum: 3600, default: 20, errorMessage: 'must be a number of seconds above 0, at most 3600' }),
  /** Bytes an event stream may hold for a client that does not read before it is cut (the client resumes). */
  eventBufferBytes: Type.Integer({ minimum: 1024, maximum: 1_073_741_824, default: 1_048_576, errorMessage: 'must be an integer from 1024 to 1073741824' }),
  ...ConditionalOptions,
  ...IdempotencyOptions
})

/** A set of fields no two rows share: within one owner's rows in owner mode, unless `global`. */
export interface UniqueKey { fields: string[], global: boolean }

export type ResourceOptions = Partial<Static<typeof ResourceOptionsSchema>> & {
  name: string
  /** The fields of a row, as a TypeBox object; without them the resource is the `records` preset: `title` and `description`. */
  fields?: TObject | JsonSchema
  /** An onRequest hook on every route, e.g. `app.authenticate`; given but undefined fails the boot. */
  guard?: Guard
  /** Separate hooks for reads and writes, e.g. `{ write: app.requireScopes('notes:write') }`. */
  guards?: Guards
  /** Code that runs in each write's transaction (before*) or after its commit (after*). */
  hooks?: ResourceHooks
}

export interface ResolvedResourceOptions extends Required<Omit<ResourceOptions, 'guard' | 'guards' | 'routes' | 'fields' | 'unique' | 'hooks'>> {
  guards: Guards
  routes: Record<RouteName, boolean>
  unique: UniqueKey[]
  hooks: ResourceHooks
  /** Absent for the `records` preset. */
  fields?: Field[]
}

interface CheckError { instancePath: string, keyword: string, params: Record<string, unknown>, message: string }
type Check = ((value: unknown) => boolean) & { errors: CheckError[] }

/** Why a body could not take `value` where `schema` is, checked as a request's body is: where in the value, and what. */
function refusal (schema: JsonSchema, value: unknown): { at: string, message: string } | undefined {
  const check = validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' }) as unknown as Check
  // The check fills in defaults and strips unknown members: it gets a copy.
  if (check(structuredClone(value))) return undefined
  const [error] = check.errors as [CheckError]
  const format = error.keyword === 'format' ? FORMAT_MESSAGES[error.params.format as string] : undefined
  return { at: error.instancePath, message: format ?? error.message }
}

function * propertyDefaults (schema: JsonSchema, at: string): Generator<[at: string, schema: JsonSchema, value: unknown]> {
  for (const [key, property] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
    const place = `${at}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`
    // Without its own default: a schema's root takes none.
    const { default: value, ...rest } = property
    if (value !== undefined) yield [place, rest, value]
    yield * propertyDefaults(property, place)
  }
}

/** Every default checked against its own schema at boot: else every body that leaves it out is a 422 that blames the client. */
function checkDefaults (name: string, fields: Field[]): void {
  for (const field of fields) {
    const own: Array<[string, JsonSchema, unknown]> = field.default === undefined ? [] : [['', bodyFieldSchema(field), field.default]]
    for (const [at, schema, value] of [...own, ...propertyDefaults(field.value, '')]) {
      const refused = refusal(schema, value)
      if (refused === undefined) continue
      const where = `${at}${refused.at}`
      throw new InvalidResourceOptions(`"${name}": field "${field.name}": default ${JSON.stringify(value)}${where ? ` at ${where}` : ''} ${refused.message}`)
    }
  }
}

function readResourceFields (name: string, fields: unknown, owner: boolean, indexes: string[]): Field[] | undefined {
  if (fields === undefined) {
    if (owner) throw new InvalidResourceOptions(`"${name}": owner needs fields; a resource of records has no owner`)
    if (indexes.length > 0) throw new InvalidResourceOptions(`"${name}": indexes need fields; a resource of records is listed by id only`)
    return undefined
  }
  let read: Field[]
  try {
    read = readFields(fields as TObject)
  } catch (err) {
    throw new InvalidResourceOptions(`"${name}": ${(err as Error).message}`)
  }
  checkDefaults(name, read)
  const unknown = indexes.find((index) => !read.some((field) => field.name === index))
  if (unknown !== undefined) throw new InvalidResourceOptions(`"${name}": indexes names "${unknown}", which is not a field`)
  return read
}

function fieldsNamed (name: string, option: string, fields: Field[] | undefined, names: string[]): Field[] {
  if (names.length > 0 && fields === undefined) throw new InvalidResourceOptions(`"${name}": ${option} needs fields; a resource of records has none`)
  return names.map((each) => {
    const field = fields!.find((candidate) => candidate.name === each)
    if (field === undefined) throw new InvalidResourceOptions(`"${name}": ${option} names "${each}", which is not a field`)
    return field
  })
}

function readUnique (name: string, fields: Field[] | undefined, unique: Static<typeof ResourceOptionsSchema>['unique']): UniqueKey[] {
  return unique.map((key) => {
    const read = typeof key === 'string' ? { fields: [key], global: false } : Array.isArray(key) ? { fields: key, global: false } : { fields: key.fields, global: key.global ?? false }
    for (const field of fieldsNamed(name, 'unique', fields, read.fields)) {
      if (field.kind === 'jsonb' || field.kind === 'text[]') throw new InvalidResourceOptions(`"${name}": unique names "${field.name}", a ${field.kind} field; unique takes fields of single values`)
      // A 409 would confirm another row's value, a guess at a time (a bulk create, a thousand at once).
      if (isWriteOnly(field)) throw new InvalidResourceOptions(`"${name}": unique names "${field.name}", a writeOnly field; a conflict would tell another row's value`)
    }
    if (new Set(read.fields).size !== read.fields.length) throw new InvalidResourceOptions(`"${name}": unique names a field twice in [${read.fields.join(', ')}]`)
    return read
  })
}

function readSearch (name: string, fields: Field[] | undefined, search: string[]): void {
  for (const field of fieldsNamed(name, 'search', fields, search)) {
    // An array's text is not immutable (array_out is stable), so no index could hold it.
    if (field.kind !== 'text') throw new InvalidResourceOptions(`"${name}": search names "${field.name}", a ${field.kind} field; search takes text fields`)
    // What a search finds tells the words of the field, a guess at a time.
    if (isWriteOnly(field)) throw new InvalidResourceOptions(`"${name}": search names "${field.name}", a writeOnly field; searching it would tell its value`)
  }
  if (new Set(search).size !== search.length) throw new InvalidResourceOptions(`"${name}": search names a field twice in [${search.join(', ')}]`)
  if (search.length > 0 && fields!.some((field) => field.name === 'q')) {
    throw new InvalidResourceOptions(`"${name}": search takes the query parameter q, which the field "q" filters on; rename the field`)
  }
}

const HOOK_NAMES = ['beforeCreate', 'afterCreate', 'beforeUpdate', 'afterUpdate', 'beforeDelete', 'afterDelete'] as const

function readHooks (name: string, hooks: unknown): ResourceHooks {
  if (hooks === undefined) return {}
  if (typeof hooks !== 'object' || hooks === null) throw new InvalidResourceOptions(`"${name}": hooks must be an object such as { beforeCreate }`)
  for (const [key, hook] of Object.entries(hooks)) {
    if (!(HOOK_NAMES as readonly string[]).includes(key)) throw new InvalidResourceOptions(`"${name}": hooks.${key} is unknown: hooks takes ${HOOK_NAMES.join(', ')}`)
    if (typeof hook !== 'function') throw new InvalidResourceOptions(`"${name}": hooks.${key} must be a function (got ${typeof hook})`)
  }
  return { ...hooks as ResourceHooks }
}

export function resolveResourceOptions (opts: ResourceOptions): ResolvedResourceOptions {
  const {
    name, table = name, createTable, routes = {}, owner, indexes, unique, search, maxEmbedRows, maxBatch, eventHeartbeatSeconds, eventBufferBytes, requireIfMatch, idempotencyTtlHours, ...limits
  } = readOptions(ResourceOptionsSchema, opts, InvalidResourceOptions)
  if (BUILT_IN_TABLES.includes(table)) {
    throw new InvalidResourceOptions(`the table "${table}" belongs to the service (${BUILT_IN_TABLES.join(', ')}); choose another name or a table option`)
  }
  const guards = readGuards(opts, InvalidResourceOptions, `"${name}": `)
  const fields = readResourceFields(name, opts.fields, owner, indexes)
  const keys = readUnique(name, fields, unique)
  readSearch(name, fields, search)
  const hooks = readHooks(name, opts.hooks)
  return {
    name,
    table,
    guards,
    ...(fields ? { fields } : {}),
    owner,
    indexes,
    unique: keys,
    search,
    maxEmbedRows,
    maxBatch,
    eventHeartbeatSeconds,
    eventBufferBytes,
    hooks,
    createTable,
    requireIfMatch,
    idempotencyTtlHours,
    // The records preset has no change feed: its tables predate the log's trigger.
    routes: Object.fromEntries(ROUTE_NAMES.map((route) => [route, routes[route] !== false && (route !== 'events' || fields !== undefined)])) as Record<RouteName, boolean>,
    ...pageLimits(limits, 100, InvalidResourceOptions)
  }
}
