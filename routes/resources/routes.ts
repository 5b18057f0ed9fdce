import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Database } from '../../db/client.js'
import { createRepository, type Versioned } from '../../db/crud.js'
import { definitionDigest } from '../../db/resource-changes.js'
import { resourceJson } from '../../db/resource-json.js'
import { InvalidCursorError, InvalidSearchError, createResourceLister, type RequestSelection } from '../../db/resource-lists.js'
import { createEmbeddedReader } from '../../db/resource-embed.js'
import { buildResourceTable, type ResourceTableSpec } from '../../db/resource-table.js'
import { prepareResourceTable } from '../../db/resources.js'
import { syncEventTrigger } from '../../db/event-triggers.js'
import { notAuthenticated } from '../../plugins/auth/errors.js'
import { conditionalWrite, rowEtags } from '../../http/conditional.js'
import { sendCreated } from '../../http/created.js'
import { idempotentCreates } from '../../http/idempotency.js'
import { readsOn } from '../../http/reads.js'
import { canonicalUrl } from '../../http/trailing-slash.js'
import { addSchemas } from '../../schemas/common.js'
import { isReadOnly } from '../../schemas/fields.js'
import { InvalidResourceOptions, RecordNotFound, invalidInput } from './errors.js'
import { checkListQuery, filterParameters, filtersOf, sortOf } from './list-query.js'
import type { ResolvedResourceOptions } from './options.js'
import { presetOf } from './presets.js'
import { resourceSchemas } from './schemas.js'
import { resourceEmbeds } from './embed.js'
import { eventRoutes } from './events.js'
import { createBodyCompiler } from './bulk-body.js'
import { registeredTable, resourceTableSpec } from './constraints.js'
import { resourceWrites } from './writes.js'

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
  const spec: ResourceTableSpec = resourceTableSpec(opts, registeredTable(app))
  const table = buildResourceTable(opts.table, fields, { owner, timestamps })
  if (opts.createTable) await prepareResourceTable(db, spec)
  // The change feed's log, written by a trigger while the events route is on; made again each boot, as the fields may change.
  if (opts.createTable && opts.fields !== undefined) await syncEventTrigger(db, { table: opts.table, fields, owner, timestamps }, routes.events)
  // PostgreSQL writes each row's JSON: nothing to decode per column, nor to serialize.
  const selection = { id: table.id, ...(owner ? { owner_id: table.owner_id! } : {}), json: resourceJson(fields, { owner, timestamps }) }
  // Many requests write a resource's rows at once: their updates share a statement.
  const rows = createRepository<typeof table, Row>(db, table, { selection, batchUpdates: true })
  // A field added with a default changes every row's body but not its version: a definition that can change is in the ETag too.
  const etags = rowEtags(app, opts.table, tracked ? definitionDigest(spec) : '')
  const schemas = resourceSchemas(opts, fields, preset)
  const columnKinds = Object.fromEntries(schemas.columns.map((column) => [column.name, column.kind]))
  // Lists and single rows read where the request may: a replica that has its writes, else the primary.
  const reads = (on: Database) => ({
    rows: on === db ? rows : createRepository<typeof table, Row>(on, table, { selection }),
    list: createResourceLister<typeof table, Row>(on, table, columnKinds, selection),
    embedded: createEmbeddedReader<Row>(on, table, selection)
  })
  const read = readsOn(app, reads)
  const filters = filterParameters(schemas.columns)
  // In owner mode every route knows its user: the given guards, else authentication alone.
  const guards = owner ? { read: opts.guards.read ?? app.plinthGuards.authenticate, write: opts.guards.write ?? app.plinthGuards.authenticate } : opts.guards
  const writable = fields.filter((field) => !isReadOnly(field))
  // ?embed=: related rows inline, read in the row's own statement.
  const embeds = resourceEmbeds(app, opts, { fields, preset, schemas, ownGuard: guards.read })
  const path = `/:${schemas.param}`
  const idOf = (request: FastifyRequest) => (request.params as Record<string, number>)[schemas.param] as number

  function ownerOf (request: FastifyRequest): number | undefined {
    if (!owner) return undefined
    if (request.account === null) throw notAuthenticated()
    return request.account.is_superuser ? undefined : request.account.id
  }

  /** The row, or a 404 when it is missing or someone else's: an owner's rows are invisible to others, never forbidden. */
  async function find (request: FastifyRequest, from: Pick<typeof rows, 'get'> = rows): Promise<Versioned<Row>> {
    const id = idOf(request)
    const row = await from.get(id)
    const me = ownerOf(request)
    if (row === null || (me !== undefined && row.owner_id !== me)) throw new RecordNotFound(name, id)
    return row
  }

  /** The row with its embeds, or a 404 as find's. */
  async function findEmbedded (request: FastifyRequest, embedded: RequestSelection): Promise<Row> {
    const id = idOf(request)
    const row = await read(request, ({ embedded: readEmbedded }) => readEmbedded(id, embedded))
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

  // Hooks, a bulk's transaction and the check of references against what the writer may read.
  const writes = resourceWrites({ app, db, name, table: opts.table, rows: rows as never, fields, hooks: opts.hooks, ...(guards.write ? { writeGuard: guards.write } : {}) })

  async function write (request: FastifyRequest, reply: FastifyReply, values: Record<string, unknown>) {
    const row = await conditionally(request, (id, ifVersions) => writes.update(request, reply, id, values, ifVersions))
    return sendJson(reply.header('etag', etags.of(row)), row.json)
  }

  addSchemas(app, [schemas.row])

  if (routes.list) {
    const filtered = preset.list === 'filtered'
    const preValidation = filtered ? [...(embeds ? [embeds.take] : []), checkListQuery(schemas.columns, { search: opts.search })] : []
    app.get('/', { schema: embeds?.list ?? schemas.list, onRequest: guards.read, preValidation }, async function listRows (request, reply) {
      const { limit, offset, sort, cursor, count, ...query } = request.query as Record<string, unknown> & ListQuery
      // Without search fields, a field may be called q: its filter, not a search.
      const q = opts.search.length > 0 ? query.q as string | undefined : undefined
      const embedded = embeds?.selectionOf(request, Math.min(limit, maxLimit))
      const page = await read(request, ({ list }) => list({
        filters: filtersOf(query, filters),
        sort: sortOf(sort, schemas.columns),
        limit: Math.min(limit, maxLimit),
        offset,
        cursor,
        ownerId: ownerOf(request),
        count: count === 'exact',
        ...(q === undefined ? {} : { search: { fields: opts.search, text: q } }),
        ...(embedded === undefined ? {} : { selection: embedded })
      })).catch((err: unknown) => {
        if (err instanceof InvalidCursorError) throw invalidInput('querystring', '/cursor', err.message)
        if (err instanceof InvalidSearchError) throw invalidInput('querystring', '/q', err.message)
        throw err
      })
      if (page.next !== undefined) reply.header('link', filtered ? cursorLink(request, page.next) : offsetLink(request, { offset, limit: Math.min(limit, maxLimit) }))
      if (page.total !== undefined) reply.header('x-total-count', String(page.total))
      return sendJson(reply, `[${page.rows.map((row) => row.json).join(',')}]`)
    })
  }

  if (routes.events && opts.fields) await eventRoutes(app, opts, { columns: schemas.columns, listQuery: schemas.list.querystring, read: guards.read })

  if (routes.create) {
    const validatorCompiler = createBodyCompiler(schemas.createBody, opts.maxBatch)
    app.post('/', { schema: schemas.create, validatorCompiler, onRequest: guards.write, ...idempotentCreates(db, idempotencyTtlHours, app.plinthClock) }, async function createRow (request, reply) {
      if (owner && request.account === null) throw notAuthenticated()
      const stamped = (body: object): Record<string, unknown> => owner ? { ...body, owner_id: request.account.id } : { ...body }
      if (Array.isArray(request.body)) {
        // All or none, in order; several rows have no one Location, nor one ETag.
        const created = await writes.createMany(request, reply, (request.body as object[]).map(stamped))
        return sendJson(reply.code(201), `[${created.map((row) => row.json).join(',')}]`)
      }
      const row = await writes.create(request, reply, stamped(request.body as object))
      return sendCreated(reply, request, row, { etag: etags.of(row), body: row.json, type: JSON_TYPE })
    })
  }

  if (routes.get) {
    app.get(path, { schema: embeds?.get ?? schemas.get, onRequest: guards.read, preValidation: embeds ? [embeds.take] : [] }, async function getRow (request, reply) {
      // With embeds, no ETag: the embedded rows change without the row's version.
      const embedded = embeds?.selectionOf(request)
      if (embedded) return sendJson(reply, (await findEmbedded(request, embedded)).json)
      const row = await read(request, (on) => find(request, on.rows))
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
      await conditionally(request, (id, ifVersions) => writes.remove(request, id, ifVersions))
      return reply.code(204).send(null)
    })
  }
}
