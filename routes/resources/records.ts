import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { createRepository } from '../../db/crud.js'
import { ensureResourceTable } from '../../db/resources.js'
import { resourceTable } from '../../db/schema.js'
import { addSchemas } from '../../schemas/common.js'
import { RecordNotFound } from './errors.js'
import type { ResolvedResourceOptions } from './options.js'
import { resourceSchemas } from './schemas.js'

/** The five routes of a resource of records (`title`, `description`), as SPEC.md 4.3 has them. */
export const recordRoutes: FastifyPluginAsyncTypebox<ResolvedResourceOptions> = async (app, opts) => {
  const { name, routes, maxLimit, guards } = opts
  const table = resourceTable(opts.table)
  if (opts.createTable) await ensureResourceTable(app.plinthDb.db, table)
  const records = createRepository(app.plinthDb.db, table)
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
      if (rows.length > limit) reply.header('link', `<${request.routeOptions.url}?offset=${offset + limit}&limit=${limit}>; rel="next"`)
      return rows.slice(0, limit)
    })
  }

  if (routes.create) {
    app.post('/', { schema: schemas.create, onRequest: guards.write }, async function createRecord (request, reply) {
      return reply.code(201).send(await records.create(request.body))
    })
  }

  if (routes.get) {
    app.get(item, { schema: schemas.get, onRequest: guards.read }, async function getRecord (request) {
      const record = await records.get(idOf(request.params))
      if (!record) throw new RecordNotFound(name, idOf(request.params))
      return record
    })
  }

  if (routes.update) {
    app.put(item, {
      schema: schemas.update,
      onRequest: guards.write,
      // A PUT without any body changes nothing, like `{}`.
      preValidation: async function emptyUpdate (request) { request.body ??= {} }
    }, async function updateRecord (request) {
      const record = await records.update(idOf(request.params), request.body)
      if (!record) throw new RecordNotFound(name, idOf(request.params))
      return record
    })
  }

  if (routes.delete) {
    app.delete(item, { schema: schemas.delete, onRequest: guards.write }, async function deleteRecord (request, reply) {
      if (!await records.delete(idOf(request.params))) throw new RecordNotFound(name, idOf(request.params))
      return reply.code(204).send(null)
    })
  }
}
