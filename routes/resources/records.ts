import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { createRepository } from '../../db/crud.js'
import { ensureResourceTable } from '../../db/resources.js'
import { refusal, rowEtags } from '../../http/conditional.js'
import { canonicalUrl } from '../../http/trailing-slash.js'
import { idempotentCreates, locationOf } from '../../http/idempotency.js'
import { resourceTable } from '../../db/schema.js'
import { addSchemas } from '../../schemas/common.js'
import { RecordNotFound } from './errors.js'
import type { ResolvedResourceOptions } from './options.js'
import { resourceSchemas } from './schemas.js'

/** The five routes of a resource of records (`title`, `description`), as SPEC.md 4.3 has them. */
export const recordRoutes: FastifyPluginAsyncTypebox<ResolvedResourceOptions> = async (app, opts) => {
  const { name, routes, maxLimit, guards, requireIfMatch, idempotencyTtlHours } = opts
  const table = resourceTable(opts.table)
  if (opts.createTable) await ensureResourceTable(app.plinthDb.db, table)
  const records = createRepository(app.plinthDb.db, table)
  const etags = rowEtags(app, opts.table)
  const schemas = resourceSchemas(opts)
  const item = `/:${schemas.param}`
  const idOf = (params: Record<string, number | undefined>) => params[schemas.param] as number

  addSchemas(app, [schemas.record])

  if (routes.list) {
    app.get('/', { schema: schemas.list, onRequest: guards.read }, async function listRecords (request, reply) {
      const { offset } = request.query
      const limit = Math.min(request.query.limit, maxLimit)
      // One row more than the page says whether another follows, without counting the table.
      const rows = await records.list({ offset, limit: limit + 1 })
      if (rows.length > limit) reply.header('link', `<${canonicalUrl(request.routeOptions.url!)}?offset=${offset + limit}&limit=${limit}>; rel="next"`)
      return rows.slice(0, limit)
    })
  }

  if (routes.create) {
    app.post('/', { schema: schemas.create, onRequest: guards.write, ...idempotentCreates(app.plinthDb.db, idempotencyTtlHours) }, async function createRecord (request, reply) {
      const record = await records.create(request.body)
      return reply.code(201).headers({ location: locationOf(request, record.id), etag: etags.of(record) }).send(record)
    })
  }

  if (routes.get) {
    app.get(item, { schema: schemas.get, onRequest: guards.read }, async function getRecord (request, reply) {
      const record = await records.get(idOf(request.params))
      if (!record) throw new RecordNotFound(name, idOf(request.params))
      return etags.notModified(request, reply, record) ? reply : record
    })
  }

  if (routes.update) {
    app.put(item, {
      schema: schemas.update,
      onRequest: guards.write,
      // A PUT without any body changes nothing, like `{}`.
      preValidation: async function emptyUpdate (request) { request.body ??= {} }
    }, async function updateRecord (request, reply) {
      const id = idOf(request.params)
      const versions = etags.expectedVersions(request, requireIfMatch, id, `${name} ${id}`)
      const record = await records.update(id, request.body, undefined, versions)
      if (!record) throw await refusal(versions, () => records.get(id), new RecordNotFound(name, id), `${name} ${id}`)
      reply.header('etag', etags.of(record))
      return record
    })
  }

  if (routes.delete) {
    app.delete(item, { schema: schemas.delete, onRequest: guards.write }, async function deleteRecord (request, reply) {
      const id = idOf(request.params)
      const versions = etags.expectedVersions(request, requireIfMatch, id, `${name} ${id}`)
      if (!await records.delete(id, undefined, versions)) throw await refusal(versions, () => records.get(id), new RecordNotFound(name, id), `${name} ${id}`)
      return reply.code(204).send(null)
    })
  }
}
