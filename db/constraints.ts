import { sql } from 'drizzle-orm'
import type { Database } from './client.js'
import type { ConstraintViolation } from './errors.js'
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
