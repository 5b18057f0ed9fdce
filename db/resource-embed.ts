import { asc, desc, eq, getTableColumns, getTableName, sql, type SQL } from 'drizzle-orm'
import { alias, type PgColumn, type PgTable } from 'drizzle-orm/pg-core'
import type { Field, FieldKind } from '../schemas/fields.js'
import type { Database, Preparable } from './client.js'
import { statementCache } from './driver.js'
import { resourceJson, resourceJsonText, type ResourceJsonOptions } from './resource-json.js'
import { condition, type Bind, type Filter, type RequestSelection, type SortKey } from './resource-lists.js'
import { buildResourceTable, ident } from './resource-table.js'

/** A resource whose rows are embedded, read as its own routes read them. */
export interface EmbeddedResource {
  table: string
  fields: Field[]
  owner: boolean
  timestamps: boolean
}

interface EmbedBase {
  /** The member of the row that holds it: a plain identifier. */
  name: string
  resource: EmbeddedResource
  /** Only rows of this owner: the embedded resource is in owner mode and the caller is no superuser. */
  ownerId?: number
}

/** The row this row's `column` references, or null. */
export interface EmbedOne extends EmbedBase { kind: 'one', column: string }

/** The rows whose `column` references this row: filtered, sorted (ties end in id) and at most `limit`. */
export interface EmbedMany extends EmbedBase { kind: 'many', column: string, filters: Filter[], sort: SortKey[], limit: number }

export type Embed = EmbedOne | EmbedMany

/** Each embedded resource's Drizzle table, for its columns in filters and sorts; aliased per position. */
const tables = new WeakMap<EmbeddedResource, Map<string, PgTable>>()

function aliased (resource: EmbeddedResource, as: string): Record<string, PgColumn> {
  let byAlias = tables.get(resource)
  if (byAlias === undefined) tables.set(resource, byAlias = new Map())
  let table = byAlias.get(as)
  if (table === undefined) {
    byAlias.set(as, table = alias(buildResourceTable(resource.table, resource.fields, resource), as) as unknown as PgTable)
  }
  return getTableColumns(table) as Record<string, PgColumn>
}

const kindOf = (resource: EmbeddedResource, column: string): FieldKind =>
  column === 'created_at' || column === 'updated_at' ? 'timestamp' : resource.fields.find((field) => field.name === column)?.kind ?? 'integer'

const jsonOf = ({ fields, owner, timestamps }: EmbeddedResource, as: string) => sql.raw(resourceJsonText(fields, { owner, timestamps, of: ident(as) }))

function owned (embed: Embed, as: string, bind: Bind, i: number): SQL {
  return embed.ownerId === undefined ? sql`` : sql` and ${sql.raw(`${ident(as)}."owner_id"`)} = ${bind(`e${i}_owner`, embed.ownerId)}`
}

/** The referenced row's JSON, or `null`: one correlated subquery on its primary key. */
function one (embed: EmbedOne, outer: string, bind: Bind, i: number): SQL {
  const as = `_e${i}`
  const from = sql.raw(`${ident(embed.resource.table)} ${ident(as)} where ${ident(as)}."id" = ${outer}.${ident(embed.column)}`)
  return sql`coalesce((select ${jsonOf(embed.resource, as)} from ${from}${owned(embed, as, bind, i)}), 'null')`
}

/** The referencing rows' JSON array: ARRAY(subquery) keeps the subquery's order, and an empty one is `[]`. */
function many (embed: EmbedMany, outer: string, bind: Bind, i: number): SQL {
  const as = `_e${i}`
  const columns = aliased(embed.resource, as)
  const conditions = embed.filters.map((filter, j) => sql` and ${condition(columns[filter.column]!, kindOf(embed.resource, filter.column), filter, bind, `e${i}_f${j}`)}`)
  const order = sql.join(sortKeys(embed.sort).map((key) => key.descending ? desc(columns[key.column]!) : asc(columns[key.column]!)), sql`, `)
  const from = sql.raw(`${ident(embed.resource.table)} ${ident(as)} where ${ident(as)}.${ident(embed.column)} = ${outer}."id"`)
  return sql`('[' || array_to_string(array(select ${jsonOf(embed.resource, as)} from ${from}${owned(embed, as, bind, i)}${sql.join(conditions, sql``)} order by ${order} limit ${bind(`e${i}_limit`, embed.limit)}), ',') || ']')`
}

/** The sort without repeats, ending at id, as lists order their rows. */
function sortKeys (sort: SortKey[]): SortKey[] {
  const keys: SortKey[] = []
  for (const key of sort) {
    if (keys.some((each) => each.column === key.column)) continue
    keys.push(key)
    if (key.column === 'id') return keys
  }
  return [...keys, { column: 'id', descending: keys.at(-1)?.descending ?? false }]
}

const filterShape = ({ column, op, value }: Filter) => `${column}.${op}${op === 'in' ? (value as unknown[]).length : op === 'is' ? String(value) : ''}`

function embedShape (embed: Embed): string {
  const owner = embed.ownerId === undefined ? '' : '+owned'
  if (embed.kind === 'one') return `${embed.name}${owner}`
  const sort = sortKeys(embed.sort).map((key) => `${key.descending ? '-' : ''}${key.column}`).join(',')
  return `${embed.name}${owner}(${embed.filters.map(filterShape).join(',')};${sort})`
}

/**
 * The `json` column of rows of `table` with `embeds` appended, each a correlated subquery of the same
 * statement: a list of n rows with embeds is still one query.
 */
export function embeddedJson (table: string, fields: Field[], options: ResourceJsonOptions, embeds: Embed[]): RequestSelection {
  const outer = ident(table)
  const columns = (bind: Bind) => ({
    json: resourceJson(fields, options, embeds.map((embed, i) => ({
      name: embed.name,
      value: embed.kind === 'one' ? one(embed, outer, bind, i) : many(embed, outer, bind, i)
    })))
  })
  const values: Record<string, unknown> = {}
  columns((name, value) => { values[name] = value })
  return { shape: embeds.map(embedShape).join(','), values, columns }
}

const MAX_SHAPES = 64

/** One row by id with a request's columns over `selection`; prepared per shape, as lists are. */
export function createEmbeddedReader<Row> (db: Database, table: PgTable & { id: PgColumn }, selection: Record<string, PgColumn | SQL>) {
  const statements = statementCache(`${getTableName(table)}_embed`, MAX_SHAPES)
  const select = (extra: RequestSelection, bind: Bind, id: number) => db.select({ ...selection, ...extra.columns(bind) }).from(table as PgTable)
    .where(eq(table.id, bind('id', id) as number)).limit(1) as unknown as Preparable<Row[]>
  return async function read (id: number, extra: RequestSelection): Promise<Row | null> {
    const statement = statements.shaped('get', extra.shape, (as) => select(extra, (name) => sql.placeholder(name), id).prepare(as))
    const rows = statement ? await statement.execute({ ...extra.values, id }) : await select(extra, (_name, value) => value, id).execute()
    return rows[0] ?? null
  }
}
