import { Type, type TInteger, type TObject, type TSchema } from '@sinclair/typebox'
import { ConditionalRead, ConditionalWrite, created, withEtag } from '../../schemas/conditional.js'
import { IdempotentCreate } from '../../schemas/idempotency.js'
import { OPERATORS, type FilterOp } from '../../db/field-lists.js'
import { Id, PG_INT_MAX, TEXT_PATTERN, ref } from '../../schemas/common.js'
import { ConstraintConflict, problemResponses, type ProblemExample } from '../../schemas/error.js'
import { createBodySchema, isWriteOnly, patchBodySchema, rowSchema, type Field, type FieldKind } from '../../schemas/fields.js'
import { pageQuery } from '../../schemas/page.js'
import { pascalName } from '../../schemas/record.js'
import type { ResolvedResourceOptions } from './options.js'
import { resourceOperation } from './schemas.js'

/** A column a list can filter on: the fields, and the server's own columns. */
export interface Column {
  name: string
  kind: FieldKind
}

export const serverColumns = (owner: boolean): Column[] => [
  { name: 'id', kind: 'integer' },
  { name: 'created_at', kind: 'timestamp' },
  { name: 'updated_at', kind: 'timestamp' },
  ...(owner ? [{ name: 'owner_id', kind: 'integer' as const }] : [])
]

const UNSORTABLE = new Set<FieldKind>(['text[]', 'jsonb'])
export const sortable = (column: Column) => !UNSORTABLE.has(column.kind)

/** The query parameter of a filter: `price` for equality, `price[gte]` for the others. */
export const filterParameter = (column: string, op: FilterOp) => op === 'eq' ? column : `${column}[${op}]`

const INT_MIN = -PG_INT_MAX - 1

/** One value of a filter: the field's type without its bounds, so `price[lt]=1000` is fine even if price is at most 500. */
function filterValue (kind: FieldKind, field?: Field): TSchema {
  switch (kind) {
    case 'integer': return Type.Integer({ minimum: INT_MIN, maximum: PG_INT_MAX })
    case 'number': return Type.Number()
    case 'boolean': return Type.Boolean()
    case 'date': return Type.String({ format: 'date' })
    case 'timestamp': return Type.String({ format: 'date-time' })
    default: return field?.enum ? Type.Unsafe({ type: 'string', enum: field.enum }) : Type.String({ pattern: TEXT_PATTERN })
  }
}

const OP_WORDS: Record<FilterOp, string> = {
  eq: 'equal to',
  ne: 'not equal to (rows without a value included)',
  lt: 'less than',
  lte: 'at most',
  gt: 'greater than',
  gte: 'at least',
  in: 'one of these comma-separated values',
  contains: 'containing this text, case-insensitive',
  is: '`null` or `not_null`'
}

function filterSchema (column: Column, op: FilterOp, field?: Field): TSchema {
  const description = `Only rows whose ${column.name} is ${OP_WORDS[op]}`
  if (op === 'is') return Type.Unsafe({ type: 'string', enum: ['null', 'not_null'], description: `Only rows whose ${column.name} is null or not` })
  if (op === 'in') return Type.Array(filterValue(column.kind, field), { minItems: 1, description })
  if (op === 'contains' && column.kind === 'text[]') return Type.String({ pattern: TEXT_PATTERN, description: `Only rows whose ${column.name} has this element` })
  if (op === 'contains') return Type.String({ pattern: TEXT_PATTERN, description })
  return Type.Unsafe({ ...filterValue(column.kind, field), description })
}

