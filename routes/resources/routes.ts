import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { createRepository, type Versioned } from '../../db/crud.js'
import { definitionDigest } from '../../db/resource-changes.js'
import { resourceJson } from '../../db/resource-json.js'
import { InvalidCursorError, createResourceLister } from '../../db/resource-lists.js'
import { buildResourceTable, type ResourceTableSpec } from '../../db/resource-table.js'
import { prepareResourceTable } from '../../db/resources.js'
import { notAuthenticated } from '../../plugins/auth/errors.js'
import { conditionalWrite, rowEtags } from '../../http/conditional.js'
import { sendCreated } from '../../http/created.js'
import { idempotentCreates } from '../../http/idempotency.js'
import { canonicalUrl } from '../../http/trailing-slash.js'
import { addSchemas } from '../../schemas/common.js'
import { isReadOnly } from '../../schemas/fields.js'
import { InvalidResourceOptions, RecordNotFound, invalidInput } from './errors.js'
import { checkListQuery, filterParameters, filtersOf, sortOf } from './list-query.js'
import type { ResolvedResourceOptions } from './options.js'
import { presetOf } from './presets.js'
import { resourceSchemas } from './schemas.js'

/** A stored row: its JSON as the API sends it (the row schema's shape), and the id and owner the routes check. */
interface Row { id: number, owner_id?: number, json: string }

interface ListQuery { limit: number, offset: number, sort?: string, cursor?: string, count?: 'exact' }

/** A PUT or PATCH without any body is `{}`, as every update of plinth's takes it. */
async function emptyBody (request: FastifyRequest) { request.body ??= {} }

const JSON_TYPE = 'application/json; charset=utf-8'

/** Sends JSON text as it is: Fastify serializes only a payload that is not a string already. */
const sendJson = (reply: FastifyReply, json: string) => reply.type(JSON_TYPE).send(json)

function cursorLink (request: FastifyRequest, cursor: string): string {
  const [path, search = ''] = request.url.split('?')
  const query = new URLSearchParams(search)
  query.delete('offset')
  query.set('cursor', cursor)
  return `<${path}?${query.toString()}>; rel="next"`
}

const offsetLink = (request: FastifyRequest, { offset, limit }: { offset: number, limit: number }) =>
  `<${canonicalUrl(request.routeOptions.url!)}?offset=${offset + limit}&limit=${limit}>; rel="next"`

