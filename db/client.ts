import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { sql } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import type { Sql } from 'postgres'
import { createGate, type QueueBound } from '../concurrency/gate.js'
import { gated, statementTimeoutSetting, wrapPglite, type StatementBound } from './driver.js'
import { DatabaseUrlError } from './errors.js'
import { lockFolder } from './pglite-lock.js'
import { rowsOf } from './raw-rows.js'
import { redactUrl } from './redact-url.js'
import * as schema from './schema.js'

export type Schema = typeof schema

export type Database = PgDatabase<PgQueryResultHKT, Schema>

export type Driver = 'pglite' | 'postgres'

export type { Preparable, Runnable } from './driver.js'

/** Queries the client runs now and holds back, beside how many it runs at most (PGlite runs one at a time). */
export interface DatabaseLoad { size: number, running: number, waiting: number }

/** A LISTEN on one channel, on a connection of its own. */
export interface Listening {
  /** Listens again if its connection was lost: true when it had to, as notifications may then have been missed. */
  renew (): Promise<boolean>
  close (): Promise<void>
  /** True when no notification can come (a transaction pooler without a listen URL): the caller polls. */
  polled?: boolean
}

export type Listen = (channel: string, onNotify: (payload: string) => void) => Promise<Listening>

export interface DatabaseClient {
  db: Database
  driver: Driver
  /** PostgreSQL only: how its URL's server hands out connections. */
  poolMode?: PoolMode
  /** PostgreSQL only: the longest a statement may run before the server cancels it (SQLSTATE 57014); none when undefined. */
  statementTimeoutMs?: number
  /** LISTEN: PGlite's own session, or a direct PostgreSQL connection (the listen URL's, else the database URL's); none on a stand-in client. */
  listen?: Listen
  load (): DatabaseLoad
  /** Refuses queries at once while `bound.maxWaiting` wait already (undefined: they all wait). */
  limitWaiting? (bound: QueueBound | undefined): void
  migrate (): Promise<void>
  ping (): Promise<void>
  close (): Promise<void>
}

export interface PgliteOptions {
  /** Start from this data-folder dump (from the client's `dump()`) instead of an empty cluster. */
  loadDataDir?: Blob
}

const migrationsFolder = fileURLToPath(new URL('./migrations', import.meta.url))

/** First in a transaction of maintenance work (migrations, boot DDL, the feed's purge): its statements are not cut by the requests' bound. */
export const WITHOUT_STATEMENT_TIMEOUT = sql.raw(statementTimeoutSetting(0))

/** Advisory lock for schema changes: processes starting together take turns, and the later ones find the work done. */
export const SCHEMA_LOCK = 0x706c6e74

/** How the server end of a postgres:// URL hands out connections: `transaction` is a pooler (PgBouncer's transaction pooling) that gives each transaction any server connection. */
export type PoolMode = 'session' | 'transaction'

export interface ConnectOptions {
  /** PostgreSQL only: where LISTEN connects, past a pooler that cannot hold one (PgBouncer's transaction pooling). */
  listenUrl?: string
  /** PostgreSQL only, `session` by default: `transaction` sends unnamed statements and keeps no state on a connection between transactions. */
  poolMode?: PoolMode
  /**
   * PostgreSQL only: the server cancels a statement that runs longer (undefined: never). In session pool mode each
   * connection is opened with it; where the connections turn out not to have it (a pooler dropped it, or transaction
   * pooling), each statement is bounded in its transaction instead. PGlite cannot interrupt a statement: there it has no effect.
   */
  statementTimeoutMs?: number
}

/** A postgres:// or postgresql:// URL: PostgreSQL through postgres.js; anything else is PGlite's or refused. */
export const isPostgresUrl = (url: string) => /^postgres(ql)?:\/\//.test(url)

export async function connect (url: string, { listenUrl, poolMode = 'session', statementTimeoutMs }: ConnectOptions = {}): Promise<DatabaseClient> {
  const scheme = url.slice(0, url.indexOf('://'))
  if (listenUrl !== undefined && !isPostgresUrl(listenUrl)) throw new DatabaseUrlError(`the listen URL ${redactUrl(listenUrl)} is not a postgres:// URL`)
  if (scheme === 'postgres' || scheme === 'postgresql') return connectPostgres(url, poolMode, listenUrl, statementTimeoutMs)
  if (listenUrl !== undefined) throw new DatabaseUrlError('a listen URL is for PostgreSQL: PGlite listens in its own process')
  if (poolMode !== 'session') throw new DatabaseUrlError('a pool mode is for PostgreSQL: PGlite is one connection in this process')
  if (scheme === 'pglite') return connectPglite(url.slice('pglite://'.length))
  if (scheme === 'memory') return connectPglite(undefined)
  throw new Error(`unsupported database URL scheme "${scheme}://"`)
}

