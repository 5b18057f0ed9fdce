import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { connect } from '../db/client.js'
import { createItemRepository, seedItems, truncateItems } from '../db/items.js'

export interface Resized {
  before: number
  after: number
  ms: number
}

/**
 * Makes the items table at `url` hold exactly `count` items: tops it up with generated ones
 * (db/items.ts seedItems, one INSERT ... SELECT), or empties it first when it holds more.
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
