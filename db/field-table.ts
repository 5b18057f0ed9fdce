import { createHash } from 'node:crypto'
import { eq, sql } from 'drizzle-orm'
import {
  boolean, customType, date, doublePrecision, integer, jsonb, pgTable, text, type PgColumnBuilderBase
} from 'drizzle-orm/pg-core'
import { PG_INT_MAX, TEXT_PATTERN } from '../schemas/common.js'
import type { Field, FieldKind, JsonSchema } from '../schemas/fields.js'
import { SCHEMA_LOCK, type Database } from './client.js'
import { ResourceTableError } from './errors.js'
import { fieldTableDefinitions, users } from './schema.js'

export interface FieldTableSpec {
  table: string
  fields: Field[]
  owner?: boolean
  /** Fields to index as (field, id), for sorting and keyset pages. */
  indexes?: string[]
}

/** What plinth_resource_tables keeps per table. */
export interface FieldTableDefinition {
  fields: Field[]
  owner: boolean
  indexes: string[]
}

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

export const ident = (name: string) => `"${name.replaceAll('"', '""')}"`

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

function defaultSql (field: Field): string {
  const value = field.default
  if (field.kind === 'jsonb') return literal(JSON.stringify(value))
  if (value === null) return 'NULL'
  // A finite number or a boolean prints as digits, signs, `e` and dots, or true/false: nothing to quote.
  if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return String(value)
  return literal(Array.isArray(value) ? arrayLiteral(value) : String(value))
}

/** A column is NOT NULL unless null is allowed or an optional field may be left unset. */
const notNull = (field: Field) => !field.nullable && (!field.optional || field.default !== undefined)

const columnSql = (field: Field) => `${ident(field.name)} ${SQL_TYPES[field.kind]}` +
  `${field.default !== undefined ? ` DEFAULT ${defaultSql(field)}` : ''}${notNull(field) ? ' NOT NULL' : ''}`

// The integer type already holds these bounds, which every integer field carries.
const TYPE_BOUNDS: Record<string, number> = { minimum: -PG_INT_MAX - 1, maximum: PG_INT_MAX }

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

const checkName = (table: string, field: Field) => ident(`${table}_${field.name}_check`)

function checkSql (table: string, field: Field): string | undefined {
  const found = conditions(table, field)
  return found.length > 0 ? `CONSTRAINT ${checkName(table, field)} CHECK (${found.join(' AND ')})` : undefined
}

function indexSql (table: string, column: string): string {
  return `CREATE INDEX ${ident(`${table}_${column}_idx`)} ON ${ident(table)} (${ident(column)}, "id")`
}

function indexedFields (spec: FieldTableSpec): string[] {
  const indexes = [...new Set(spec.indexes ?? [])].sort()
  const unknown = indexes.find((name) => !spec.fields.some((field) => field.name === name))
  if (unknown !== undefined) throw new ResourceTableError(`${spec.table}: index "${unknown}" names no field; list field names only`)
  return indexes
}

