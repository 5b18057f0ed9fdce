import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { createRepository } from '../../db/crud.js'
import { ensureResourceTable } from '../../db/resources.js'
import { resourceTable } from '../../db/schema.js'
import { documentRoutes } from '../../plugins/docs.js'
import { problemErrorHandler } from '../../plugins/errors.js'
import { validatorCompiler } from '../../plugins/validation.js'
import { addSchemas } from '../../schemas/common.js'
import { ProblemSchema, ValidationProblemSchema } from '../../schemas/error.js'
import { RecordNotFound } from './errors.js'
import { resolveResourceOptions, type ResolvedResourceOptions, type ResourceOptions } from './options.js'
import { resourceSchemas } from './schemas.js'

const resource: FastifyPluginAsyncTypebox<ResolvedResourceOptions> = async (app, opts) => {
  const { name, routes, maxLimit, guard: onRequest } = opts
  const table = resourceTable(opts.table)
  if (opts.createTable) await ensureResourceTable(app.plinthDb.db, table)
  const records = createRepository(app.plinthDb.db, table)
  const schemas = resourceSchemas(opts)
  const item = `/:${schemas.param}`
  const idOf = (params: Record<string, number | undefined>) => params[schemas.param] as number

  app.setValidatorCompiler(validatorCompiler)
  // On its own in a host app, the resource still answers errors as problem documents, 422 included.
  app.setErrorHandler(problemErrorHandler)
  addSchemas(app, [ProblemSchema, ValidationProblemSchema, schemas.record])
  documentRoutes(app)

  if (routes.list) {
    app.get('/', { schema: schemas.list, onRequest }, async function listRecords (request, reply) {
      const { offset } = request.query
      const limit = Math.min(request.query.limit, maxLimit)
      // One row more than the page says whether another follows, without counting the table.
      const rows = await records.list({ offset, limit: limit + 1 })
      if (rows.length > limit) reply.header('link', `<${request.routeOptions.url}?offset=${offset + limit}&limit=${limit}>; rel="next"`)
      return rows.slice(0, limit)
    })
  }

  if (routes.create) {
    app.post('/', { schema: schemas.create, onRequest }, async function createRecord (request, reply) {
      return reply.code(201).send(await records.create(request.body))
    })
  }

  if (routes.get) {
    app.get(item, { schema: schemas.get, onRequest }, async function getRecord (request) {
      const record = await records.get(idOf(request.params))
      if (!record) throw new RecordNotFound(name, idOf(request.params))
      return record
    })
  }

  if (routes.update) {
    app.put(item, {
      schema: schemas.update,
      onRequest,
      // A PUT without any body changes nothing, like `{}`.
      preValidation: async function emptyUpdate (request) { request.body ??= {} }
    }, async function updateRecord (request) {
      const record = await records.update(idOf(request.params), request.body)
      if (!record) throw new RecordNotFound(name, idOf(request.params))
      return record
    })
  }

  if (routes.delete) {
    app.delete(item, { schema: schemas.delete, onRequest }, async function deleteRecord (request, reply) {
      if (!await records.delete(idOf(request.params))) throw new RecordNotFound(name, idOf(request.params))
      return reply.code(204).send(null)
    })
  }
}

/** Profile C, once per resource after the db plugin: `{ prefix: '/api/v1', name: 'notes' }` serves `/api/v1/notes/` as `plinth-resource:notes`. */
const resourcePlugin: FastifyPluginAsyncTypebox<ResourceOptions> = async (app, opts) => {
  const options = resolveResourceOptions(opts)
  // This wrapper is not encapsulated, so Fastify ignores its prefix: it is handed on, plus the name.
  const { prefix = '' } = opts as { prefix?: string }
  const plugin = fp<ResolvedResourceOptions>((instance, resolved) => resource(instance, resolved), {
    name: `plinth-resource:${options.name}`, fastify: '5.x', dependencies: ['plinth-db'], encapsulate: true
  })
  await app.register(plugin, { ...options, prefix: `${prefix.replace(/\/+$/, '')}/${options.name}` })
}

export default fp(resourcePlugin, { name: 'plinth-resource', fastify: '5.x' })
export { ROUTE_NAMES, ResourceOptionsSchema, type ResourceOptions, type RouteName } from './options.js'
export { RecordNotFound } from './errors.js'