/** The routes of a resource: CRUD, and a list, as its fields and its preset say; without fields, the `records` preset. */
export const resourceRoutes: FastifyPluginAsyncTypebox<ResolvedResourceOptions> = async (app, opts) => {
  const { name, routes, maxLimit, owner, requireIfMatch, idempotencyTtlHours } = opts
  const { fields, preset } = presetOf(opts.fields)
  if (owner && !app.hasDecorator('plinthGuards')) {
    throw new InvalidResourceOptions(`"${name}": owner mode needs app.plinthGuards.authenticate; register authPlugin, awaited, before this plugin`)
  }
  const db = app.plinthDb.db
  const { timestamps, tracked } = preset
  const spec: ResourceTableSpec = { table: opts.table, fields, owner, indexes: opts.indexes, timestamps, tracked }
  const table = buildResourceTable(opts.table, fields, { owner, timestamps })
  if (opts.createTable) await prepareResourceTable(db, spec)
  // PostgreSQL writes each row's JSON: nothing to decode per column, nor to serialize.
  const selection = { id: table.id, ...(owner ? { owner_id: table.owner_id! } : {}), json: resourceJson(fields, { owner, timestamps }) }
  // Many requests write a resource's rows at once: their updates share a statement.
  const rows = createRepository<typeof table, Row>(db, table, { selection, batchUpdates: true })
  // A field added with a default changes every row's body but not its version: a definition that can change is in the ETag too.
  const etags = rowEtags(app, opts.table, tracked ? definitionDigest(spec) : '')
  const schemas = resourceSchemas(opts, fields, preset)
  const list = createResourceLister<typeof table, Row>(db, table, Object.fromEntries(schemas.columns.map((column) => [column.name, column.kind])), selection)
  const filters = filterParameters(schemas.columns)
  // In owner mode every route knows its user: the given guards, else authentication alone.
  const guards = owner ? { read: opts.guards.read ?? app.plinthGuards.authenticate, write: opts.guards.write ?? app.plinthGuards.authenticate } : opts.guards
  const writable = fields.filter((field) => !isReadOnly(field))
  const path = `/:${schemas.param}`
  const idOf = (request: FastifyRequest) => (request.params as Record<string, number>)[schemas.param] as number

  function ownerOf (request: FastifyRequest): number | undefined {
    if (!owner) return undefined
    if (request.account === null) throw notAuthenticated()
    return request.account.is_superuser ? undefined : request.account.id
  }

  /** The row, or a 404 when it is missing or someone else's: an owner's rows are invisible to others, never forbidden. */
  async function find (request: FastifyRequest): Promise<Versioned<Row>> {
    const id = idOf(request)
    const row = await rows.get(id)
    const me = ownerOf(request)
    if (row === null || (me !== undefined && row.owner_id !== me)) throw new RecordNotFound(name, id)
    return row
  }

  /** What `write` wrote under the versions If-Match allows; for an owner's row, If-Match is read only once the row is known to be theirs. */
  async function conditionally<T> (request: FastifyRequest, write: (id: number, ifVersions?: string[]) => Promise<T | null | false>): Promise<T> {
    // The owner never changes, so checking it before the write cannot race.
    if (owner) await find(request)
    const id = idOf(request)
    return conditionalWrite(request, {
      etags, requireIfMatch, id, what: `${name} ${id}`, exists: () => rows.get(id), missing: () => new RecordNotFound(name, id), write: (ifVersions) => write(id, ifVersions)
    })
  }

  async function write (request: FastifyRequest, reply: FastifyReply, values: Record<string, unknown>) {
    const row = await conditionally(request, (id, ifVersions) => rows.update(id, values as never, { ifVersions }))
    return sendJson(reply.header('etag', etags.of(row)), row.json)
  }

  addSchemas(app, [schemas.row])

  if (routes.list) {
    const filtered = preset.list === 'filtered'
    app.get('/', { schema: schemas.list, onRequest: guards.read, ...(filtered ? { preValidation: checkListQuery(schemas.columns) } : {}) }, async function listRows (request, reply) {
      const { limit, offset, sort, cursor, count, ...query } = request.query as Record<string, unknown> & ListQuery
      const page = await list({
        filters: filtersOf(query, filters),
        sort: sortOf(sort, schemas.columns),
        limit: Math.min(limit, maxLimit),
        offset,
        cursor,
        ownerId: ownerOf(request),
        count: count === 'exact'
      }).catch((err: unknown) => {
        if (err instanceof InvalidCursorError) throw invalidInput('querystring', '/cursor', err.message)
        throw err
      })
      if (page.next !== undefined) reply.header('link', filtered ? cursorLink(request, page.next) : offsetLink(request, { offset, limit: Math.min(limit, maxLimit) }))
      if (page.total !== undefined) reply.header('x-total-count', String(page.total))
      return sendJson(reply, `[${page.rows.map((row) => row.json).join(',')}]`)
    })
  }

  if (routes.create) {
    app.post('/', { schema: schemas.create, onRequest: guards.write, ...idempotentCreates(db, idempotencyTtlHours, app.plinthClock) }, async function createRow (request, reply) {
      const values: Record<string, unknown> = { ...request.body as object }
      if (owner) {
        if (request.account === null) throw notAuthenticated()
        values.owner_id = request.account.id
      }
      const row = await rows.create(values as never)
      return sendCreated(reply, request, row, { etag: etags.of(row), body: row.json, type: JSON_TYPE })
    })
  }

  if (routes.get) {
    app.get(path, { schema: schemas.get, onRequest: guards.read }, async function getRow (request, reply) {
      const row = await find(request)
      return etags.notModified(request, reply, row) ? reply : sendJson(reply, row.json)
    })
  }

  if (routes.update) {
    const change = async function updateRow (request: FastifyRequest, reply: FastifyReply) {
      return write(request, reply, request.body as Record<string, unknown>)
    }
    if (preset.put === 'change') {
      app.put(path, { schema: schemas.update, onRequest: guards.write, preValidation: emptyBody }, change)
    } else {
      app.put(path, { schema: schemas.replace, onRequest: guards.write, preValidation: emptyBody }, async function replaceRow (request, reply) {
        const body = request.body as Record<string, unknown>
        // A full replace of what a body may write: a field left out (its default, if any, is already in the body) has no value.
        return write(request, reply, Object.fromEntries(writable.map((field) => [field.name, body[field.name] ?? null])))
      })
      app.patch(path, { schema: schemas.update, onRequest: guards.write, preValidation: emptyBody }, change)
    }
  }

  if (routes.delete) {
    app.delete(path, { schema: schemas.delete, onRequest: guards.write }, async function deleteRow (request, reply: FastifyReply) {
      await conditionally(request, (id, ifVersions) => rows.delete(id, { ifVersions }))
      return reply.code(204).send(null)
    })
  }
}
