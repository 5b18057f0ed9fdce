import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { createRepository, type Versioned } from '../../db/crud.js'
import { InvalidCursorError, createFieldLister } from '../../db/field-lists.js'
import { definitionDigest, ensureFieldTable, fieldTable } from '../../db/field-table.js'
import { rowJson } from '../../db/row-json.js'
import { notAuthenticated } from '../../plugins/auth/errors.js'
import { refusal, rowEtags } from '../../http/conditional.js'
import { idempotentCreates, locationOf } from '../../http/idempotency.js'
import { addSchemas } from '../../schemas/common.js'
import { isReadOnly } from '../../schemas/fields.js'
import { InvalidResourceOptions, RecordNotFound, invalidInput } from './errors.js'
import { checkListQuery, filterParameters, filtersOf, sortOf } from './list-query.js'
import type { ResolvedResourceOptions } from './options.js'
import { rowSchemas } from './row-schemas.js'

/** A stored row: its JSON as the API sends it (rowSchema's shape), and the id and owner the routes check. */
interface Row { id: number, owner_id?: number, json: string }

/** A PUT or PATCH without any body is `{}`, as every update of plinth's takes it. */
async function emptyBody (request: FastifyRequest) { request.body ??= {} }

/** Sends JSON text as it is: Fastify serializes only a payload that is not a string already. */
const sendJson = (reply: FastifyReply, json: string) => reply.type('application/json; charset=utf-8').send(json)

/** The link to the page after this one: the same query, with the cursor in place of any offset. */
function nextLink (request: FastifyRequest, cursor: string): string {
  const [path, search = ''] = request.url.split('?')
  const query = new URLSearchParams(search)
  query.delete('offset')
  query.set('cursor', cursor)
  return `<${path}?${query.toString()}>; rel="next"`
}

/** The routes of a resource defined by its fields: CRUD with replace and partial update, and lists that filter and sort. */
export const rowRoutes: FastifyPluginAsyncTypebox<ResolvedResourceOptions> = async (app, opts) => {
  const { name, routes, maxLimit, owner, requireIfMatch, idempotencyTtlHours, fields = [] } = opts
  if (owner && !app.hasDecorator('plinthGuards')) {
    throw new InvalidResourceOptions(`"${name}": owner mode needs app.plinthGuards.authenticate; register authPlugin, awaited, before this plugin`)
  }
  const db = app.plinthDb.db
  const table = fieldTable(opts.table, fields, { owner })
  const definition = { table: opts.table, fields, owner, indexes: opts.indexes }
  if (opts.createTable) await ensureFieldTable(db, definition)
  // PostgreSQL writes each row's JSON: nothing to decode per column, nor to serialize.
  const selection = { id: table.id, ...(owner ? { owner_id: table.owner_id } : {}), json: rowJson(fields, { owner }) }
  const rows = createRepository<typeof table, Row>(db, table, selection)
  // A field added with a default changes every row's body but no row's version: the definition is in the ETag too.
  const etags = rowEtags(app, opts.table, definitionDigest(definition))
  const schemas = rowSchemas({ ...opts, fields })
  const list = createFieldLister<typeof table, Row>(db, table, Object.fromEntries(schemas.columns.map((column) => [column.name, column.kind])), selection)
  const filters = filterParameters(schemas.columns)
  // In owner mode every route knows its user: the given guards, else authentication alone.
  const guards = owner ? { read: opts.guards.read ?? app.plinthGuards.authenticate, write: opts.guards.write ?? app.plinthGuards.authenticate } : opts.guards
  const writable = fields.filter((field) => !isReadOnly(field))
  const item = `/:${schemas.param}`
  const idOf = (request: FastifyRequest) => (request.params as Record<string, number>)[schemas.param] as number

  /** The user whose rows this request may touch; undefined when it may touch every row. */
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

  /** The row's versions If-Match allows; for an owner's row, only once the row is known to be theirs. */
  async function preconditions (request: FastifyRequest) {
    // The owner never changes, so checking it before the write cannot race.
    if (owner) await find(request)
    const id = idOf(request)
    return etags.expectedVersions(request, requireIfMatch, id, `${name} ${id}`)
  }

  /** Why a write under `versions` found nothing to write. */
  const refused = (request: FastifyRequest, versions?: string[]) =>
    refusal(versions, () => rows.get(idOf(request)), new RecordNotFound(name, idOf(request)), `${name} ${idOf(request)}`)

  async function write (request: FastifyRequest, reply: FastifyReply, values: Record<string, unknown>) {
    const versions = await preconditions(request)
    const row = await rows.update(idOf(request), values as never, undefined, versions)
    if (row === null) throw await refused(request, versions)
    return sendJson(reply.header('etag', etags.of(row)), row.json)
  }

  addSchemas(app, [schemas.record])

  if (routes.list) {
    app.get('/', { schema: schemas.list, onRequest: guards.read, preValidation: checkListQuery(schemas.columns) }, async function listRows (request, reply) {
      const { limit, offset, sort, cursor, count, ...query } = request.query as Record<string, unknown> & {
        limit: number, offset: number, sort?: string, cursor?: string, count?: 'exact'
      }
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
      if (page.next !== undefined) reply.header('link', nextLink(request, page.next))
      if (page.total !== undefined) reply.header('x-total-count', String(page.total))
      return sendJson(reply, `[${page.rows.map((row) => row.json).join(',')}]`)
    })
  }

  if (routes.create) {
    app.post('/', { schema: schemas.create, onRequest: guards.write, ...idempotentCreates(db, idempotencyTtlHours) }, async function createRow (request, reply) {
      const values: Record<string, unknown> = { ...request.body as object }
      if (owner) {
        if (request.account === null) throw notAuthenticated()
        values.owner_id = request.account.id
      }
      const row = await rows.create(values as never)
      return sendJson(reply.code(201).headers({ location: locationOf(request, row.id), etag: etags.of(row) }), row.json)
    })
  }

  if (routes.get) {
    app.get(item, { schema: schemas.get, onRequest: guards.read }, async function getRow (request, reply) {
      const row = await find(request)
      return etags.notModified(request, reply, row) ? reply : sendJson(reply, row.json)
    })
  }

  if (routes.update) {
    app.put(item, { schema: schemas.replace, onRequest: guards.write, preValidation: emptyBody }, async function replaceRow (request, reply) {
      const body = request.body as Record<string, unknown>
      // A full replace of what a body may write: a field left out (its default, if any, is already in the body) has no value.
      return write(request, reply, Object.fromEntries(writable.map((field) => [field.name, body[field.name] ?? null])))
    })
    app.patch(item, { schema: schemas.update, onRequest: guards.write, preValidation: emptyBody }, async function updateRow (request, reply) {
      return write(request, reply, request.body as Record<string, unknown>)
    })
  }

  if (routes.delete) {
    app.delete(item, { schema: schemas.delete, onRequest: guards.write }, async function deleteRow (request, reply: FastifyReply) {
      const versions = await preconditions(request)
      if (!await rows.delete(idOf(request), undefined, versions)) throw await refused(request, versions)
      return reply.code(204).send(null)
    })
  }
}
