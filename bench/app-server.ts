import { API_PREFIX, buildApp } from '../app.js'
import catalogPlugin from '../routes/catalog/index.js'
import resourcePlugin from '../routes/resources/index.js'
import { seedItems } from './seed-items.js'
import { seedTasks } from './seed-tasks.js'
import { main } from './child.js'
import { TASK_INDEXES, TASKS_TABLE, TaskFields } from './tasks.js'

const BENCH_RATE_LIMITS = { RATE_LIMIT_REGISTER: 1e9, RATE_LIMIT_TOKEN: 1e9, RATE_LIMIT_REFRESH: 1e9, RATE_LIMIT_REVOKE: 1e9 }

// bench/run.js always sets BENCH_DATABASE_URL for this child.
main(async () => {
  // BENCH_JWT_PRIVATE_KEY makes this the EdDSA server of the token-verify scenarios, BENCH_STATELESS the one without
  // the session check, BENCH_OBSERVED the one with metrics.
  const key = process.env.BENCH_JWT_PRIVATE_KEY
  const app = await buildApp({
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'memory://',
    // The *-pooled-transaction scenarios' server: its DATABASE_URL is then a PgBouncer in transaction pooling.
    ...(process.env.BENCH_DATABASE_POOL_MODE === 'transaction' ? { DATABASE_POOL_MODE: 'transaction' as const } : {}),
    LOG_LEVEL: 'silent',
    // Limits on, far above what a scenario sends from its one address: their cost is measured, they never trip.
    ...BENCH_RATE_LIMITS,
    // As the connections per address: every scenario's come from one, 500 in the overload ones.
    MAX_CONNECTIONS_PER_ADDRESS: 1e9,
    // And so for an address's share of the hash queue, which the login scenarios fill from their one address.
    OVERLOAD_MAX_HASH_WAITING_PER_CLIENT: 1e9,
    ...(key ? { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: key } : {}),
    ...(process.env.BENCH_STATELESS ? { SESSION_CHECK: false } : {}),
    // Metrics collected as a deployment with METRICS_PORT has them; nothing scrapes here.
    ...(process.env.BENCH_OBSERVED ? { METRICS_PORT: 0 } : {})
  }, { logger: false })
  // The catalog without ETags, for the scenarios that measure what ETags and metrics cost.
  await app.register(catalogPlugin, { prefix: `/plain${API_PREFIX}`, etags: false })
  // A resource defined by its fields, next to the records one, so the two compare in one run.
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: TASKS_TABLE, fields: TaskFields, indexes: TASK_INDEXES })
  // An in-memory PGlite can only be filled from inside this process: one INSERT ... SELECT here
  // instead of ten thousand POSTs over HTTP (which took most of a --quick run).
  const seed = Number(process.env.BENCH_SEED_ITEMS ?? 0)
  if (seed > 0) await seedItems(app.plinthDb.db, seed)
  // The awaited register above has created the tasks table by now.
  const tasks = Number(process.env.BENCH_SEED_TASKS ?? 0)
  if (tasks > 0) await seedTasks(app.plinthDb.db, tasks)
  return app
})
