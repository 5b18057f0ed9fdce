/** A raw `db.execute` result as rows on either driver: Drizzle's PGlite driver answers `{ rows }`, postgres.js the array. */
export function rowsOf<Row = Record<string, unknown>> (result: unknown): Row[] {
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[]
}
