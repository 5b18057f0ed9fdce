import { createHash } from 'node:crypto'
import { PG_INT_MAX, PG_INT_MIN } from '../schemas/common.js'
import type { Field, FieldKind, OnDelete } from '../schemas/fields.js'
import { ResourceTableError } from './errors.js'
import { searchDocument, searchIndexName } from './resource-search.js'
import { ident, notNull, type ResourceTableSpec } from './resource-table.js'

const SQL_TYPES: Record<FieldKind, string> = {
  text: 'text',
  integer: 'integer',
  number: 'double precision',
  boolean: 'boolean',
  timestamp: 'timestamp(3) with time zone',
  date: 'date',
  'text[]': 'text[]',
  jsonb: 'jsonb'
}

/** As PostgreSQL's quote_literal: the E'' form keeps backslashes literal whatever standard_conforming_strings says. */
function literal (value: string): string {
  const quoted = `'${value.replaceAll("'", "''").replaceAll('\\', '\\\\')}'`
  return value.includes('\\') ? `E${quoted}` : quoted
}

function numeric (table: string, field: Field, keyword: string): string {
  const value = field.value[keyword]
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ResourceTableError(`${table}: field "${field.name}" has ${keyword} ${JSON.stringify(value)}; it must be a finite number`)
  }
  return String(value)
}

const arrayLiteral = (items: unknown[]) => `{${items.map((item) => `"${String(item).replace(/["\\]/g, '\\$&')}"`).join(',')}}`

export function defaultSql (field: Field): string {
  const value = field.default
  if (field.kind === 'jsonb') return literal(JSON.stringify(value))
  if (value === null) return 'NULL'
  // A finite number or a boolean prints as digits, signs, `e` and dots, or true/false: nothing to quote.
  if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return String(value)
  return literal(Array.isArray(value) ? arrayLiteral(value) : String(value))
}

export const columnSql = (field: Field) => `${ident(field.name)} ${SQL_TYPES[field.kind]}` +
  `${field.default !== undefined ? ` DEFAULT ${defaultSql(field)}` : ''}${notNull(field) ? ' NOT NULL' : ''}`

// The integer type already holds these bounds, which every integer field carries.
const TYPE_BOUNDS: Record<string, number> = { minimum: PG_INT_MIN, maximum: PG_INT_MAX }

const BOUNDS: Partial<Record<FieldKind, Array<[keyword: string, operator: string, operand: (column: string) => string]>>> = {
  integer: [['minimum', '>=', (c) => c], ['maximum', '<=', (c) => c]],
  number: [['minimum', '>=', (c) => c], ['maximum', '<=', (c) => c]],
  text: [['minLength', '>=', (c) => `char_length(${c})`], ['maxLength', '<=', (c) => `char_length(${c})`]],
  'text[]': [['minItems', '>=', (c) => `cardinality(${c})`], ['maxItems', '<=', (c) => `cardinality(${c})`]]
}

function conditions (table: string, field: Field): string[] {
  const column = ident(field.name)
  const found = (BOUNDS[field.kind] ?? [])
    .filter(([keyword]) => field.value[keyword] !== undefined && !(field.kind === 'integer' && field.value[keyword] === TYPE_BOUNDS[keyword]))
    .map(([keyword, operator, operand]) => `${operand(column)} ${operator} ${numeric(table, field, keyword)}`)
  if (field.enum) found.push(`${column} IN (${field.enum.map(literal).join(', ')})`)
  return found
}

export const checkName = (table: string, field: Field) => ident(`${table}_${field.name}_check`)

export function checkSql (table: string, field: Field): string | undefined {
  const found = conditions(table, field)
  return found.length > 0 ? `CONSTRAINT ${checkName(table, field)} CHECK (${found.join(' AND ')})` : undefined
}

export function indexSql (table: string, column: string): string {
  return `CREATE INDEX ${ident(`${table}_${column}_idx`)} ON ${ident(table)} (${ident(column)}, "id")`
}

export function indexedFields (spec: ResourceTableSpec): string[] {
  const indexes = [...new Set(spec.indexes ?? [])].sort()
  const unknown = indexes.find((name) => !spec.fields.some((field) => field.name === name))
  if (unknown !== undefined) throw new ResourceTableError(`${spec.table}: index "${unknown}" names no field; list field names only`)
  return indexes
}

const MAX_NAME_BYTES = 63

/** A name PostgreSQL keeps whole: it cuts longer ones at 63 bytes, where two could clash; a hash of the whole keeps them apart. */
export function boundedName (name: string): string {
  if (Buffer.byteLength(name) <= MAX_NAME_BYTES) return name
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8)
  // Table and field names are ASCII identifiers: a character is a byte.
  return `${name.slice(0, MAX_NAME_BYTES - hash.length - 1)}_${hash}`
}

