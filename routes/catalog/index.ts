import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { createItemRepository } from '../../db/items.js'
import { conditionalWrite, rowEtags } from '../../http/conditional.js'
import { sendCreated } from '../../http/created.js'
import { documentRoutes } from '../../plugins/docs.js'
import { trailingSlashAliases } from '../../http/trailing-slash.js'
import { idempotentCreates } from '../../http/idempotency.js'
import { readsOn } from '../../http/reads.js'
import { problemErrorHandler } from '../../http/problems.js'
import { jsonBodiesOnly, validatorCompiler } from '../../http/validation.js'
import { addSchemas } from '../../schemas/common.js'
import { ProblemSchema, ValidationProblemSchema } from '../../schemas/error.js'
import { ItemPageSchema, ItemSchema } from '../../schemas/item.js'
import { page } from '../../schemas/page.js'
import { ItemNotFound, invalidInput } from './errors.js'
import { resolveCatalogOptions, type CatalogOptions } from './options.js'
import { catalogSchemas } from './schemas.js'

/** The item catalog: `/items` with offset or keyset pages, name search and partial update, after the db plugin. */
const catalog: FastifyPluginAsyncTypebox<CatalogOptions> = async (app, opts) => {
  const { defaultLimit, maxLimit, requireIfMatch, etags, idempotencyTtlHours, guards } = resolveCatalogOptions(opts)
  const items = createItemRepository(app.plinthDb.db)
  const read = readsOn(app, createItemRepository, items)
  jsonBodiesOnly(app)
  const itemEtags = etags ? rowEtags(app, 'items') : undefined
  const schemas = catalogSchemas(defaultLimit, maxLimit, guards, etags)
  const conditions = (id: number) => ({
    etags: itemEtags, requireIfMatch, id, what: `item ${id}`, exists: () => items.get(id), missing: () => new ItemNotFound(id)
  })
  const idempotent = idempotentCreates(app.plinthDb.db, idempotencyTtlHours, app.plinthClock)

  app.setValidatorCompiler(validatorCompiler)
  // On its own in a host app, the catalog still answers errors as problem documents.
  app.setErrorHandler(problemErrorHandler)
  addSchemas(app, [ProblemSchema, ValidationProblemSchema, ItemSchema, ItemPageSchema])
  documentRoutes(app)
  trailingSlashAliases(app)

  app.get('/items', { schema: schemas.listItems, onRequest: guards.read }, async function listItems (request) {
    const { offset, after_id: afterId } = request.query
    const limit = Math.min(request.query.limit, maxLimit)
    const q = request.query.q || undefined
    if (afterId === undefined) {
      const { rows, total } = await read(request, (items) => items.page({ q, offset, limit }))
      return page(rows, total, { offset, limit })
    }
    if (offset > 0) throw invalidInput('querystring', '/offset', 'must be 0 when after_id is given')
    // One row more than the page says whether another page follows.
    const { rows, total } = await read(request, (items) => items.pageAfter({ q, afterId, limit: limit + 1 }))
    return page(rows.slice(0, limit), total, { offset: 0, limit }, rows.length > limit)
  })

  app.get('/items/:item_id', { schema: schemas.getItem, onRequest: guards.read }, async function getItem (request, reply) {
    const item = await read(request, (items) => items.get(request.params.item_id))
    if (!item) throw new ItemNotFound(request.params.item_id)
    return itemEtags?.notModified(request, reply, item) ? reply : item
  })

  app.post('/items', { schema: schemas.createItem, onRequest: guards.write, ...idempotent }, async function createItem (request, reply) {
    const item = await items.create(request.body)
    return sendCreated(reply, request, item, { etag: itemEtags?.of(item), body: item })
  })

  app.patch('/items/:item_id', {
    schema: schemas.updateItem,
    onRequest: guards.write,
    // A PATCH without any body changes nothing, like `{}`.
    preValidation: async function emptyPatch (request) { request.body ??= {} }
  }, async function updateItem (request, reply) {
    const id = request.params.item_id
    const item = await conditionalWrite(request, { ...conditions(id), write: (ifVersions) => items.update(id, request.body, { ifVersions }) })
    if (itemEtags) reply.header('etag', itemEtags.of(item))
    return item
  })

  app.delete('/items/:item_id', { schema: schemas.deleteItem, onRequest: guards.write }, async function deleteItem (request, reply) {
    const id = request.params.item_id
    await conditionalWrite(request, { ...conditions(id), write: (ifVersions) => items.delete(id, { ifVersions }) })
    return reply.code(204).send(null)
  })
}

export default fp(catalog, { name: 'plinth-catalog', fastify: '5.x', dependencies: ['plinth-db'], encapsulate: true })
