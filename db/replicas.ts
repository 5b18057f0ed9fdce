import { performance } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import { coalesced } from '../concurrency/batch.js'
import { connect, type Database, type DatabaseClient, type PoolMode } from './client.js'
import { rowsOf } from './raw-rows.js'
import { redactUrl } from './redact-url.js'

/** What the readiness probe says of a replica: `lagging` and `down` serve no reads until a check finds them well. */
export interface ReplicaReport {
  name: string
  url: string
  status: 'ok' | 'lagging' | 'down'
  /** WAL bytes the primary holds that the replica has not replayed; null while it is down. */
  lag_bytes: number | null
  /** How long ago the primary stood where the replica stands now: 0 when it is level. */
  lag_seconds: number | null
}

export interface ReplicaOptions {
  urls: string[]
  poolMode?: PoolMode
  /** Each replica's bound on a statement, as the primary's. */
  statementTimeoutMs?: number
  /** A replica further behind than this serves no reads. */
  maxLagSeconds: number
  checkIntervalMs: number
  onChange?: (report: ReplicaReport) => void
}

/** Where a read goes: a position of the primary's WAL it must see, `now` (everything committed before it began), or no write of its own. */
export type ReadFloor = bigint | 'now' | undefined

export interface ReplicaSet {
  /** A replica that has replayed `floor` and is within the lag bound, or null for the primary. */
  pick (floor: ReadFloor): Promise<Database | null>
  /** A read on `db` failed for want of its server: it serves nothing until the next check finds it up. */
  failed (db: Database): void
  check (): Promise<ReplicaReport[]>
  reports (): ReplicaReport[]
  /** Since the start: picks that gave a replica, picks that gave the primary, and replica reads that failed (then run on the primary). */
  reads (): { replica: number, primary: number, failed: number }
  close (): Promise<void>
}

interface Replica {
  report: ReplicaReport
  client: DatabaseClient
  /** The highest WAL position it was seen to have replayed: it only grows, so a stale reading is a safe lower bound. */
  replayed: bigint
}

const SAMPLE_MS = 50

const WAL_POSITION = (expression: string) => sql.raw(`(${expression} - '0/0'::pg_lsn)::bigint`)

async function primaryPosition (primary: Database): Promise<bigint> {
  const [row] = rowsOf<{ lsn: string }>(await primary.execute(sql`select ${WAL_POSITION('pg_current_wal_lsn()')} as lsn`))
  return BigInt(row!.lsn)
}

/** The primary's replicas for reads; a replica's reads fall back to the primary while it is down, lagging or behind the read's floor. */
export async function connectReplicas (primary: Database, options: ReplicaOptions): Promise<ReplicaSet> {
  const replicas: Replica[] = await Promise.all(options.urls.map(async (url, i) => ({
    report: { name: `replica-${i + 1}`, url: redactUrl(url), status: 'down' as const, lag_bytes: null, lag_seconds: null },
    client: await connect(url, { poolMode: options.poolMode, statementTimeoutMs: options.statementTimeoutMs }),
    replayed: -1n
  })))
  let turn = 0
  const reads = { replica: 0, primary: 0, failed: 0 }
  // Where the primary's WAL stood at each check: a replica at position P is as far behind as the first check that saw the primary past P.
  const heads: Array<{ lsn: bigint, at: number }> = []
  // Kept a little past the bound: a replica behind every sample is past the bound.
  const keptMs = options.maxLagSeconds * 1000 + 2 * options.checkIntervalMs

  function lagSeconds (replayed: bigint, head: bigint | undefined): number {
    if (head === undefined || replayed >= head) return 0
    // Past every sample: behind by less than the time since the last one.
    const first = heads.find((sample) => sample.lsn > replayed)
    return first === undefined ? 0 : (performance.now() - first.at) / 1000
  }

  const setStatus = (replica: Replica, next: ReplicaReport) => {
    const changed = next.status !== replica.report.status
    replica.report = next
    if (changed) options.onChange?.(next)
  }

  async function checkOne (replica: Replica, head: bigint | undefined) {
    try {
      const [row] = rowsOf<{ replayed: string | null }>(await replica.client.db.execute(sql`select ${WAL_POSITION('pg_last_wal_replay_lsn()')} as replayed`))
      // Not in recovery: a primary of its own, which would not see this one's writes.
      if (row?.replayed == null) throw new Error('not a replica: pg_last_wal_replay_lsn() is null')
      const replayed = BigInt(row.replayed)
      if (replayed > replica.replayed) replica.replayed = replayed
      const behind = head === undefined || replayed >= head ? 0n : head - replayed
      const seconds = lagSeconds(replayed, head)
      setStatus(replica, { ...replica.report, status: seconds > options.maxLagSeconds ? 'lagging' : 'ok', lag_bytes: Number(behind), lag_seconds: seconds })
    } catch {
      setStatus(replica, { ...replica.report, status: 'down', lag_bytes: null, lag_seconds: null })
    }
  }

  const checkAll = coalesced(async (_key: 'all') => {
    const head = await primaryPosition(primary).catch(() => undefined)
    const now = performance.now()
    // One sample per SAMPLE_MS at most, however often reads ask: lag is told to that much.
    if (head !== undefined && (heads.length === 0 || (head > heads.at(-1)!.lsn && now - heads.at(-1)!.at >= SAMPLE_MS))) {
      heads.push({ lsn: head, at: now })
      while (heads.length > 2 && heads[1]!.at < now - keptMs) heads.shift()
    }
    await Promise.all(replicas.map((replica) => checkOne(replica, head)))
    return replicas.map((replica) => replica.report)
  }, (key) => key)
  const head = coalesced((_key: 'head') => primaryPosition(primary), (key) => key)

  const timer = setInterval(() => { checkAll('all').catch(() => {}) }, options.checkIntervalMs).unref()
  await checkAll('all')

  const serving = () => replicas.filter((replica) => replica.report.status === 'ok')

  function next (candidates: Replica[]): Database | null {
    if (candidates.length === 0) {
      reads.primary++
      return null
    }
    reads.replica++
    turn = (turn + 1) % candidates.length
    return candidates[turn]!.client.db
  }

  return {
    async pick (floor) {
      const up = serving()
      if (up.length === 0 || floor === undefined) return next(up)
      const needed = floor === 'now' ? await head('head') : floor
      let ready = up.filter((replica) => replica.replayed >= needed)
      if (ready.length === 0) {
        await checkAll('all')
        ready = serving().filter((replica) => replica.replayed >= needed)
      }
      return next(ready)
    },
    failed (db) {
      const replica = replicas.find((candidate) => candidate.client.db === db)
      if (replica === undefined) return
      reads.failed++
      setStatus(replica, { ...replica.report, status: 'down', lag_bytes: null, lag_seconds: null })
    },
    check: () => checkAll('all'),
    reports: () => replicas.map((replica) => replica.report),
    reads: () => ({ ...reads }),
    async close () {
      clearInterval(timer)
      await Promise.all(replicas.map((replica) => replica.client.close()))
    }
  }
}
