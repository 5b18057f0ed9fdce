import { buildApp } from '../app.js'
import { seedItems } from './seed-items.js'
import { main } from './child.js'

// bench/run.js always sets BENCH_DATABASE_URL for this child.
main(async () => {
  const app = await buildApp({ DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'memory://', LOG_LEVEL: 'silent' }, { logger: false })
  // An in-memory PGlite can only be filled from inside this process: one INSERT ... SELECT here
  // instead of ten thousand POSTs over HTTP (which took most of a --quick run).
  const seed = Number(process.env.BENCH_SEED_ITEMS ?? 0)
  if (seed > 0) await seedItems(app.plinthDb.db, seed)
  return app
})
