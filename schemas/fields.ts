import { Type, type Static, type TObject, type TProperties } from '@sinclair/typebox'
import { IDENTIFIER_PATTERN, Id, PG_INT_MAX, PG_INT_MIN, TEXT_PATTERN, Timestamp } from './common.js'
import { FieldError } from './errors.js'
import { MAX_OBJECT_DEPTH } from './storable.js'

export type FieldKind = 'text' | 'integer' | 'number' | 'boolean' | 'timestamp' | 'date' | 'text[]' | 'jsonb'

export interface Field {
  name: string
  kind: FieldKind
  /** The JSON Schema of a value, without the null alternative; text is kept free of NUL characters. */
  value: JsonSchema
  nullable: boolean
  /** May be left out of a create body: it then takes `default`, or stays unset (NULL). */
  optional: boolean
  default?: unknown
  enum?: string[]
  /** An integer field that holds the id of a row of another resource (or this one): a foreign key. */
  references?: FieldReference
}

/** What happens to the rows that reference a row when it is deleted. */
export type OnDelete = 'cascade' | 'restrict' | 'set-null'
export const ON_DELETE: readonly OnDelete[] = ['cascade', 'restrict', 'set-null']

export interface FieldReference {
  /** The referenced resource's name. */
  resource: string
  onDelete: OnDelete
}

/** The JSON Schema keywords of a reference, as RESOURCES_FILE writes them. */
export const REFERENCES = 'x-references'
export const ON_DELETE_KEYWORD = 'x-on-delete'

/** A field holding the id of a row of `resource`: `project_id: Reference('projects', { onDelete: 'cascade' })`. */
export function Reference (resource: string, { onDelete = 'restrict', ...options }: { onDelete?: OnDelete } & Record<string, unknown> = {}) {
  return Type.Integer({ minimum: 1, ...options, [REFERENCES]: resource, [ON_DELETE_KEYWORD]: onDelete })
}

export type JsonSchema = Record<string, unknown>

/** `user_notes` -> `UserNotes`; `a_1` -> `A_1` keeps its underscore, so two names never share a component name. */
export const pascalName = (name: string) => name.replace(/^[a-z]|_[a-z]/g, (match) => match.slice(-1).toUpperCase())

/** Columns every row has, and the list's own query parameters: no field may take these names. */
export const SERVER_FIELDS = ['id', 'created_at', 'updated_at', 'owner_id']
export const LIST_PARAMETERS = ['limit', 'offset', 'sort', 'cursor', 'count']

const FIELD_NAME = new RegExp(IDENTIFIER_PATTERN)
const STRING_FORMATS = new Set(['email', 'uri', 'uuid', 'date', 'date-time'])
const KEYWORDS: Record<string, string[]> = {
  string: ['minLength', 'maxLength', 'pattern', 'format', 'enum'],
  integer: ['minimum', 'maximum'],
  number: ['minimum', 'maximum'],
  boolean: [],
  array: ['items', 'minItems', 'maxItems', 'uniqueItems'],
  object: ['properties', 'required', 'additionalProperties', 'patternProperties', 'minProperties', 'maxProperties']
}
const ANNOTATIONS = new Set(['type', 'title', 'description', 'examples', 'default', 'nullable', '$comment', 'deprecated', 'readOnly', 'writeOnly'])

export const SUPPORTED_FIELDS = 'a string (minLength, maxLength, pattern, format email, uri, uuid, date or date-time, or enum), ' +
  'an integer or a number (minimum, maximum), a boolean, an array of strings or an object, each optionally nullable'

const plain = (schema: unknown): JsonSchema => JSON.parse(JSON.stringify(schema)) as JsonSchema

function withoutNull (schema: JsonSchema): { value: JsonSchema, nullable: boolean } {
  const isNull = (branch: JsonSchema) => branch.type === 'null'
  if (Array.isArray(schema.anyOf) && (schema.anyOf as JsonSchema[]).some(isNull)) {
    const { anyOf, ...outer } = schema
    const rest = (anyOf as JsonSchema[]).filter((branch) => !isNull(branch))
    return { value: rest.length === 1 ? { ...outer, ...rest[0] } : { ...outer, anyOf: rest }, nullable: true }
  }
  if (Array.isArray(schema.type) && schema.type.length === 2 && schema.type.includes('null')) {
    return { value: { ...schema, type: schema.type.find((type) => type !== 'null') }, nullable: true }
  }
  return { value: schema, nullable: schema.nullable === true }
}

/** A TypeBox union of string literals (`Type.Union([Type.Literal('a'), ...])`) is an enum. */
function literalsAsEnum (schema: JsonSchema): JsonSchema {
  const branches = schema.anyOf
  if (!Array.isArray(branches) || !branches.every((branch: JsonSchema) => typeof branch.const === 'string')) return schema
  const { anyOf, ...outer } = schema
  return { ...outer, type: 'string', enum: (anyOf as JsonSchema[]).map((branch) => branch.const) }
}