export const POOL = 10

/** LISTEN on its own connection, which nothing else uses, so a pooler in front of `url` must keep sessions. */
export function postgresListen (url: string): Listen {
  return async (channel, onNotify) => {
    const { default: postgres } = await import('postgres')
    let live = false
    const listener = postgresClient(() => postgres(url, {
      max: 1,
      connect_timeout: 5,
      backoff: () => 0,
      // The connection is the subscription: it is never retired while it lives.
      idle_timeout: 0,
      max_lifetime: null,
      fetch_types: false,
      onnotice: () => {},
      onclose: () => { live = false },
      onnotify: (name: string, payload: string) => { if (name === channel) onNotify(payload) }
    } as Parameters<typeof postgres>[1]), url)
    const renew = async () => {
      if (live) return false
      await listener.unsafe(`listen "${channel.replaceAll('"', '""')}"`)
      live = true
      return true
    }
    try {
      await renew()
    } catch (err) {
      await listener.end({ timeout: 0 })
      throw err
    }
    return { renew, close: () => listener.end({ timeout: 5 }) }
  }
}

/** Through a transaction pooler without a direct URL: no LISTEN can hold, so the change feed relies on its poll. */
const pollOnly: Listen = async () => ({ renew: async () => false, close: async () => {}, polled: true })

/**
 * The bound of `ms` on a pool. A session's own connections start with it (`options`, where the server takes it); a pooler
 * may drop it (PgBouncer ignores `options`), and a transaction pooler's connections are anyone's. One read of the setting
 * finds whether the connections have it anyway (a role's or database's default of the same value); if not, the bound
 * goes in each transaction.
 */
function statementBound (ms: number, pool: () => Sql): StatementBound {
  let carried: Promise<boolean> | undefined
  const check = async () => {
    const [row] = await pool().unsafe('select setting from pg_settings where name = \'statement_timeout\'')
    return row?.setting === String(ms)
  }
  return {
    setting: statementTimeoutSetting(ms),
    // Checked until one check answers: an unreachable server at boot leaves it to the next statement.
    inTransactions: async () => !await (carried ??= check().catch((err: unknown) => { carried = undefined; throw err }))
  }
}

async function connectPostgres (url: string, poolMode: PoolMode, listenUrl: string | undefined, statementTimeoutMs: number | undefined): Promise<DatabaseClient> {
  const { default: postgres } = await import('postgres')
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const bounded = statementTimeoutMs !== undefined && poolMode === 'session'
  const client = postgresClient(() => postgres(url, {
    max: POOL,
    // Fail fast when the server is unreachable: requests answer 503 instead of hanging.
    connect_timeout: 5,
    // Reconnect at once: a refused connection costs nothing to retry, and the pool's shared backoff delays queries long after recovery.
    backoff: () => 0,
    idle_timeout: 60,
    // The default max_pipeline stays: a small one breaks transactions in postgres.js 3.4 (UNSAFE_TRANSACTION); `gated` avoids pipelining instead.
    onnotice: () => {},
    // A named statement lives on one server connection, which a transaction pooler does not keep for us.
    prepare: poolMode === 'session',
    ...(bounded ? { connection: { options: `-c statement_timeout=${Math.trunc(statementTimeoutMs)}` } } : {})
  }), url)
  const gate = createGate(POOL)
  const bound = statementTimeoutMs === undefined ? undefined : statementBound(statementTimeoutMs, () => client)
  const pooled = gated(client, gate, bound)
  const db = drizzle({ client: pooled, schema })
  return {
    db,
    driver: 'postgres',
    statementTimeoutMs,
    listen: listenUrl !== undefined ? postgresListen(listenUrl) : poolMode === 'session' ? postgresListen(url) : pollOnly,
    poolMode,
    load: () => ({ size: POOL, ...gate.load() }),
    limitWaiting: gate.limitWaiting,
    migrate: () => migrateInOneTransaction(db),
    // Through the gate too: one pipelined burst (readiness under load) leaves its holes behind.
    ping: async () => { await pooled.unsafe('select 1') },
    close: () => client.end({ timeout: 5 })
  }
}

