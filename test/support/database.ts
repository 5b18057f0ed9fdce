import { createHash, randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { drizzle as onPglite } from 'drizzle-orm/pglite'
import { drizzle as onPostgres } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import type { Test } from 'tap'
import { connect, connectPglite, type ConnectOptions, type Database, type DatabaseClient, type PoolMode } from '../../db/client.js'
import * as schema from '../../db/schema.js'

/** Set to run the whole suite on PostgreSQL, e.g. postgres://plinth@127.0.0.1:55432/plinth */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL

/** `transaction` when TEST_DATABASE_URL is a pooler in transaction mode (PgBouncer's): every client then runs as DATABASE_POOL_MODE=transaction. */
export const TEST_POOL_MODE: PoolMode = process.env.TEST_DATABASE_POOL_MODE === 'transaction' ? 'transaction' : 'session'

/** With a transaction pooler, the server itself, where LISTEN connects, as DATABASE_LISTEN_URL would say: e.g. postgres://plinth@127.0.0.1:55432/plinth */
const TEST_DATABASE_LISTEN_URL = process.env.TEST_DATABASE_LISTEN_URL

/** The direct URL of a database reached through TEST_DATABASE_URL's pooler, when the suite has one. */
export function listenUrlOf (url: string): string | undefined {
  if (TEST_POOL_MODE === 'session' || !TEST_DATABASE_URL || !TEST_DATABASE_LISTEN_URL || !URL.canParse(url)) return undefined
  const through = new URL(url)
  if (through.host !== new URL(TEST_DATABASE_URL).host) return undefined
  const direct = new URL(TEST_DATABASE_LISTEN_URL)
  direct.pathname = through.pathname
  return direct.toString()
}

/** DATABASE_POOL_MODE (and the listen URL) for a child process whose `env` names a PostgreSQL DATABASE_URL, as the suite's own clients have them. */
export function childPoolMode (env: Record<string, string>): Record<string, string> {
  if (env.DATABASE_URL === undefined || !/^postgres(ql)?:/.test(env.DATABASE_URL)) return {}
  const listenUrl = listenUrlOf(env.DATABASE_URL)
  return { DATABASE_POOL_MODE: TEST_POOL_MODE, ...(listenUrl === undefined ? {} : { DATABASE_LISTEN_URL: listenUrl }) }
}

/** A client of plinth's on a test database, in the suite's pool mode. */
export const connectTo = (url: string, options: ConnectOptions = {}) => connect(url, { poolMode: TEST_POOL_MODE, listenUrl: listenUrlOf(url), ...options })

/** postgres.js options for a test's own connection: no named statements through a transaction pooler. */
export const rawOptions = { max: 1, onnotice: () => {}, prepare: TEST_POOL_MODE === 'session' }

const root = new URL('../..', import.meta.url).pathname
const migrations = join(root, 'db/migrations')

/**
 * A dump of a new PGlite, migrated or not, cached on disk per migration set: a new in-memory
 * PGlite takes about 4 s to initialise here, one loaded from this dump about 1 s.
 */
async function pgliteSnapshot (migrated: boolean): Promise<Blob> {
  const hash = createHash('sha256')
  hash.update(await readFile(join(root, 'node_modules/@electric-sql/pglite/package.json')))
  for (const file of (await readdir(migrations, { recursive: true })).sort()) {
    if (file.endsWith('.sql') || file.endsWith('.json')) hash.update(file).update(await readFile(join(migrations, file)))
  }
  const cache = join(root, 'node_modules/.cache/plinth')
  const file = join(cache, `pglite-${migrated ? 'migrated' : 'empty'}-${hash.digest('hex').slice(0, 16)}.tar`)
  try {
    return new Blob([await readFile(file)])
  } catch {
    const client = await connectPglite(undefined)
    if (migrated) await client.migrate()
    const dump = await client.dump()
    await client.close()
    await mkdir(cache, { recursive: true })
    // Test files run in parallel: write aside and rename, so no reader sees half a file.
    const partial = `${file}.${process.pid}`
    await writeFile(partial, Buffer.from(await dump.arrayBuffer()))
    await rename(partial, file)
    return dump
  }
}

const snapshots = new Map<boolean, Promise<Blob>>()

/** An in-memory PGlite, with every migration applied unless asked otherwise. */
export async function freshPglite ({ migrated = true } = {}): Promise<DatabaseClient> {
  if (!snapshots.has(migrated)) snapshots.set(migrated, pgliteSnapshot(migrated))
  return connectPglite(undefined, { loadDataDir: await snapshots.get(migrated) })
}

/**
 * A new PostgreSQL database on TEST_DATABASE_URL, dropped when the test ends, so test files
 * can run in parallel without seeing each other's rows.
 */
export async function freshPostgresUrl (t: Test): Promise<string> {
  if (!TEST_DATABASE_URL) throw new Error('TEST_DATABASE_URL is not set')
  const name = `plinth_test_${randomBytes(6).toString('hex')}`
  const admin = postgres(TEST_DATABASE_URL, rawOptions)
  await admin.unsafe(`create database ${name}`)
  t.teardown(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end()
  })
  const url = new URL(TEST_DATABASE_URL)
  url.pathname = `/${name}`
  return url.toString()
}

/** A database no other test sees, closed when the test ends: migrated, or empty when asked. */
export async function freshDatabase (t: Test, { migrated = true } = {}): Promise<DatabaseClient> {
  const client = TEST_DATABASE_URL
    ? await connectTo(await freshPostgresUrl(t))
    : await freshPglite({ migrated })
  t.teardown(() => client.close())
  if (migrated) await client.migrate()
  return client
}

/** `client`'s connection seen through another Drizzle instance that counts the queries it sends. */
export function countingDatabase (client: DatabaseClient) {
  let queries = 0
  const logger = { logQuery: () => { queries++ } }
  const $client = (client.db as unknown as { $client: never }).$client
  const db = client.driver === 'postgres' ? onPostgres({ client: $client, schema, logger }) : onPglite({ client: $client, schema, logger })
  return { db: db as unknown as Database, queries: () => queries }
}

/** A Drizzle instance on one connection of `client`'s (PGlite has only one), released when the test ends. */
export async function oneConnection (t: Test, client: DatabaseClient): Promise<Database> {
  if (client.driver === 'pglite') return client.db
  const pool = (client.db as unknown as { $client: postgres.Sql }).$client
  const reserved = await pool.reserve()
  t.teardown(() => reserved.release())
  // Drizzle reads the type parsers from `options`, which a reserved connection shares with its pool but does not carry.
  return onPostgres({ client: Object.assign(reserved, { options: pool.options }), schema }) as unknown as Database
}

/** The rows of `db.execute`, which PGlite's driver wraps in an object and postgres.js's does not. */
export const rowsOf = <T>(result: unknown) => ((result as { rows?: T[] }).rows ?? result) as T[]

/** A row as the repository answers one, without the version it adds: for comparing column values. */
export const unversioned = <T extends object>(row: T | null | undefined) => {
  if (!row) return row
  const { version, ...columns } = row as T & { version?: string }
  return columns
}
