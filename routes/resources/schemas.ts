import { Type, type TInteger, type TObject } from '@sinclair/typebox'
import { Id, ref } from '../../schemas/common.js'
import { guarded, problemResponses, type ProblemExample } from '../../schemas/error.js'
import { pageQuery } from '../../schemas/page.js'
import { RecordCreateSchema, RecordUpdateSchema, pascalName, recordSchema } from '../../schemas/record.js'
import type { ResolvedResourceOptions } from './options.js'

/** The list query: page size limits come from the plugin options, so the OpenAPI shows them. */
function listQuery (defaultLimit: number, maxLimit: number) {
  return Type.Object(pageQuery({ defaultLimit, maxLimit, offset: 'Records to skip, by id order' }), { additionalProperties: false })
}

export function resourceSchemas ({ name, defaultLimit, maxLimit, guards }: ResolvedResourceOptions) {
  const stem = pascalName(name)
  const tags = [name]
  const record = recordSchema(name)
  const param = `${name}_id`
  const params = Type.Object({ [param]: Id({ description: `The id of a record of ${name}` }) }) as TObject<Record<string, TInteger>>
  const deleted = Type.Null({ description: 'Deleted' })
  const missing: ProblemExample = [404, 'RESOURCE_NOT_FOUND', `${name} 7 not found`]
  return {
    record,
    param,
    list: guarded({
      operationId: `list${stem}`,
      summary: `List ${name} by id: ${defaultLimit} per page unless limit says otherwise, at most ${maxLimit}`,
      description: 'A bare JSON array. When more records follow, a `Link: <...>; rel="next"` header points at the next page.',
      tags,
      querystring: listQuery(defaultLimit, maxLimit),
      response: { 200: Type.Array(ref(record)), ...problemResponses(422, 503) }
    }, guards.read),
    create: guarded({
      operationId: `create${stem}`,
      summary: `Create a record in ${name}`,
      tags,
      body: RecordCreateSchema,
      response: { 201: ref(record), ...problemResponses(400, 422, 503) }
    }, guards.write),
    get: guarded({
      operationId: `get${stem}`,
      summary: `Read one record of ${name}`,
      tags,
      params,
      response: { 200: ref(record), ...problemResponses(missing, 422, 503) }
    }, guards.read),
    update: guarded({
      operationId: `update${stem}`,
      summary: `Change the fields sent, and only those, of one record of ${name}`,
      tags,
      params,
      body: RecordUpdateSchema,
      response: { 200: ref(record), ...problemResponses(400, missing, 422, 503) }
    }, guards.write),
    delete: guarded({
      operationId: `delete${stem}`,
      summary: `Delete one record of ${name}`,
      tags,
      params,
      response: { 204: deleted, ...problemResponses(missing, 422, 503) }
    }, guards.write)
  }
}