/** The list query: paging, sort, cursor, count, and a parameter for each filter each column supports. */
function listQuery ({ defaultLimit, maxLimit }: ResolvedResourceOptions, columns: Column[], fields: Field[]) {
  const sorts = columns.filter(sortable).map((column) => column.name)
  const filters: Record<string, TSchema> = {}
  for (const column of columns) {
    const field = fields.find((candidate) => candidate.name === column.name)
    for (const op of OPERATORS[column.kind]) filters[filterParameter(column.name, op)] = Type.Optional(filterSchema(column, op, field))
  }
  return Type.Object({
    ...pageQuery({ defaultLimit, maxLimit, offset: 'Rows to skip, in sort order' }),
    sort: Type.Optional(Type.String({
      description: `Comma-separated fields, each ascending or with a leading - descending, e.g. -${sorts.at(-1) ?? 'id'},id; ` +
        `ties end in id. Sortable: ${sorts.join(', ')}`
    })),
    cursor: Type.Optional(Type.String({ description: 'The position after the last row of a page, from its Link: rel="next" header' })),
    count: Type.Optional(Type.Unsafe<'exact'>({ type: 'string', enum: ['exact'], description: 'exact: the number of matching rows in X-Total-Count' })),
    ...filters
  }, { additionalProperties: false })
}

/** Route schemas of a resource defined by its fields, derived from them. */
export function rowSchemas (opts: ResolvedResourceOptions & { fields: Field[] }) {
  const { name, fields, owner, guards } = opts
  const operation = resourceOperation(name)
  const record = rowSchema(name, fields, { owner })
  // A writeOnly field neither filters nor sorts: either would tell its value, a guess at a time.
  const columns = [...serverColumns(owner), ...fields.filter((field) => !isWriteOnly(field))]
  const param = `${name}_id`
  const params = Type.Object({ [param]: Id({ description: `The id of a row of ${name}` }) }) as TObject<Record<string, TInteger>>
  const body = createBodySchema(name, fields)
  // An owner's routes authenticate even without guards.
  const read = guards.read ?? (owner ? true : undefined)
  const write = guards.write ?? (owner ? true : undefined)
  const missing: ProblemExample = [404, 'RESOURCE_NOT_FOUND', `${name} 7 not found`]
  return {
    record,
    param,
    columns,
    list: operation('list', `List ${name}, filtered and sorted`, {
      description: 'A bare JSON array. Filters: `?field=value`, or `?field[op]=value` with op one of ' +
        'ne, lt, lte, gt, gte, in, contains, is, as each field allows. A `Link: <...>; rel="next"` header points at the next page ' +
        'while rows remain; `count=exact` adds the number of matching rows in `X-Total-Count`.',
      querystring: listQuery(opts, columns, fields),
      response: { 200: Type.Array(ref(record)), ...problemResponses(422, 503) }
    }, read),
    create: operation('create', `Create a row of ${name}`, {
      body,
      headers: IdempotentCreate.headers,
      response: { 201: created(ref(record)), ...problemResponses(400, IdempotentCreate.inFlight, ConstraintConflict, 422, 503) }
    }, write),
    get: operation('get', `Read one row of ${name}`, {
      params,
      headers: ConditionalRead.headers,
      response: { 200: withEtag(ref(record)), ...ConditionalRead.notModified, ...problemResponses(missing, 422, 503) }
    }, read),
    replace: operation('replace', `Replace one row of ${name}: a field left out takes its default, or no value`, {
      params,
      body: Type.Object(body.properties, { additionalProperties: false, title: `${pascalName(name)}Replace` }),
      headers: ConditionalWrite.headers,
      response: { 200: withEtag(ref(record)), ...problemResponses(400, missing, ConstraintConflict, 412, 422, 428, 503) }
    }, write),
    update: operation('update', `Change the fields sent, and only those, of one row of ${name}`, {
      params,
      body: patchBodySchema(name, fields),
      headers: ConditionalWrite.headers,
      response: { 200: withEtag(ref(record)), ...problemResponses(400, missing, ConstraintConflict, 412, 422, 428, 503) }
    }, write),
    delete: operation('delete', `Delete one row of ${name}`, {
      params,
      headers: ConditionalWrite.headers,
      response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(missing, ConstraintConflict, 412, 422, 428, 503) }
    }, write)
  }
}
