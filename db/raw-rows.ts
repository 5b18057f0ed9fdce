/**
 * The rows of a raw `db.execute(sql`...`)`, as an array on either driver: Drizzle's PGlite driver
 * answers `{ rows }`, its postgres.js driver the array of rows itself.
 */
export function rowsOf<Row = Record<string, unknown>> (result: unknown): Row[] {
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[]
}
