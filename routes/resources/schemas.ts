import { Type, type TInteger, type TObject } from '@sinclair/typebox'
import { ConditionalRead, ConditionalWrite, created, withEtag } from '../../schemas/conditional.js'
import { IdempotentCreate } from '../../schemas/idempotency.js'
import { Id, ref } from '../../schemas/common.js'
import { ConstraintConflict, guarded, problemResponses, type ProblemExample } from '../../schemas/error.js'
import { createBodySchema, isWriteOnly, pascalName, patchBodySchema, type Field } from '../../schemas/fields.js'
import { listOperation, serverColumns } from './list-query.js'
import type { ResolvedResourceOptions } from './options.js'
import { RecordNotFound } from './errors.js'
import type { ResourcePreset } from './presets.js'

/** A route of the resource `name`: its operationId (`createNotes`), its tag, and a guard's scheme and statuses. */
function resourceOperation (name: string) {
  const stem = pascalName(name)
  return <T extends { response: object }>(verb: string, summary: string, schema: T, guard: unknown) =>
    guarded({ operationId: `${verb}${stem}`, summary, tags: [name], ...schema }, guard)
}

export function resourceSchemas (opts: ResolvedResourceOptions, fields: Field[], preset: ResourcePreset) {
  const { name, owner, guards } = opts
  const { noun } = preset
  const operation = resourceOperation(name)
  const row = preset.rowSchema(name, fields, owner)
  // A writeOnly field neither filters nor sorts: either would tell its value, a guess at a time.
  const columns = [...serverColumns({ owner, timestamps: preset.timestamps }), ...fields.filter((field) => !isWriteOnly(field))]
  const param = `${name}_id`
  const params = Type.Object({ [param]: Id({ description: `The id of a ${noun} of ${name}` }) }) as TObject<Record<string, TInteger>>
  const body = createBodySchema(name, fields, preset.bodyTitles?.create)
  const change = patchBodySchema(name, fields, preset.bodyTitles?.change)
  // An owner's routes authenticate even without guards.
  const read = guards.read ?? (owner ? true : undefined)
  const write = guards.write ?? (owner ? true : undefined)
  const missing: ProblemExample = RecordNotFound.example(name, 7)
  const written = () => ({ 200: withEtag(ref(row)), ...problemResponses(400, missing, ConstraintConflict, 412, 422, 428, 503) })
  const { summary, ...list } = listOperation(name, preset, opts, columns, fields)
  return {
    row,
    param,
    columns,
    list: operation('list', summary, { ...list, response: { 200: Type.Array(ref(row)), ...problemResponses(422, 503) } }, read),
    create: operation('create', `Create a ${noun} ${preset.into} ${name}`, {
      body,
      headers: IdempotentCreate.headers,
      response: { 201: created(ref(row)), ...problemResponses(400, IdempotentCreate.inFlight, ConstraintConflict, 422, 503) }
    }, write),
    get: operation('get', `Read one ${noun} of ${name}`, {
      params,
      headers: ConditionalRead.headers,
      response: { 200: withEtag(ref(row)), ...ConditionalRead.notModified, ...problemResponses(missing, 422, 503) }
    }, read),
    replace: operation('replace', `Replace one ${noun} of ${name}: a field left out takes its default, or no value`, {
      params,
      body: Type.Object(body.properties, { additionalProperties: false, title: `${pascalName(name)}Replace` }),
      headers: ConditionalWrite.headers,
      response: written()
    }, write),
    update: operation('update', `Change the fields sent, and only those, of one ${noun} of ${name}`, {
      params,
      body: change,
      headers: ConditionalWrite.headers,
      response: written()
    }, write),
    delete: operation('delete', `Delete one ${noun} of ${name}`, {
      params,
      headers: ConditionalWrite.headers,
      response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(missing, ConstraintConflict, 412, 422, 428, 503) }
    }, write)
  }
}
