import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { documentRoutes } from '../../plugins/docs.js'
import { problemErrorHandler } from '../../plugins/errors.js'
import { jsonBodiesOnly, validatorCompiler } from '../../plugins/validation.js'
import { addSchemas } from '../../schemas/common.js'
import { ProblemSchema, ValidationProblemSchema } from '../../schemas/error.js'
import { recordRoutes } from './records.js'
import { rowRoutes } from './rows.js'
import { resolveResourceOptions, type ResolvedResourceOptions, type ResourceOptions } from './options.js'

const resource: FastifyPluginAsyncTypebox<ResolvedResourceOptions> = async (app, opts) => {
  app.setValidatorCompiler(validatorCompiler)
  jsonBodiesOnly(app)
  // On its own in a host app, the resource still answers errors as problem documents, 422 included.
  app.setErrorHandler(problemErrorHandler)
  addSchemas(app, [ProblemSchema, ValidationProblemSchema])
  documentRoutes(app)
  await (opts.fields ? rowRoutes : recordRoutes)(app, opts)
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