/** The CREATE TABLE statement, then one CREATE INDEX per index. */
export function fieldTableDdl (spec: FieldTableSpec): string[] {
  const { table, fields, owner = false } = spec
  const parts = [
    '"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY',
    '"created_at" timestamp(3) with time zone DEFAULT now() NOT NULL',
    '"updated_at" timestamp(3) with time zone DEFAULT now() NOT NULL',
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

/** PostgreSQL's text of an instant as ISO 8601: `2026-11-24 10:00:00.12+00` is `2026-11-24T10:00:00.120Z`. */
export function isoInstant (text: string | Date): string {
  if (typeof text !== 'string') return text.toISOString()
  // The session's time zone is UTC on the usual path; any other text takes the slow, general one.
  if (text.length >= 22 && text.length <= 26 && text.endsWith('+00') && text[10] === ' ') {
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${`${text.slice(20, -3)}000`.slice(0, 3)}Z`
  }
  return new Date(text).toISOString()
}

// The API's own form both ways: ISO strings go in as they are and come back as ISO strings, with no Date between.
const instant = customType<{ data: string, driverData: string | Date }>({
  dataType: () => 'timestamp(3) with time zone',
  toDriver: (value) => (value as unknown) instanceof Date ? (value as unknown as Date).toISOString() : value,
  fromDriver: isoInstant
})

const COLUMNS: Record<FieldKind, (name: string) => PgColumnBuilderBase & { notNull (): unknown, default (value: unknown): unknown }> = {
  text: (name) => text(name),
  integer: (name) => integer(name),
  number: (name) => doublePrecision(name),
  boolean: (name) => boolean(name),
  timestamp: (name) => instant(name),
  date: (name) => date(name, { mode: 'string' }),
  'text[]': (name) => text(name).array(),
  jsonb: (name) => jsonb(name)
}

function fieldColumn (field: Field): PgColumnBuilderBase {
  const column = COLUMNS[field.kind](field.name)
  if (notNull(field)) column.notNull()
  if (field.default !== undefined) column.default(field.default)
  return column
}

const serverColumns = () => ({
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  created_at: instant('created_at').notNull().default(sql`now()`),
  updated_at: instant('updated_at').notNull().default(sql`now()`).$onUpdate(() => sql`now()`)
})

/** The Drizzle table of a schema resource, for db/crud.ts; fieldTableDdl and ensureFieldTable create it. */
export function fieldTable (table: string, fields: Field[], { owner = false }: { owner?: boolean } = {}) {
  const columns: ReturnType<typeof serverColumns> & Record<string, PgColumnBuilderBase> = serverColumns()
  if (owner) columns.owner_id = integer('owner_id').notNull().references(() => users.id, { onDelete: 'cascade' })
  for (const field of fields) columns[field.name] = fieldColumn(field)
  return pgTable(table, columns)
}

/** Key order aside, as jsonb does not keep it. */
function canonical (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value === null || typeof value !== 'object') return String(JSON.stringify(value))
  const entries = Object.entries(value).filter(([, item]) => item !== undefined).sort(([a], [b]) => a < b ? -1 : 1)
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`
}

const same = (a: unknown, b: unknown) => canonical(a) === canonical(b)

const show = (value: unknown) => value === undefined ? 'none' : JSON.stringify(value)

// Annotations; `type` is the kind, compared first, and pattern and allOf are compared as patterns.
const IGNORED_KEYWORDS = new Set(['title', 'description', 'examples', 'default', 'nullable', '$comment', 'deprecated', 'readOnly', 'writeOnly', 'type', 'pattern', 'allOf'])

/** The patterns a text value must match, beyond the NUL-free one every text field has. */
const patterns = (value: JsonSchema | undefined) => [value?.pattern, ...((value?.allOf ?? []) as JsonSchema[]).map((part) => part.pattern)]
  .filter((pattern) => pattern !== undefined && pattern !== TEXT_PATTERN)

type Narrows = (before: unknown, after: unknown) => boolean

const lower = (before: unknown, after: unknown) => before !== undefined && (after as number) <= (before as number)
const higher = (before: unknown, after: unknown) => before !== undefined && (after as number) >= (before as number)

/** Per bound, whether the new value accepts everything the old one did; any other change to a keyword may refuse stored values. */
const LOOSER: Record<string, Narrows> = {
  minimum: lower,
  minLength: lower,
  minItems: lower,
  maximum: higher,
  maxLength: higher,
  maxItems: higher,
  enum: (before, after) => Array.isArray(before) && before.every((item) => (after as unknown[]).includes(item)),
  format: () => false,
  uniqueItems: (_, after) => after !== true
}

/** The first keyword whose new value may refuse a stored one, described; a keyword removed accepts more. */
function narrowing (before: JsonSchema, after: JsonSchema): string | undefined {
  const added = patterns(after).filter((pattern) => !patterns(before).includes(pattern))
  if (added.length > 0) return `changed pattern from ${show(patterns(before)[0])} to ${show(added[0])}`
  for (const keyword of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const [old, now] = [before[keyword], after[keyword]]
    if (IGNORED_KEYWORDS.has(keyword) || same(old, now)) continue
    const looser = LOOSER[keyword]
    if (looser === undefined) return `changed ${keyword}`
    if (now !== undefined && !looser(old, now)) return `changed ${keyword} from ${show(old)} to ${show(now)}`
  }
  return undefined
}

function refuseNarrowing (table: string, before: Field, after: Field): void {
  const name = after.name
  const change = before.kind !== after.kind
    ? `changed kind from ${before.kind} to ${after.kind}`
    : before.nullable && !after.nullable ? 'is no longer nullable' : narrowing(before.value, after.value)
  if (change !== undefined) {
    throw new ResourceTableError(`${table}: field "${name}" ${change}, which rows already stored may not meet; ` +
      'revert that, or add a new field and migrate the data to it yourself')
  }
  if (!notNull(before) && notNull(after) && after.default === undefined) {
    throw new ResourceTableError(`${table}: field "${name}" became required without a default, but rows already stored may have no value ` +
      'for it; give it a default, or keep it optional')
  }
}

const alter = (table: string, change: string) => `ALTER TABLE ${ident(table)} ${change}`

function addField (table: string, field: Field): string[] {
  if (notNull(field) && field.default === undefined) {
    throw new ResourceTableError(`${table}: new field "${field.name}" is required without a default, but existing rows would have no value ` +
      'for it; give it a default, or make it optional')
  }
  const check = checkSql(table, field)
  return [alter(table, `ADD COLUMN ${columnSql(field)}`), ...(check ? [alter(table, `ADD ${check}`)] : [])]
}

function changeField (table: string, before: Field, after: Field): string[] {
  refuseNarrowing(table, before, after)
  const column = ident(after.name)
  const statements: string[] = []
  if (!same(before.default, after.default)) {
    statements.push(alter(table, `ALTER COLUMN ${column} ${after.default === undefined ? 'DROP DEFAULT' : `SET DEFAULT ${defaultSql(after)}`}`))
  }
  if (notNull(before) && !notNull(after)) statements.push(alter(table, `ALTER COLUMN ${column} DROP NOT NULL`))
  if (!notNull(before) && notNull(after)) {
    // An optional field that gains a default is always present from now on: unset rows take the default, as a new column's do.
    statements.push(`UPDATE ${ident(table)} SET ${column} = DEFAULT WHERE ${column} IS NULL`, alter(table, `ALTER COLUMN ${column} SET NOT NULL`))
  }
  const check = checkSql(table, after)
  if (check !== checkSql(table, before)) {
    statements.push(alter(table, `DROP CONSTRAINT IF EXISTS ${checkName(table, after)}`), ...(check ? [alter(table, `ADD ${check}`)] : []))
  }
  return statements
}

/** The statements that take a table from `stored` to `wanted`; a change stored rows may not meet is a ResourceTableError saying what to do. */
export function planFieldTableChanges (stored: FieldTableSpec, wanted: FieldTableSpec): string[] {
  const { table } = wanted
  if ((stored.owner ?? false) !== (wanted.owner ?? false)) {
    throw new ResourceTableError(`${table}: the owner option was switched ${wanted.owner ? 'on' : 'off'}, which the table cannot follow; ` +
      'switch it back, or give the resource a new table (the table option)')
  }
  const removed = stored.fields.find((field) => !wanted.fields.some((wantedField) => wantedField.name === field.name))
  if (removed) {
    throw new ResourceTableError(`${table}: field "${removed.name}" was removed, but its column still holds data; put it back, ` +
      `or drop the column yourself (ALTER TABLE ${ident(table)} DROP COLUMN ${ident(removed.name)}) and restart`)
  }
  const statements = wanted.fields.flatMap((field) => {
    const before = stored.fields.find((storedField) => storedField.name === field.name)
    return before ? changeField(table, before, field) : addField(table, field)
  })
  const [before, after] = [indexedFields(stored), indexedFields(wanted)]
  for (const name of before) if (!after.includes(name)) statements.push(`DROP INDEX ${ident(`${table}_${name}_idx`)}`)
  for (const name of after) if (!before.includes(name)) statements.push(indexSql(table, name))
  return statements
}

/** The columns of the relation `table` on the search path, or null when there is none. */
async function columnsOf (db: Database, table: string): Promise<string[] | null> {
  const rows = await db.select({ name: sql<string | null>`a.attname` })
    .from(sql`pg_class c left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped`)
    .where(sql`c.oid = to_regclass(quote_ident(${table}))`)
  return rows.length === 0 ? null : rows.flatMap((row) => row.name ?? [])
}

const definitionOf = (spec: FieldTableSpec): FieldTableDefinition =>
  JSON.parse(JSON.stringify({ fields: spec.fields, owner: spec.owner ?? false, indexes: indexedFields(spec) })) as FieldTableDefinition

/**
 * A digest of the definition plinth_resource_tables keeps for `spec`, the same in every process that serves it:
 * the rows' ETags mix it in, as a row's representation follows its definition even where its version does not.
 */
export const definitionDigest = (spec: FieldTableSpec) => createHash('sha256').update(canonical(definitionOf(spec))).digest('base64url')

async function plan (db: Database, spec: FieldTableSpec, wanted: FieldTableDefinition): Promise<string[] | null> {
  const columns = await columnsOf(db, spec.table)
  if (columns === null) return fieldTableDdl(spec)
  const [row] = await db.select().from(fieldTableDefinitions).where(eq(fieldTableDefinitions.table_name, spec.table))
  if (!row) {
    throw new ResourceTableError(`${spec.table}: the table exists but was not created by plinth for a schema resource; ` +
      'choose another table option, or drop or rename the existing table')
  }
  const stored = row.definition as FieldTableDefinition
  // A column dropped by hand, as the removal message advises, takes its field (and that field's index) with it.
  const fields = stored.fields.filter((field) => columns.includes(field.name))
  const statements = planFieldTableChanges({ table: spec.table, owner: stored.owner, fields, indexes: stored.indexes.filter((name) => columns.includes(name)) }, spec)
  return statements.length === 0 && same(stored, wanted) ? null : statements
}

/** Creates the table, or brings it to `spec` when no stored row is at risk, and records the definition; one process at a time. */
export async function ensureFieldTable (db: Database, spec: FieldTableSpec): Promise<void> {
  const wanted = definitionOf(spec)
  await db.transaction(async (tx) => {
    await tx.execute(sql.raw(`select pg_advisory_xact_lock(${SCHEMA_LOCK})`))
    const statements = await plan(tx, spec, wanted)
    if (statements === null) return
    for (const statement of statements) await tx.execute(sql.raw(statement))
    await tx.insert(fieldTableDefinitions).values({ table_name: spec.table, definition: wanted })
      .onConflictDoUpdate({ target: fieldTableDefinitions.table_name, set: { definition: wanted, updated_at: sql`now()` } })
  })
}
