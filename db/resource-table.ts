import { sql } from 'drizzle-orm'
import {
  boolean, customType, date, doublePrecision, integer, jsonb, pgTable, text, type PgColumnBuilderBase
} from 'drizzle-orm/pg-core'
import type { Field, FieldKind } from '../schemas/fields.js'
import { users } from './schema.js'

export interface ResourceTableSpec {
  table: string
  fields: Field[]
  owner?: boolean
  /** Fields to index as (field, id), for sorting and keyset pages. */
  indexes?: string[]
  /** `created_at` and `updated_at` beside `id`; default true. */
  timestamps?: boolean
  /** Sets of fields no two rows share; in owner mode per owner unless global. */
  unique?: Array<{ fields: string[], global: boolean }>
  /** Text fields searched by `?q=`, served by one index. */
  search?: string[]
  /** The referenced resources' tables, by resource name, for the foreign keys of reference fields. */
  referencedTables?: Record<string, string>
  /** Writes go to the change feed's log (a trigger); default true. Not part of the stored definition. */
  events?: boolean
  /** Definition kept in plinth_resource_tables, so fields may change between boots; default true. Untracked tables never change. */
  tracked?: boolean
}

/** What plinth_resource_tables keeps of a table; the keys a table never used are left out, so older definitions (and their digests) stay as they were. */
export interface ResourceTableDefinition {
  fields: Field[]
  owner: boolean
  indexes: string[]
  unique?: Array<{ fields: string[], global: boolean }>
  search?: string[]
  /** The referenced resources' tables, by resource name, as the foreign keys were made. */
  references?: Record<string, string>
}

export const ident = (name: string) => `"${name.replaceAll('"', '""')}"`

export const notNull = (field: Field) => !field.nullable && (!field.optional || field.default !== undefined)

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

const idColumn = () => integer('id').primaryKey().generatedAlwaysAsIdentity()

/** The Drizzle table of a resource; prepareResourceTable creates it. */
export function buildResourceTable (table: string, fields: Field[], { owner = false, timestamps = true }: { owner?: boolean, timestamps?: boolean } = {}) {
  const columns: { id: ReturnType<typeof idColumn> } & Record<string, PgColumnBuilderBase> = { id: idColumn() }
  if (timestamps) {
    columns.created_at = instant('created_at').notNull().default(sql`now()`)
    columns.updated_at = instant('updated_at').notNull().default(sql`now()`).$onUpdate(() => sql`now()`)
  }
  if (owner) columns.owner_id = integer('owner_id').notNull().references(() => users.id, { onDelete: 'cascade' })
  for (const field of fields) columns[field.name] = fieldColumn(field)
  return pgTable(table, columns)
}
