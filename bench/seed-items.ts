import { sql } from 'drizzle-orm'
import type { Database } from '../db/client.js'
import { resize, seedCommand, type SeededTable } from './resize.js'

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

const itemsTable: SeededTable = { name: 'items', seed: seedItems }

/** Makes the items table at `url` hold exactly `count` rows. */
export const resizeItems = (url: string, count: number) => resize(url, count, itemsTable)

seedCommand(import.meta.url, itemsTable)
