import { createHash } from 'node:crypto'
import { eq, sql } from 'drizzle-orm'
import type { Field, JsonSchema } from '../schemas/fields.js'
import { PG_INT_MIN, TEXT_PATTERN } from '../schemas/common.js'
import { SCHEMA_LOCK, WITHOUT_STATEMENT_TIMEOUT, type Database } from './client.js'
import { ResourceTableError, sqlState } from './errors.js'
import {
  checkName, checkSql, columnSql, createTableStatements, defaultSql, indexedFields, referenceConstraints, referenceName, references,
  tableIndexes, uniqueColumns, uniqueIndexName
} from './resource-ddl.js'
import { ident, notNull, type ResourceTableDefinition, type ResourceTableSpec } from './resource-table.js'
import { fieldTableDefinitions } from './schema.js'

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

/** The first keyword whose new value may refuse a stored one; a keyword removed accepts more. */
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

/** A reference holds ids, which start at 1, and its foreign key checks every stored value: a minimum raised to 1 narrows nothing more. */
const asIds = (value: JsonSchema): JsonSchema => ({ ...value, minimum: Math.max((value.minimum as number | undefined) ?? PG_INT_MIN, 1) })

function refuseNarrowing (table: string, before: Field, after: Field): void {
  const name = after.name
  const change = before.kind !== after.kind
    ? `changed kind from ${before.kind} to ${after.kind}`
    : before.nullable && !after.nullable ? 'is no longer nullable' : narrowing(after.references ? asIds(before.value) : before.value, after.value)
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
export function planResourceTableChanges (stored: ResourceTableSpec, wanted: ResourceTableSpec): string[] {
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
  const [oldKeys, newKeys] = [referenceConstraints(stored), referenceConstraints(wanted)]
  const statements = wanted.fields.flatMap((field) => {
    const before = stored.fields.find((storedField) => storedField.name === field.name)
    const name = referenceName(table, field)
    const [old, now] = [oldKeys.get(name), newKeys.get(name)]
    // A key that changed is made again; before the field's own check, so a stored value that is no id fails as a reference.
    const keys = old === now ? [] : [...(old ? [alter(table, `DROP CONSTRAINT ${ident(name)}`)] : []), ...(now ? [alter(table, `ADD ${now}`)] : [])]
    return before ? [...keys, ...changeField(table, before, field)] : [...addField(table, field), ...keys]
  })
  const [before, after] = [tableIndexes(stored), tableIndexes(wanted)]
  for (const [name, create] of before) if (after.get(name) !== create) statements.push(`DROP INDEX ${ident(name)}`)
  for (const [name, create] of after) if (before.get(name) !== create) statements.push(create)
  return statements
}

/** What to do when a statement that adds a key fails on the rows already stored: by statement. */
function refusals (spec: ResourceTableSpec): Map<string, { state: string, message: string }> {
  const { table } = spec
  const found = new Map<string, { state: string, message: string }>()
  const indexes = tableIndexes(spec)
  for (const key of spec.unique ?? []) {
    const columns = uniqueColumns(spec, key).map(ident).join(', ')
    found.set(indexes.get(uniqueIndexName(table, key))!, {
      state: '23505',
      message: `${table}: the unique key (${key.fields.join(', ')}) cannot be added: rows already stored share a ${key.fields.join(' and ')}` +
        `${spec.owner && !key.global ? ' within one owner' : ''}; find them with SELECT ${columns}, count(*) FROM ${ident(table)} ` +
        `GROUP BY ${columns} HAVING count(*) > 1, change or delete all but one of each, and restart; or remove the key`
    })
  }
  const keys = referenceConstraints(spec)
  for (const { field, table: referenced } of references(spec)) {
    const column = ident(field.name)
    found.set(alter(table, `ADD ${keys.get(referenceName(table, field))!}`), {
      state: '23503',
      message: `${table}: field "${field.name}" cannot reference ${field.references.resource}: rows already stored hold ids that are no row of ` +
        `${ident(referenced)}; find them with SELECT "id", ${column} FROM ${ident(table)} WHERE ${column} NOT IN (SELECT "id" FROM ${ident(referenced)}), ` +
        `set them to ids that exist${field.nullable ? ' (or null)' : ''} or delete them, and restart; or remove the reference`
    })
  }
  return found
}

async function columnsOf (db: Database, table: string): Promise<string[] | null> {
  const rows = await db.select({ name: sql<string | null>`a.attname` })
    .from(sql`pg_class c left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped`)
    .where(sql`c.oid = to_regclass(quote_ident(${table}))`)
  return rows.length === 0 ? null : rows.flatMap((row) => row.name ?? [])
}

function definitionOf (spec: ResourceTableSpec): ResourceTableDefinition {
  const [unique, search] = [spec.unique ?? [], spec.search ?? []]
  const referenced = Object.fromEntries(references(spec).map(({ field, table }) => [field.references.resource, table]))
  // Only what a table uses: a definition from before unique, search and references keeps its digest, and so its rows' ETags.
  return JSON.parse(JSON.stringify({
    fields: spec.fields,
    owner: spec.owner ?? false,
    indexes: indexedFields(spec),
    ...(unique.length > 0 ? { unique: unique.map(({ fields, global }) => ({ fields, global })) } : {}),
    ...(search.length > 0 ? { search } : {}),
    ...(Object.keys(referenced).length > 0 ? { references: referenced } : {})
  })) as ResourceTableDefinition
}

/** Mixed into the rows' ETags, the same in every process: a row's representation follows its definition, not only its version. */
export const definitionDigest = (spec: ResourceTableSpec) => createHash('sha256').update(canonical(definitionOf(spec))).digest('base64url')

async function plan (db: Database, spec: ResourceTableSpec, wanted: ResourceTableDefinition): Promise<string[] | null> {
  const columns = await columnsOf(db, spec.table)
  if (columns === null) return createTableStatements(spec)
  const [row] = await db.select().from(fieldTableDefinitions).where(eq(fieldTableDefinitions.table_name, spec.table))
  if (!row) {
    throw new ResourceTableError(`${spec.table}: the table exists but was not created by plinth for a schema resource; ` +
      'choose another table option, or drop or rename the existing table')
  }
  const stored = row.definition as ResourceTableDefinition
  // A column dropped by hand, as the removal message advises, takes its field (and that field's indexes and key) with it.
  const kept = (names: string[]) => names.every((name) => columns.includes(name))
  const statements = planResourceTableChanges({
    table: spec.table,
    owner: stored.owner,
    fields: stored.fields.filter((field) => columns.includes(field.name)),
    indexes: stored.indexes.filter((name) => columns.includes(name)),
    unique: (stored.unique ?? []).filter((key) => kept(key.fields)),
    search: kept(stored.search ?? []) ? stored.search : [],
    referencedTables: stored.references
  }, spec)
  return statements.length === 0 && same(stored, wanted) ? null : statements
}

/** Creates the table, or brings it to `spec` when no stored row is at risk, and records the definition; one process at a time. */
export async function ensureTrackedTable (db: Database, spec: ResourceTableSpec): Promise<void> {
  const wanted = definitionOf(spec)
  await db.transaction(async (tx) => {
    await tx.execute(WITHOUT_STATEMENT_TIMEOUT)
    await tx.execute(sql.raw(`select pg_advisory_xact_lock(${SCHEMA_LOCK})`))
    const statements = await plan(tx, spec, wanted)
    if (statements === null) return
    const refused = refusals(spec)
    for (const statement of statements) {
      await tx.execute(sql.raw(statement)).catch((err: unknown) => {
        const refusal = refused.get(statement)
        throw refusal !== undefined && sqlState(err) === refusal.state ? new ResourceTableError(refusal.message) : err
      })
    }
    await tx.insert(fieldTableDefinitions).values({ table_name: spec.table, definition: wanted })
      .onConflictDoUpdate({ target: fieldTableDefinitions.table_name, set: { definition: wanted, updated_at: sql`now()` } })
  })
}
