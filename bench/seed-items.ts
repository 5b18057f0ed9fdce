import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { sql } from 'drizzle-orm'
import { connect, type Database } from '../db/client.js'
import { createItemRepository } from '../db/items.js'

/**
 * Appends `count` generated items ("blue desk 42") in one INSERT ... SELECT, whose counter
 * triggers fire once for the whole statement, then VACUUM ANALYZE: it flushes the trigram
 * index's pending list and gives the planner statistics. About 35 s per million rows on
 * PostgreSQL here. Not inside a transaction (VACUUM cannot be).
 */
export async function seedItems (db: Database, count: number): Promise<void> {
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`count must be a non-negative integer (got ${count})`)
  if (count === 0) return
  await db.execute(sql`
    insert into items (name, description, price, in_stock)
    select (array['red', 'green', 'blue', 'oak', 'steel', 'linen', 'brass', 'glass'])[1 + g % 8] || ' ' ||
             (array['lamp', 'chair', 'desk', 'shelf', 'rug', 'vase', 'clock', 'mirror'])[1 + (g / 8) % 8] || ' ' || g,
           case when g % 4 = 0 then null else 'seeded item number ' || g end,
           (g % 100000) / 100.0,
           g % 10 <> 0
    from generate_series(1, ${count}::int) as g`)
  await db.execute(sql`vacuum analyze items`)
}

/** Empties the catalog and restarts its ids at 1; the counter resets with it. */
export async function truncateItems (db: Database): Promise<void> {
  await db.execute(sql`truncate items restart identity`)
}

export interface Resized {
  before: number
  after: number
  ms: number
}

/**
 * Makes the items table at `url` hold exactly `count` items: tops it up with generated ones
 * (seedItems, one INSERT ... SELECT), or empties it first when it holds more.
 * It rewrites the table: point it at a database of its own.
 */
export async function resizeItems (url: string, count: number): Promise<Resized> {
  const started = performance.now()
  const client = await connect(url)
  try {
    await client.migrate()
    const before = await createItemRepository(client.db).count()
    if (before > count) await truncateItems(client.db)
    await seedItems(client.db, before > count ? count : count - before)
    return { before, after: count, ms: performance.now() - started }
  } finally {
    await client.close()
  }
}

const USAGE = 'usage: node build/bench/seed-items.js COUNT [DATABASE_URL]   (default URL: $BENCH_DATABASE_URL)'

async function main ([countText = '', url = process.env.BENCH_DATABASE_URL]: string[]) {
  const count = Number(countText.replaceAll('_', ''))
  if (!Number.isInteger(count) || count < 0 || !url) {
    console.error(USAGE)
    process.exit(2)
  }
  if (url.startsWith('memory://')) throw new Error('memory:// is gone when this process exits: seed a postgres:// or pglite:// database')
  const { before, after, ms } = await resizeItems(url, count)
  console.log(`items: ${before} -> ${after} in ${(ms / 1000).toFixed(1)} s`)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error('seed-items failed:', err instanceof Error ? err.message : err)
    process.exitCode = 1
  })
}
