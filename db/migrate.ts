import { sql } from 'drizzle-orm'
import { connect, type Database, type Driver } from './client.js'
import type { ResourceTableSpec } from './resource-table.js'
import { createTables } from './resources.js'
import { fieldTableDefinitions } from './schema.js'

/** What `plinth migrate` compares before and after its work: the migrations applied, the tables, the resource definitions. */
export interface SchemaState {
  migrations: number
  tables: Set<string>
  definitions: Map<string, string>
}

/** The schema as it stands; a new database has none of it, not even Drizzle's journal. */
export async function schemaState (db: Database): Promise<SchemaState> {
  const rows = await db.select({ journal: sql<boolean>`schemaname = 'drizzle'`, name: sql<string>`tablename` })
    .from(sql`pg_tables`).where(sql`schemaname in (current_schema(), 'drizzle')`)
  const tables = new Set(rows.filter((row) => !row.journal).map((row) => row.name))
  const [journal] = rows.some((row) => row.journal && row.name === '__drizzle_migrations')
    ? await db.select({ n: sql<number>`count(*)::int` }).from(sql`drizzle.__drizzle_migrations`)
    : []
  const definitions = tables.has('plinth_resource_tables')
    ? await db.select({ table: fieldTableDefinitions.table_name, definition: sql<string>`${fieldTableDefinitions.definition}::text` }).from(fieldTableDefinitions)
    : []
  return { migrations: journal?.n ?? 0, tables, definitions: new Map(definitions.map((row) => [row.table, row.definition])) }
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`
const theTables = (names: string[]) => `the table${names.length === 1 ? '' : 's'} ${names.join(', ')}`

/** One line of what changed between `before` and `after` for the resource `tables`, or that nothing did. */
export function changes (before: SchemaState, after: SchemaState, tables: readonly string[], driver: Driver): string {
  const names = [...new Set(tables)]
  const applied = after.migrations - before.migrations
  const created = names.filter((name) => !before.tables.has(name))
  const updated = names.filter((name) => before.tables.has(name) && before.definitions.get(name) !== after.definitions.get(name))
  const unchanged = names.filter((name) => !created.includes(name) && !updated.includes(name))
  const done = [
    applied > 0 ? `applied ${count(applied, 'migration')}` : '',
    created.length > 0 ? `created ${theTables(created)}` : '',
    updated.length > 0 ? `updated ${theTables(updated)}` : ''
  ].filter(Boolean)
  const current = unchanged.length > 0 ? [`${unchanged.join(', ')} up to date`] : []
  if (done.length === 0) return `nothing to do: ${count(after.migrations, 'migration')} applied before${current.map((text) => `; ${text}`).join('')} (${driver})`
  return `${[...done, ...current].join('; ')} (${driver})`
}

/** `plinth migrate` and `npm run db:migrate`: migrations and the tables of RESOURCES and RESOURCES_FILE; returns what it did, in one line. */
export async function migrate (url: string, { resources, fieldTables }: { resources: string[], fieldTables: ResourceTableSpec[] }): Promise<string> {
  const client = await connect(url)
  try {
    const before = await schemaState(client.db)
    await createTables(client, resources, fieldTables)
    return changes(before, await schemaState(client.db), [...resources, ...fieldTables.map((spec) => spec.table)], client.driver)
  } finally {
    await client.close()
  }
}
