import { sql, type SQL } from 'drizzle-orm'
import { alwaysPresent, isWriteOnly, type Field, type FieldKind } from '../schemas/fields.js'
import { ident } from './resource-table.js'

// An instant as the API writes it everywhere: UTC, milliseconds, a Z.
const ISO_INSTANT = '\'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\''

function jsonValue (column: string, kind: FieldKind): string {
  switch (kind) {
    case 'timestamp': return `'"' || to_char(${column} at time zone 'UTC', ${ISO_INSTANT}) || '"'`
    // These casts already give JSON: digits, true or false, and jsonb's own text.
    case 'integer':
    case 'boolean':
    case 'jsonb': return `${column}::text`
    default: return `to_json(${column})::text`
  }
}

interface Member {
  name: string
  kind: FieldKind
  /** Always in the object: `null` when the column is. Otherwise left out when NULL. */
  always: boolean
  notNull: boolean
}

const server = (name: string, kind: FieldKind): Member => ({ name, kind, always: true, notNull: true })

/** A member appended to a row's JSON: `value` is SQL giving JSON text, never NULL (an embedded row, or `null`). */
export interface ExtraMember {
  /** A plain identifier, so it needs no JSON escaping. */
  name: string
  value: SQL
}

const PLAIN_NAME = /^[a-z][a-z0-9_]*$/

/** The row as the API's JSON text, built by PostgreSQL so nothing is decoded or serialized; a writeOnly field is never in it. */
export function resourceJson (fields: Field[], options: ResourceJsonOptions = {}, extra: ExtraMember[] = []): SQL<string> {
  if (extra.length === 0) return sql.raw(resourceJsonText(fields, options)) as SQL<string>
  const members = extra.map(({ name, value }) => {
    if (!PLAIN_NAME.test(name)) throw new Error(`a row's extra member is a plain identifier, not ${JSON.stringify(name)}`)
    return sql`${sql.raw(`',"${name}":'`)} || ${value}`
  })
  return sql`(${sql.raw(memberParts(fields, options).join(' || '))} || ${sql.join(members, sql` || `)} || '}')` as SQL<string>
}

export interface ResourceJsonOptions {
  owner?: boolean
  timestamps?: boolean
  /** Whose columns: `NEW` in a trigger, a table alias in a join; the table in scope when absent. */
  of?: string
}

/** resourceJson's SQL text, without extra members. */
export function resourceJsonText (fields: Field[], options: ResourceJsonOptions = {}): string {
  return `(${memberParts(fields, options).join(' || ')} || '}')`
}

/** Each member's SQL text, the first opening the object: `id` is always there, so appended members follow a comma. */
function memberParts (fields: Field[], { owner = false, timestamps = true, of }: ResourceJsonOptions): string[] {
  const members: Member[] = [
    server('id', 'integer'),
    ...(timestamps ? [server('created_at', 'timestamp'), server('updated_at', 'timestamp')] : []),
    ...(owner ? [server('owner_id', 'integer')] : []),
    ...fields.filter((field) => !isWriteOnly(field)).map((field) => ({ name: field.name, kind: field.kind, always: alwaysPresent(field), notNull: false }))
  ]
  // Field names are plain identifiers (schemas/fields.ts), so they need no JSON escaping.
  return members.map(({ name, kind, always, notNull }, i) => {
    const key = `'${i === 0 ? '{' : ','}"${name}":'`
    const value = jsonValue(of === undefined ? ident(name) : `${of}.${ident(name)}`, kind)
    if (notNull) return `${key} || ${value}`
    return always ? `${key} || coalesce(${value}, 'null')` : `coalesce(${key} || ${value}, '')`
  })
}
