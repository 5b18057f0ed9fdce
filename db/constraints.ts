import { sql } from 'drizzle-orm'
import type { Database } from './client.js'
import { causes, constraintViolation, sqlState, type ConstraintViolation } from './errors.js'
import { rowsOf } from './raw-rows.js'

/** What a constraint covers: its columns in its order (none for an expression), and the table a foreign key references. */
export interface ConstraintColumns { columns: string[], references?: string }

/** From the catalogs: PostgreSQL names a key's columns only in the error's `detail`, beside the values. */
export async function constraintColumns (db: Database, violation: ConstraintViolation): Promise<ConstraintColumns> {
  const { constraint, schema, table, column } = violation
  if (column !== undefined) return { columns: [column] }
  if (constraint === undefined || table === undefined) return { columns: [] }
  // A unique index made by CREATE UNIQUE INDEX has no pg_constraint row: its key is the index's.
  const result = await db.execute(sql`
    select a.attname as "column", f.relname as "references"
    from pg_class t
    join pg_namespace n on n.oid = t.relnamespace
    left join pg_constraint c on c.conrelid = t.oid and c.conname = ${constraint}
    left join pg_class f on f.oid = c.confrelid
    cross join lateral unnest(coalesce(c.conkey, (
      select x.indkey::int2[] from pg_index x join pg_class i on i.oid = x.indexrelid where x.indrelid = t.oid and i.relname = ${constraint}
    ))) with ordinality as k(attnum, position)
    join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum
    where t.relname = ${table} and (${schema ?? null}::text is null or n.nspname = ${schema ?? null})
    order by k.position`)
  const rows = rowsOf<{ column: string, references: string | null }>(result)
  return { columns: rows.map((row) => row.column), references: rows[0]?.references ?? undefined }
}

/** A delete refused because rows still reference the row: RESTRICT's 23001, or NO ACTION's 23503 on a delete; the referencing table and its key. */
export function referencedRowViolation (error: unknown, deleting: boolean): { table?: string, constraint?: string } | undefined {
  const state = sqlState(error)
  if (state === '23503' && deleting) return constraintViolation(error)
  if (state !== '23001') return undefined
  for (const cause of causes(error)) {
    if (!('severity' in cause)) continue
    // postgres.js names PostgreSQL's fields `table_name`..., PGlite `table`...
    const fields = cause as Record<string, unknown>
    const text = (...names: string[]) => names.map((name) => fields[name]).find((value): value is string => typeof value === 'string' && value !== '')
    return { table: text('table_name', 'table'), constraint: text('constraint_name', 'constraint') }
  }
  return undefined
}
