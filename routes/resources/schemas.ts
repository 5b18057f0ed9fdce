import { Type, type TInteger, type TObject } from '@sinclair/typebox'
import { ConditionalRead, ConditionalWrite, created, withEtag } from '../../schemas/conditional.js'
import { IdempotentCreate } from '../../schemas/idempotency.js'
import { Id, ref } from '../../schemas/common.js'
import { ConstraintConflict, guarded, problemResponses, type ProblemExample } from '../../schemas/error.js'
import { pageQuery } from '../../schemas/page.js'
import { RecordCreateSchema, RecordUpdateSchema, pascalName, recordSchema } from '../../schemas/record.js'
import type { ResolvedResourceOptions } from './options.js'

/** The list query: page size limits come from the plugin options, so the OpenAPI shows them. */
function listQuery (defaultLimit: number, maxLimit: number) {
  return Type.Object(pageQuery({ defaultLimit, maxLimit, offset: 'Records to skip, by id order' }), { additionalProperties: false })
}

/** A route of the resource `name`: its operationId (`createNotes`), its tag, and a guard's scheme and statuses. */
export function resourceOperation (name: string) {
  const stem = pascalName(name)
  return <T extends { response: object }>(verb: string, summary: string, schema: T, guard: unknown) =>
    guarded({ operationId: `${verb}${stem}`, summary, tags: [name], ...schema }, guard)
}

export function resourceSchemas ({ name, defaultLimit, maxLimit, guards }: ResolvedResourceOptions) {
  const operation = resourceOperation(name)
  const record = recordSchema(name)
  const param = `${name}_id`
  const params = Type.Object({ [param]: Id({ description: `The id of a record of ${name}` }) }) as TObject<Record<string, TInteger>>
  const deleted = Type.Null({ description: 'Deleted' })
  const missing: ProblemExample = [404, 'RESOURCE_NOT_FOUND', `${name} 7 not found`]
  return {
    record,
    param,
    list: operation('list', `List ${name} by id: ${defaultLimit} per page unless limit says otherwise, at most ${maxLimit}`, {
      description: 'A bare JSON array. When more records follow, a `Link: <...>; rel="next"` header points at the next page.',
      querystring: listQuery(defaultLimit, maxLimit),
      response: { 200: Type.Array(ref(record)), ...problemResponses(422, 503) }
    }, guards.read),
    create: operation('create', `Create a record in ${name}`, {
      body: RecordCreateSchema,
      headers: IdempotentCreate.headers,
      response: { 201: created(ref(record)), ...problemResponses(400, IdempotentCreate.inFlight, ConstraintConflict, 422, 503) }
    }, guards.write),
    get: operation('get', `Read one record of ${name}`, {
      params,
      headers: ConditionalRead.headers,
      response: { 200: withEtag(ref(record)), ...ConditionalRead.notModified, ...problemResponses(missing, 422, 503) }
    }, guards.read),
    update: operation('update', `Change the fields sent, and only those, of one record of ${name}`, {
      params,
      body: RecordUpdateSchema,
      headers: ConditionalWrite.headers,
      response: { 200: withEtag(ref(record)), ...problemResponses(400, missing, ConstraintConflict, 412, 422, 428, 503) }
    }, guards.write),
    delete: operation('delete', `Delete one record of ${name}`, {
      params,
      headers: ConditionalWrite.headers,
      response: { 204: deleted, ...problemResponses(missing, ConstraintConflict, 412, 422, 428, 503) }
    }, guards.write)
  }
}