function unknownKeyword (value: JsonSchema): string | undefined {
  const allowed = KEYWORDS[value.type as string] ?? []
  return Object.keys(value).find((key) => !allowed.includes(key) && !ANNOTATIONS.has(key))
}

function kindOf (value: JsonSchema): FieldKind {
  const { type, format } = value
  if (typeof type !== 'string' || !(type in KEYWORDS)) throw new FieldError(`type ${JSON.stringify(type ?? value)} is not supported; a field is ${SUPPORTED_FIELDS}`)
  const keyword = unknownKeyword(value)
  if (keyword !== undefined) throw new FieldError(`${keyword} is not supported on ${type} fields`)
  switch (type) {
    case 'string':
      if (format !== undefined && !STRING_FORMATS.has(format as string)) throw new FieldError(`format ${String(format)} is not supported`)
      if (value.enum !== undefined && !(Array.isArray(value.enum) && value.enum.length > 0 && value.enum.every((item) => typeof item === 'string'))) {
        throw new FieldError('enum must be a non-empty list of strings')
      }
      return format === 'date-time' ? 'timestamp' : format === 'date' ? 'date' : 'text'
    case 'integer': {
      const { minimum = PG_INT_MIN, maximum = PG_INT_MAX } = value as { minimum?: number, maximum?: number }
      if (minimum < PG_INT_MIN || maximum > PG_INT_MAX) throw new FieldError(`integers are PostgreSQL integers, from ${PG_INT_MIN} to ${PG_INT_MAX}; use a number for larger values`)
      return 'integer'
    }
    case 'array': {
      const items = value.items as JsonSchema | undefined
      if (items?.type !== 'string' || unknownKeyword(items) !== undefined || items.format !== undefined) {
        throw new FieldError('an array field holds strings: items must be { type: "string" } with minLength, maxLength, pattern or enum')
      }
      return 'text[]'
    }
    case 'object': return 'jsonb'
    default: return type as 'number' | 'boolean'
  }
}

/** NUL-free text: PostgreSQL cannot store it, so it is a 422 rather than a driver error. */
function storable (value: JsonSchema, kind: FieldKind): JsonSchema {
  if (kind === 'text' && value.enum === undefined && value.pattern !== TEXT_PATTERN) {
    return value.pattern === undefined ? { ...value, pattern: TEXT_PATTERN } : { ...value, allOf: [{ pattern: TEXT_PATTERN }] }
  }
  if (kind === 'text[]') return { ...value, items: storable(value.items as JsonSchema, 'text') }
  if (kind === 'integer') return { minimum: PG_INT_MIN, maximum: PG_INT_MAX, ...value }
  return value
}

/** `readOnly`: set by its default or by the host's own code, never by a body, which has it stripped. */
export const isReadOnly = (field: Field) => field.value.readOnly === true

/** `writeOnly`: taken from bodies, and never in an answer, nor a filter or a sort that would tell it. */
export const isWriteOnly = (field: Field) => field.value.writeOnly === true

/** A reference's keywords taken out of `value` (Ajv knows no x- keywords), checked. */
function takeReference (name: string, value: JsonSchema, nullable: boolean): FieldReference | undefined {
  const { [REFERENCES]: resource, [ON_DELETE_KEYWORD]: given } = value
  delete value[REFERENCES]
  delete value[ON_DELETE_KEYWORD]
  if (resource === undefined) {
    if (given !== undefined) throw new FieldError(`${ON_DELETE_KEYWORD} needs ${REFERENCES}`)
    return undefined
  }
  const onDelete = given ?? 'restrict'
  if (value.type !== 'integer') throw new FieldError(`${REFERENCES} is for integer fields, which hold the referenced row's id`)
  if (typeof resource !== 'string' || !FIELD_NAME.test(resource)) throw new FieldError(`${REFERENCES} must name a resource (a lower-case identifier)`)
  if (!ON_DELETE.includes(onDelete as OnDelete)) throw new FieldError(`${ON_DELETE_KEYWORD} must be one of ${ON_DELETE.join(', ')} (got ${JSON.stringify(onDelete)})`)
  if (onDelete === 'set-null' && !nullable) throw new FieldError(`${ON_DELETE_KEYWORD} set-null needs a nullable field`)
  if (!name.endsWith('_id') || name === '_id') throw new FieldError(`a reference's name ends in _id (project_id), so that ?embed=${name.replace(/_id$/, '')} can name its row`)
  return { resource, onDelete: onDelete as OnDelete }
}

