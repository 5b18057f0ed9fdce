import { Type, type TInteger, type TObject } from '@sinclair/typebox'
import { ConditionalRead, ConditionalWrite, created, withEtag } from '../../schemas/conditional.js'
import { IdempotentCreate } from '../../schemas/idempotency.js'
import { Id, ref } from '../../schemas/common.js'
import { ConstraintConflict, guarded, problemResponses, type ProblemExample } from '../../schemas/error.js'
import { createBodySchema, isWriteOnly, pascalName, patchBodySchema, type Field } from '../../schemas/fields.js'
import { listOperation, serverColumns } from './list-query.js'
import type { ResolvedResourceOptions } from './options.js'
import { RecordNotFound, ResourceConflict, ResourceReferenced } from './errors.js'
import type { ResourcePreset } from './presets.js'

/** A route of the resource `name`: its operationId (`createNotes`), its tag, and a guard's scheme and statuses. */
function resourceOperation (name: string) {
  const stem = pascalName(name)
  return <T extends { response: object }>(verb: string, summary: string, schema: T, guard: unknown) =>
    guarded({ operationId: `${verb}${stem}`, summary, tags: [name], ...schema }, guard)
}

/** A body made of its fields' first examples, as one row and as an array, when any field has examples. */
function bodyExamples (body: TObject): { examples?: unknown[] } {
  const example = Object.fromEntries(Object.entries(body.properties)
    .filter(([, property]) => Array.isArray(property.examples) && property.examples.length > 0)
    .map(([key, property]) => [key, (property.examples as unknown[])[0]]))
  return Object.keys(example).length > 0 ? { examples: [example, [example]] } : {}
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
  // A constraint a host adds to the table itself is answered as on any route: UNIQUE_VIOLATION, FOREIGN_KEY_VIOLATION.
  const conflict: ProblemExample = [...ResourceConflict.example(name, opts.unique[0]?.fields.join(' and ') ?? 'slug'),
    `${ConstraintConflict[3]!}; for a unique key of the resource, RESOURCE_CONFLICT naming its fields`]
  const referenced: ProblemExample = [...ResourceReferenced.example(name, 7, 'tasks (project_id)'),
    'Rows of another resource still reference this one, with onDelete restrict (RESOURCE_REFERENCED): delete or change them first']
  const written = () => ({ 200: withEtag(ref(row)), ...problemResponses(400, missing, conflict, 412, 422, 428, 503) })
  const { summary, ...list } = listOperation(name, preset, opts, columns, fields, { search: opts.search })
  return {
    row,
    param,
    columns,
    list: operation('list', summary, { ...list, response: { 200: Type.Array(ref(row)), ...problemResponses(422, 503) } }, read),
    createBody: body,
    create: operation('create', `Create a ${noun} ${preset.into} ${name}`, {
      description: `A JSON array of 1 to ${opts.maxBatch} bodies creates every row or none, in one transaction, and answers them in order ` +
        '(without Location or ETag); a 422 names each bad row by its index, as `/body/3/title`.',
      body: Type.Union([body, Type.Array(body, { minItems: 1, maxItems: opts.maxBatch })], bodyExamples(body)),
      headers: IdempotentCreate.headers,
      response: {
        201: created(Type.Union([ref(row), Type.Array(ref(row), { description: 'The rows of an array, in its order' })])),
        ...problemResponses(400, IdempotentCreate.inFlight, conflict, 422, 503)
      }
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
      response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(missing, referenced, 412, 422, 428, 503) }
    }, write)
  }
}
