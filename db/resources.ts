import { getTableName, is, sql } from 'drizzle-orm'
import { PgTable, getTableConfig, type PgColumn } from 'drizzle-orm/pg-core'
import { SCHEMA_LOCK, WITHOUT_STATEMENT_TIMEOUT, type Database, type DatabaseClient } from './client.js'
import { ResourceTableError } from './errors.js'
import { syncEventTrigger } from './event-triggers.js'
import { ensureTrackedTable } from './resource-changes.js'
import { buildResourceTable, type ResourceTableSpec } from './resource-table.js'
import * as schema from './schema.js'
import { resourceTable } from './schema.js'

/** A resource's table may not take one of these names. */
export const BUILT_IN_TABLES: readonly string[] = Object.values(schema)
  .filter((value) => is(value, PgTable))
  .map((table) => getTableName(table))
  .sort()

const IDENTITY_MAX: Record<string, string> = {
  PgSmallInt: '32767', PgInteger: '2147483647', PgBigInt53: '9223372036854775807', PgBigInt64: '9223372036854775807'
}

/** The identity clause as drizzle-kit writes it; the sequence name is left to PostgreSQL. */
function identity (column: PgColumn): string {
  const { type, sequenceName, sequenceOptions: seq = {} } = column.generatedIdentity ?? {}
  const increment = String(seq.increment ?? 1)
  const min = String(seq.minValue ?? 1)
  const max = String(seq.maxValue ?? IDENTITY_MAX[column.columnType])
  if (Number(increment) < 1 || max === 'undefined') throw new ResourceTableError(`identity of ${column.name} is not supported`)
  const options = [
    sequenceName && `sequence name "${sequenceName}"`,
    `INCREMENT BY ${increment}`, `MINVALUE ${min}`, `MAXVALUE ${max}`,
    `START WITH ${String(seq.startWith ?? min)}`, `CACHE ${String(seq.cache ?? 1)}`, seq.cycle && 'CYCLE'
  ].filter(Boolean)
  return ` GENERATED ${type === 'always' ? 'ALWAYS' : 'BY DEFAULT'} AS IDENTITY (${options.join(' ')})`
}

function columnDdl (column: PgColumn): string {
  if ((column.hasDefault && !column.generatedIdentity) || column.generated || column.isUnique) {
    throw new ResourceTableError(`column ${column.name}: defaults, generated and unique columns are not supported here`)
  }
  return `"${column.name}" ${column.getSQLType()}${column.primary ? ' PRIMARY KEY' : ''}` +
    `${column.generatedIdentity ? identity(column) : ''}${column.notNull && !column.primary ? ' NOT NULL' : ''}`
}

/** CREATE TABLE IF NOT EXISTS from a Drizzle table's columns (the records preset's); refuses what it cannot express. */
export function resourceTableDdl (table: PgTable): string {
  const config = getTableConfig(table)
  const extras = config.indexes.length + config.checks.length + config.foreignKeys.length +
    config.primaryKeys.length + config.uniqueConstraints.length + config.policies.length
  if (extras > 0 || config.schema || config.enableRLS) {
    throw new ResourceTableError(`table ${config.name}: indexes, constraints, schemas and policies are not supported here`)
  }
  return `CREATE TABLE IF NOT EXISTS "${config.name}" (\n\t${config.columns.map(columnDdl).join(',\n\t')}\n);`
}

// pg_catalog, as information_schema is slow on PGlite.
async function columnsOf (db: Database, name: string): Promise<string[]> {
  const rows = await db.select({ name: sql<string>`a.attname` })
    .from(sql`pg_attribute a join pg_class c on c.oid = a.attrelid`)
    .where(sql`c.oid = to_regclass(quote_ident(${name})) and c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped`)
  return rows.map((row) => row.name).sort()
}

/** Creates the table unless it exists, then checks its columns: a host's own table of that name fails the boot, not every request. */
export async function ensureResourceTable (db: Database, table: PgTable): Promise<void> {
  const name = getTableName(table)
  let found = await columnsOf(db, name)
  if (found.length === 0) {
    await db.transaction(async (tx) => {
      // One creator at a time across processes: concurrent CREATE TABLE IF NOT EXISTS can fail on the catalog's unique index.
      await tx.execute(WITHOUT_STATEMENT_TIMEOUT)
      await tx.execute(sql.raw(`select pg_advisory_xact_lock(${SCHEMA_LOCK})`))
      await tx.execute(sql.raw(resourceTableDdl(table)))
    })
    found = await columnsOf(db, name)
  }
  const expected = getTableConfig(table).columns.map((column) => column.name).sort()
  if (found.length === 0) {
    throw new ResourceTableError(`table "${name}" cannot be created: another kind of relation (an index, a sequence) has that name`)
  }
  if (found.join() !== expected.join()) {
    throw new ResourceTableError(
      `table "${name}" exists but is not a resource table: it has the columns (${found.join(', ')}), a resource table (${expected.join(', ')})`
    )
  }
}

export async function prepareResourceTable (db: Database, spec: ResourceTableSpec): Promise<void> {
  if (spec.tracked ?? true) return ensureTrackedTable(db, spec)
  await ensureResourceTable(db, buildResourceTable(spec.table, spec.fields, spec))
}

/** Migrations and resource tables, for processes that prepare a database without serving it (db:migrate, the WORKERS primary). */
export async function createTables (client: DatabaseClient, records: readonly string[], resources: readonly ResourceTableSpec[] = []): Promise<void> {
  await client.migrate()
  for (const name of new Set(records)) await ensureResourceTable(client.db, resourceTable(name))
  for (const spec of resources) {
    await prepareResourceTable(client.db, spec)
    await syncEventTrigger(client.db, spec, spec.events ?? true)
  }
}
