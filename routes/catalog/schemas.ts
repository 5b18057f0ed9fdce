import { Type } from '@sinclair/typebox'
import { PG_INT_MAX, Text, ref } from '../../schemas/common.js'
import type { Guards } from '../../http/options.js'
import { ConditionalRead, ConditionalWrite, created, withEtag } from '../../schemas/conditional.js'
import { IdempotentCreate } from '../../schemas/idempotency.js'
import { guarded, problemResponses, type ProblemExample } from '../../schemas/error.js'
import { pageQuery } from '../../schemas/page.js'
import {
  ITEM_NAME_MAX, ItemCreateSchema, ItemIdParams, ItemPageSchema, ItemSchema, ItemUpdateSchema
} from '../../schemas/item.js'
import { ItemNotFound } from './errors.js'

const tags = ['items']
const missing: ProblemExample = ItemNotFound.example(7)

/** The list query: page size limits come from the plugin options, so the OpenAPI shows them. */
function listQuery (defaultLimit: number, maxLimit: number) {
  return Type.Object({
    ...pageQuery({ defaultLimit, maxLimit, offset: 'Items to skip; must be 0 with after_id' }),
    q: Type.Optional(Text({ maxLength: ITEM_NAME_MAX, description: 'Only items whose name contains this text (case-insensitive)' })),
    after_id: Type.Optional(Type.Integer({
      minimum: 0,
      maximum: PG_INT_MAX,
      description: 'Keyset paging: only items with a greater id (pass the last id of the previous page); as fast at any depth'
    }))
  }, { additionalProperties: false })
}

export function catalogSchemas (defaultLimit: number, maxLimit: number, { read, write }: Guards = {}, etags = true) {
  const row = ref(ItemSchema)
  // Without ETags, no conditional headers (not even an undefined key, which Fastify warns of) and none of their statuses.
  const reads = etags ? { conditional: { headers: ConditionalRead.headers }, ok: withEtag(row), notModified: ConditionalRead.notModified } : { conditional: {}, ok: row }
  const writes = etags ? { conditional: { headers: ConditionalWrite.headers }, ok: withEtag(row), conditions: [412, 428] as const } : { conditional: {}, ok: row, conditions: [] }
  return {
    listItems: guarded({
      operationId: 'listItems',
      summary: 'List items by id, one page at a time, optionally filtered by name',
      tags,
      querystring: listQuery(defaultLimit, maxLimit),
      response: { 200: ref(ItemPageSchema), ...problemResponses(422, 503) }
    }, read),
    getItem: guarded({
      operationId: 'getItem',
      summary: 'Read one item',
      tags,
      params: ItemIdParams,
      ...reads.conditional,
      response: { 200: reads.ok, ...reads.notModified, ...problemResponses(missing, 422, 503) }
    }, read),
    createItem: guarded({
      operationId: 'createItem',
      summary: 'Create an item',
      tags,
      body: ItemCreateSchema,
      headers: IdempotentCreate.headers,
      response: { 201: created(row, etags), ...problemResponses(400, IdempotentCreate.inFlight, 422, 503) }
    }, write),
    updateItem: guarded({
      operationId: 'updateItem',
      summary: 'Change the fields sent, and only those',
      tags,
      params: ItemIdParams,
      body: ItemUpdateSchema,
      ...writes.conditional,
      response: { 200: writes.ok, ...problemResponses(400, missing, ...writes.conditions, 422, 503) }
    }, write),
    deleteItem: guarded({
      operationId: 'deleteItem',
      summary: 'Delete an item',
      tags,
      params: ItemIdParams,
      ...writes.conditional,
      response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(missing, ...writes.conditions, 422, 503) }
    }, write)
  }
}
