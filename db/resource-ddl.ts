import { PG_INT_MAX, PG_INT_MIN } from '../schemas/common.js'
import type { Field, FieldKind } from '../schemas/fields.js'
import { ResourceTableError } from './errors.js'
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

export function createTableStatements (spec: ResourceTableSpec): string[] {
  const { table, fields, owner = false, timestamps = true } = spec
  const parts = [
    '"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY',
    ...(timestamps ? ['"created_at" timestamp(3) with time zone DEFAULT now() NOT NULL', '"updated_at" timestamp(3) with time zone DEFAULT now() NOT NULL'] : []),
    ...(owner ? ['"owner_id" integer NOT NULL REFERENCES "users" ("id") ON DELETE CASCADE'] : []),
    ...fields.map(columnSql),
    ...fields.map((field) => checkSql(table, field)).filter((check) => check !== undefined)
  ]
  return [
    `CREATE TABLE ${ident(table)} (\n\t${parts.join(',\n\t')}\n)`,
    ...(owner ? [indexSql(table, 'owner_id')] : []),
    ...indexedFields(spec).map((column) => indexSql(table, column))
  ]
}
