import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { sql } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { gated } from './gate.js'
import * as schema from './schema.js'

export type Schema = typeof schema

/** The Drizzle database, whichever driver is underneath; a transaction is one too. */
export type Database = PgDatabase<PgQueryResultHKT, Schema>

export type Driver = 'pglite' | 'postgres'

export interface DatabaseClient {
  db: Database
  driver: Driver
  /** Applies the committed migrations (db/migrations); idempotent. */
  migrate (): Promise<void>
  /** Resolves when the database answers a trivial query. */
  ping (): Promise<void>
  /** Idempotent. */
  close (): Promise<void>
}

export interface PgliteOptions {
  /** Start from this data-folder dump (from `dumpPglite`) instead of an empty cluster: much faster. */
  loadDataDir?: Blob
}

const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url))

/**
 * The advisory lock key under which schema changes run: processes starting together on one
 * database (WORKERS, several servers, db:migrate) take turns, and the later ones find the work done
 * instead of failing on a duplicate table or a half-recorded migration.
 */
export const SCHEMA_LOCK = 0x706c6e74

/**
 * Opens the database that DATABASE_URL names: `postgres://` or `postgresql://` through
 * postgres.js, `pglite://PATH` as PGlite in a folder, `memory://` as an in-memory PGlite.
 */
export async function connect (url: string): Promise<DatabaseClient> {
  const scheme = url.slice(0, url.indexOf('://'))
  if (scheme === 'postgres' || scheme === 'postgresql') return connectPostgres(url)
  if (scheme === 'pglite') return connectPglite(url.slice('pglite://'.length))
  if (scheme === 'memory') return connectPglite(undefined)
  throw new Error(`unsupported database URL scheme "${scheme}://"`)
}

/** postgres.js connections per process. */
export const POOL = 10

async function connectPostgres (url: string): Promise<DatabaseClient> {
  const { default: postgres } = await import('postgres')
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const { migrate } = await import('drizzle-orm/postgres-js/migrator')
  const client = postgres(url, {
    max: POOL,
    // Fail fast when the server is unreachable: requests answer 503 instead of hanging.
    connect_timeout: 5,
    // Reconnect at once. The default backoff (growing to 20 s, shared by the pool) holds each
    // query that needs a new connection until the delay is over: with PostgreSQL stopped,
    // requests took up to 17 s to get their 503, and up to 6 s more after it was back
    // (test/reliability/outage). A refused connection costs nothing to retry.
    backoff: () => 0,
    idle_timeout: 60,
    // DESIGN.md measured pipelining slowing down under sustained load, with max_pipeline: 0 steady.
    // But in postgres.js 3.4 a small max_pipeline breaks transactions: a BEGIN queued at the limit
    // is never bound to its connection and fails UNSAFE_TRANSACTION (tested: 0 always, 1 under
    // concurrent refreshes). So the default stays, and `gated` keeps the pipeline unused instead.
    onnotice: () => {}
  })
  const pooled = gated(client, POOL)
  const db = drizzle({ client: pooled, schema })
  return {
    db,
    driver: 'postgres',
    migrate: async () => {
      // A session lock on a reserved connection, held while the migrator works through the pool.
      const holder = await client.reserve()
      try {
        await holder`select pg_advisory_lock(${SCHEMA_LOCK})`
        await migrate(db, { migrationsFolder })
      } finally {
        await holder`select pg_advisory_unlock(${SCHEMA_LOCK})`.catch(() => {})
        holder.release()
      }
    },
    // Through the gate too: one pipelined burst (readiness under load) leaves its holes behind.
    ping: async () => { await pooled.unsafe('select 1') },
    close: () => client.end({ timeout: 5 })
  }
}

const PGLITE_CONF = ['shared_buffers=16MB']

/** PGlite is an optional peer dependency: only a pglite:// or memory:// URL loads it. */
async function loadPglite () {
  try {
    const { PGlite } = await import('@electric-sql/pglite')
    // The catalog's substring search index (migration 0002) needs pg_trgm.
    const { pg_trgm: pgTrgm } = await import('@electric-sql/pglite/contrib/pg_trgm')
    return { PGlite, pgTrgm }
  } catch (err) {
    const missing = (err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && String(err).includes("'@electric-sql/pglite'")
    if (!missing) throw err
    throw new Error('the embedded database needs @electric-sql/pglite: run `npm install @electric-sql/pglite`, or set DATABASE_URL to a postgres:// URL')
  }
}

/** PGlite in `dataDir`, or in memory when it is undefined. */
export async function connectPglite (dataDir: string | undefined, options: PgliteOptions = {}): Promise<DatabaseClient & { dump (): Promise<Blob> }> {
  const { PGlite, pgTrgm } = await loadPglite()
  const { drizzle } = await import('drizzle-orm/pglite')
  const { migrate } = await import('drizzle-orm/pglite/migrator')
  if (dataDir) mkdirSync(dataDir, { recursive: true })
  // Durability: PGlite writes its folder through Node's fs (Emscripten NODEFS: fs.writeSync, no
  // cache of its own) and commits synchronously, so an acknowledged write survives kill -9
  // (test/reliability/crash). It never fsyncs (postgres runs with -F, and NODEFS has no fsync),
  // so a power cut can lose recent commits; `relaxedDurability` only concerns browser storage.
  // PostgreSQL's default 128 MB of shared buffers live inside PGlite's WebAssembly heap, on top of
  // the 128 MB heap floor: measured here, 16 MB took the resident size of an open 10k-row database
  // from 373 to 227 MB and single-row reads from 1,900 to 2,500 per second (bench/ README figures).
  const client = await PGlite.create(dataDir, { ...options, postgresqlconf: PGLITE_CONF, extensions: { pg_trgm: pgTrgm } })
  const db = drizzle({ client, schema })
  return {
    db,
    driver: 'pglite',
    migrate: () => migrate(db, { migrationsFolder }),
    ping: async () => { await db.execute(sql`select 1`) },
    close: async () => { if (!client.closed) await client.close() },
    dump: () => client.dumpDataDir('none')
  }
}
