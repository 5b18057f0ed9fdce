import { Type, type TInteger, type TObject } from '@sinclair/typebox'
import { Id, ref } from '../../schemas/common.js'
import { problemResponses, type ProblemExample } from '../../schemas/error.js'
import { pageQuery } from '../../schemas/page.js'
import { RecordCreateSchema, RecordUpdateSchema, pascalName, recordSchema } from '../../schemas/record.js'
import type { ResolvedResourceOptions } from './options.js'

/** The list query: page size limits come from the plugin options, so the OpenAPI shows them. */
function listQuery (defaultLimit: number, maxLimit: number) {
  return Type.Object(pageQuery({ defaultLimit, maxLimit, offset: 'Records to skip, by id order' }), { additionalProperties: false })
}

export function resourceSchemas ({ name, defaultLimit, maxLimit, guard }: ResolvedResourceOptions) {
  const stem = pascalName(name)
  const tags = [name]
  const record = recordSchema(name)
  const param = `${name}_id`
  const params = Type.Object({ [param]: Id({ description: `The id of a record of ${name}` }) }) as TObject<Record<string, TInteger>>
  // A guarded resource also answers 401 and 403: documented, and serialized as problem documents.
  const denied = guard ? [401, 403] : []
  const deleted = Type.Null({ description: 'Deleted' })
  const missing: ProblemExample = [404, 'RESOURCE_NOT_FOUND', `${name} 7 not found`]
  return {
    record,
    param,
    list: {
      operationId: `list${stem}`,
      summary: `List ${name} by id: ${defaultLimit} per page unless limit says otherwise, at most ${maxLimit}`,
      description: 'A bare JSON array. When more records follow, a `Link: <...>; rel="next"` header points at the next page.',
      tags,
      querystring: listQuery(defaultLimit, maxLimit),
      response: { 200: Type.Array(ref(record)), ...problemResponses(...denied, 422, 503) }
    },
    create: {
      operationId: `create${stem}`,
      summary: `Create a record in ${name}`,
      tags,
      body: RecordCreateSchema,
      response: { 201: ref(record), ...problemResponses(400, ...denied, 422, 503) }
    },
    get: {
      operationId: `get${stem}`,
      summary: `Read one record of ${name}`,
      tags,
      params,
      response: { 200: ref(record), ...problemResponses(...denied, missing, 422, 503) }
    },
    update: {
      operationId: `update${stem}`,
      summary: `Change the fields sent, and only those, of one record of ${name}`,
      tags,
      params,
      body: RecordUpdateSchema,
      response: { 200: ref(record), ...problemResponses(400, ...denied, missing, 422, 503) }
    },
    delete: {
      operationId: `delete${stem}`,
      summary: `Delete one record of ${name}`,
      tags,
      params,
      response: { 204: deleted, ...problemResponses(...denied, missing, 422, 503) }
    }
  }
}