function readField (name: string, schema: JsonSchema, required: boolean): Field {
  if (!FIELD_NAME.test(name)) throw new FieldError('a field name is a lower-case identifier: a letter, then letters, digits or _, at most 63 characters')
  if (SERVER_FIELDS.includes(name)) throw new FieldError(`${SERVER_FIELDS.join(', ')} are set by the server`)
  if (LIST_PARAMETERS.includes(name)) throw new FieldError(`${LIST_PARAMETERS.join(', ')} are query parameters of the list`)
  const { value: raw, nullable } = withoutNull(plain(schema))
  const value = literalsAsEnum(raw)
  const references = takeReference(name, value, nullable)
  const fallback = value.default
  delete value.default
  delete value.nullable
  const kind = kindOf(value)
  const field: Field = { name, kind, value: storable(value, kind), nullable, optional: !required }
  if (fallback !== undefined) field.default = fallback
  if (Array.isArray(value.enum)) field.enum = value.enum as string[]
  if (references) field.references = references
  if (isReadOnly(field) && isWriteOnly(field)) throw new FieldError('a field is readOnly or writeOnly, not both')
  // Embeds show the referenced row and list the rows by it, and a restrict delete names the field.
  if (references && isWriteOnly(field)) throw new FieldError('a reference is never writeOnly: ?embed= would show the row it references, and list the rows that reference a row')
  if (isReadOnly(field) && !nullable && required && fallback === undefined) {
    throw new FieldError('a readOnly field is never taken from a body, so a required one needs a default; give it one, or make it optional')
  }
  return field
}

/** The fields of a resource from a TypeBox object (or the same in plain JSON Schema), in order. Anything outside the supported set is a FieldError naming the field. */
export function readFields (fields: TObject | JsonSchema): Field[] {
  const { type, properties, required = [] } = fields as { type?: unknown, properties?: Record<string, JsonSchema>, required?: string[] }
  if (type !== 'object' || typeof properties !== 'object' || properties === null) {
    throw new FieldError('fields must be an object schema such as Type.Object({ title: Type.String() })')
  }
  return Object.entries(properties).map(([name, schema]) => {
    try {
      return readField(name, schema, required.includes(name))
    } catch (err) {
      throw new FieldError(`field "${name}": ${(err as Error).message}`)
    }
  })
}

export function fieldSchema (field: Field): JsonSchema {
  if (!field.nullable) return field.value
  const { type, enum: values } = field.value
  return { ...field.value, type: [type, 'null'], ...(values ? { enum: [...(values as unknown[]), null] } : {}) }
}

const unsafe = (schema: JsonSchema) => Type.Unsafe(schema)

/** A field's body schema: objects bounded to what jsonb stores, so one value cannot fail its batch (not in `value`: stored definitions predate it). */
export function bodyFieldSchema (field: Field): JsonSchema {
  const schema = fieldSchema(field)
  return field.kind === 'jsonb' ? { ...schema, 'x-jsonb': { maxDepth: MAX_OBJECT_DEPTH } } : schema
}

/** The create body, which is also PUT's (a full replace): a field left out takes its default. Unknown and readOnly properties are stripped, and nothing is coerced. */
export function createBodySchema (name: string, fields: Field[], title = `${pascalName(name)}Create`) {
  const properties = Object.fromEntries(fields.filter((field) => !isReadOnly(field)).map((field) => {
    const schema = unsafe({ ...bodyFieldSchema(field), ...(field.default !== undefined ? { default: field.default } : {}) })
    return [field.name, field.optional || field.default !== undefined ? Type.Optional(schema) : schema]
  }))
  return Type.Object(properties, { additionalProperties: false, title })
}

/** The PATCH body: every field optional and without default, so only what is sent changes. */
export function patchBodySchema (name: string, fields: Field[], title = `${pascalName(name)}Patch`) {
  const properties = Object.fromEntries(fields.filter((field) => !isReadOnly(field)).map((field) => [field.name, Type.Optional(unsafe(bodyFieldSchema(field)))]))
  return Type.Object(properties, { additionalProperties: false, title })
}

/** A field always present in a row: required, defaulted or nullable (an unset optional field is left out). */
export const alwaysPresent = (field: Field) => !field.optional || field.default !== undefined || field.nullable

/** The row: server-set `id`, `created_at`, `updated_at` (and `owner_id` in owner mode), then the fields but the writeOnly ones. */
export function rowSchema (name: string, fields: Field[], { owner = false }: { owner?: boolean } = {}) {
  const id = `${pascalName(name)}Record`
  const properties: TProperties = {
    id: Id({ description: 'Assigned by the server: 1, 2, 3... per resource, never reused' }),
    created_at: Timestamp({ description: 'Set by the server when the row is created' }),
    updated_at: Timestamp({ description: 'Set by the server on every write' }),
    ...(owner ? { owner_id: Id({ description: 'The user who created the row' }) } : {})
  }
  for (const field of fields.filter((candidate) => !isWriteOnly(candidate))) {
    const { default: _, ...schema } = fieldSchema(field)
    properties[field.name] = alwaysPresent(field) ? unsafe(schema) : Type.Optional(unsafe(schema))
  }
  return Type.Object(properties, { $id: id, title: id, description: `A row of the ${name} resource` })
}

/** The row type of a resource, for TypeScript users: `ResourceRow<typeof fields>`. */
export type ResourceRow<T extends TObject> = { id: number, created_at: string, updated_at: string, owner_id?: number } & Static<T>
