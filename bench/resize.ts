import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { count, sql } from 'drizzle-orm'
import { connect, type Database } from '../db/client.js'

/** A bench table that can be emptied and topped up with generated rows. */
export interface SeededTable {
  name: string
  /** Creates the table when migrations alone do not. */
  prepare?: (db: Database) => Promise<void>
  seed: (db: Database, count: number) => Promise<void>
}

export interface Resized {
  before: number
  after: number
  ms: number
}

/**
 * Makes the table at `url` hold exactly `rows` rows: tops it up with generated ones, or empties it
 * first (restarting its ids) when it holds more. It rewrites the table: point it at a database of its own.
 */
export async function resize (url: string, rows: number, table: SeededTable): Promise<Resized> {
  const started = performance.now()
  const client = await connect(url)
  try {
    await client.migrate()
    await table.prepare?.(client.db)
    const [row] = await client.db.select({ total: count() }).from(sql`${sql.identifier(table.name)}`)
    const before = row!.total
    if (before > rows) await client.db.execute(sql`truncate ${sql.identifier(table.name)} restart identity`)
    await table.seed(client.db, before > rows ? rows : rows - before)
    return { before, after: rows, ms: performance.now() - started }
  } finally {
    await client.close()
  }
}

/** `node build/bench/seed-<name>.js COUNT [URL]` for a module run as a script. */
export function seedCommand (moduleUrl: string, table: SeededTable) {
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? '').href) return
  const [countText = '', url = process.env.BENCH_DATABASE_URL] = process.argv.slice(2)
  const rows = Number(countText.replaceAll('_', ''))
  if (!Number.isInteger(rows) || rows < 0 || !url) {
    console.error(`usage: node build/bench/seed-${table.name}.js COUNT [DATABASE_URL]   (default URL: $BENCH_DATABASE_URL)`)
    process.exit(2)
  }
  if (url.startsWith('memory://')) throw new Error('memory:// is gone when this process exits: seed a postgres:// or pglite:// database')
  resize(url, rows, table).then(({ before, after, ms }) => {
    console.log(`${table.name}: ${before} -> ${after} in ${(ms / 1000).toFixed(1)} s`)
  }, (err: unknown) => {
    console.error(`seed-${table.name} failed:`, err instanceof Error ? err.message : err)
    process.exitCode = 1
  })
}