/**
 * Drizzle's migrator, in drizzle's own table, but with the lock, the check of what ran and every migration in one
 * transaction: a session lock would not hold through a transaction pooler.
 */
async function migrateInOneTransaction (db: Database) {
  const { readMigrationFiles } = await import('drizzle-orm/migrator')
  const migrations = readMigrationFiles({ migrationsFolder })
  await db.transaction(async (tx) => {
    await tx.execute(WITHOUT_STATEMENT_TIMEOUT)
    await tx.execute(sql.raw(`select pg_advisory_xact_lock(${SCHEMA_LOCK})`))
    await tx.execute(sql`create schema if not exists drizzle`)
    await tx.execute(sql`create table if not exists drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`)
    const [last] = rowsOf<{ created_at: string }>(await tx.execute(sql`select created_at from drizzle.__drizzle_migrations order by created_at desc limit 1`))
    for (const migration of migrations) {
      if (last !== undefined && Number(last.created_at) >= migration.folderMillis) continue
      for (const statement of migration.sql) await tx.execute(sql.raw(statement))
      await tx.execute(sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`)
    }
  })
}

/** The driver's client, or a DatabaseUrlError for a URL it cannot parse: Node's own error would carry the URL, password and all. */
function postgresClient<T> (create: () => T, url: string): T {
  try {
    return create()
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_INVALID_URL') throw err
    throw new DatabaseUrlError(`${redactUrl(url)} is not a valid URL: percent-encode the reserved characters of the user name and password, such as %40 for @ and %2F for /`)
  }
}

const PGLITE_CONF = ['shared_buffers=16MB']

const NOT_A_FOLDER: Record<string, string> = { EEXIST: 'is a file, not a folder', ENOTDIR: 'is inside a file, not a folder' }

function openFolder (dataDir: string): () => void {
  if (dataDir.trim() === '') {
    throw new DatabaseUrlError('pglite:// needs the path of a folder, such as pglite://./data/pglite; memory:// is a database in memory, lost at exit')
  }
  try {
    mkdirSync(dataDir, { recursive: true })
  } catch (err) {
    const reason = NOT_A_FOLDER[(err as NodeJS.ErrnoException).code ?? '']
    if (reason === undefined) throw err
    throw new DatabaseUrlError(`${dataDir} ${reason}: pglite:// takes the path of a folder`)
  }
  return lockFolder(dataDir)
}

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

export async function connectPglite (dataDir: string | undefined, options: PgliteOptions = {}): Promise<DatabaseClient & { dump (): Promise<Blob> }> {
  const { PGlite, pgTrgm } = await loadPglite()
  const { drizzle } = await import('drizzle-orm/pglite')
  const { migrate } = await import('drizzle-orm/pglite/migrator')
  const release = dataDir === undefined ? () => {} : openFolder(dataDir)
  // PGlite commits synchronously through Node's fs: a write survives kill -9 but, never fsynced, not a power cut.
  // Shared buffers live in its WebAssembly heap: a pool smaller than PostgreSQL's default saves memory.
  const client = await PGlite.create(dataDir, { ...options, postgresqlconf: PGLITE_CONF, extensions: { pg_trgm: pgTrgm } })
    .catch((err: unknown) => { release(); throw err })
  // PGlite queues its callers itself: counting the calls in flight gives the one running and those queued behind it.
  let pending = 0
  let bound: QueueBound | undefined
  const counted = <A extends unknown[], R>(call: (...args: A) => Promise<R>) => (...args: A) => {
    if (bound !== undefined && pending > bound.maxWaiting) return Promise.reject(bound.refuse())
    pending++
    return call(...args).finally(() => { pending-- })
  }
  wrapPglite(client, counted)
  const db = drizzle({ client, schema })
  return {
    db,
    driver: 'pglite',
    listen: async (channel, onNotify) => {
      const stop = await client.listen(channel, onNotify)
      return { renew: async () => false, close: async () => { if (!client.closed) await stop() } }
    },
    load: () => ({ size: 1, running: Math.min(pending, 1), waiting: Math.max(pending - 1, 0) }),
    limitWaiting: (next) => { bound = next },
    migrate: () => migrate(db, { migrationsFolder }),
    ping: async () => { await db.execute(sql`select 1`) },
    close: async () => {
      if (!client.closed) await client.close()
      release()
    },
    dump: () => client.dumpDataDir('none')
  }
}