const ON_DELETE_SQL: Record<OnDelete, string> = { cascade: 'CASCADE', restrict: 'RESTRICT', 'set-null': 'SET NULL' }

export const referenceName = (table: string, field: Pick<Field, 'name'>) => boundedName(`${table}_${field.name}_fkey`)

/** The fields that hold a row id of a resource, each with the table its foreign key references. */
export function references (spec: ResourceTableSpec): Array<{ field: Field & Required<Pick<Field, 'references'>>, table: string }> {
  return spec.fields.flatMap((field) => {
    if (field.references === undefined) return []
    const table = spec.referencedTables?.[field.references.resource]
    if (table === undefined) {
      throw new ResourceTableError(`${spec.table}: field "${field.name}" references the resource "${field.references.resource}", ` +
        'whose table is not known; register that resource before this one')
    }
    return [{ field: field as Field & Required<Pick<Field, 'references'>>, table }]
  })
}

/** The foreign keys of the reference fields, by constraint name: each one's clause. */
export function referenceConstraints (spec: ResourceTableSpec): Map<string, string> {
  return new Map(references(spec).map(({ field, table }) => {
    const name = referenceName(spec.table, field)
    return [name, `CONSTRAINT ${ident(name)} FOREIGN KEY (${ident(field.name)}) REFERENCES ${ident(table)} ("id") ON DELETE ${ON_DELETE_SQL[field.references.onDelete]}`]
  }))
}

/** A unique key's columns: in owner mode the owner's first, unless the key is global. */
export const uniqueColumns = (spec: Pick<ResourceTableSpec, 'owner'>, key: UniqueKey) => [...(spec.owner && !key.global ? ['owner_id'] : []), ...key.fields]

export const uniqueIndexName = (table: string, key: Pick<UniqueKey, 'fields'>) => boundedName(`${table}_${key.fields.join('_')}_key`)

type UniqueKey = NonNullable<ResourceTableSpec['unique']>[number]

function uniqueKeys (spec: ResourceTableSpec): UniqueKey[] {
  const keys = spec.unique ?? []
  const names = new Set<string>()
  for (const key of keys) {
    const unknown = key.fields.find((name) => !spec.fields.some((field) => field.name === name))
    if (unknown !== undefined) throw new ResourceTableError(`${spec.table}: unique key (${key.fields.join(', ')}) names "${unknown}", which is no field`)
    const name = uniqueIndexName(spec.table, key)
    if (names.has(name)) throw new ResourceTableError(`${spec.table}: unique keys clash on the index name ${name}; list each set of fields once`)
    names.add(name)
  }
  return keys
}

function searchFields (spec: ResourceTableSpec): string[] {
  const search = spec.search ?? []
  const unknown = search.find((name) => !spec.fields.some((field) => field.name === name))
  if (unknown !== undefined) throw new ResourceTableError(`${spec.table}: search names "${unknown}", which is no field`)
  return search
}

/** The indexes beside the table's own (its key, its owner's), by name: each one's CREATE statement. */
export function tableIndexes (spec: ResourceTableSpec): Map<string, string> {
  const { table } = spec
  const columns = new Set([...indexedFields(spec), ...references(spec).map(({ field }) => field.name)])
  const search = searchFields(spec)
  return new Map([
    // A reference's index serves both its foreign key (deletes of the referenced row) and sorts by it.
    ...[...columns].sort().map((column): [string, string] => [`${table}_${column}_idx`, indexSql(table, column)]),
    ...uniqueKeys(spec).map((key): [string, string] => {
      const name = uniqueIndexName(table, key)
      return [name, `CREATE UNIQUE INDEX ${ident(name)} ON ${ident(table)} (${uniqueColumns(spec, key).map(ident).join(', ')})`]
    }),
    ...(search.length === 0
      ? []
      : [[boundedName(searchIndexName(table)), `CREATE INDEX ${ident(boundedName(searchIndexName(table)))} ON ${ident(table)} USING gin ((${searchDocument(search)}))`] as [string, string]])
  ])
}

export function createTableStatements (spec: ResourceTableSpec): string[] {
  const { table, fields, owner = false, timestamps = true } = spec
  const parts = [
    '"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY',
    ...(timestamps ? ['"created_at" timestamp(3) with time zone DEFAULT now() NOT NULL', '"updated_at" timestamp(3) with time zone DEFAULT now() NOT NULL'] : []),
    ...(owner ? ['"owner_id" integer NOT NULL REFERENCES "users" ("id") ON DELETE CASCADE'] : []),
    ...fields.map(columnSql),
    ...fields.map((field) => checkSql(table, field)).filter((check) => check !== undefined),
    ...referenceConstraints(spec).values()
  ]
  return [
    `CREATE TABLE ${ident(table)} (\n\t${parts.join(',\n\t')}\n)`,
    ...(owner ? [indexSql(table, 'owner_id')] : []),
    ...tableIndexes(spec).values()
  ]
}
