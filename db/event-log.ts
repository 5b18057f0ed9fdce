import { sql, type SQL } from 'drizzle-orm'
import { WITHOUT_STATEMENT_TIMEOUT, type Database } from './client.js'
import { rowsOf } from './raw-rows.js'

export type ChangeOp = 'created' | 'updated' | 'deleted'

/** One logged write, as the feed hands it on. */
export interface ChangeEvent {
  /** The log's bigint id, as decimal text. */
  id: string
  /** The resource's SQL table. */
  table: string
  op: ChangeOp
  rowId: number
  ownerId: number | null
  /** The row's JSON text exactly as the list shows it; a writeOnly field is never in it. */
  row: string
}

// Ordered by the column, not by this text alias of it.
const EVENT_COLUMNS = sql`id::text as id, table_name as "table", op, row_id as "rowId", owner_id as "ownerId", "row"`

async function events (db: Database, where: SQL, limit: number): Promise<ChangeEvent[]> {
  return rowsOf<ChangeEvent>(await db.execute(sql`select ${EVENT_COLUMNS} from resource_events where ${where} order by resource_events.id limit ${limit}`))
}

/** Events of every table with id > after, oldest first. */
export const eventsAfter = (db: Database, after: string, limit: number) => events(db, sql`id > ${after}::bigint`, limit)

/** Events of `table` with id > after (and <= through, when given), oldest first. */
export const tableEventsAfter = (db: Database, table: string, after: string, limit: number, through?: string) =>
  events(db, sql`table_name = ${table} and id > ${after}::bigint${through === undefined ? sql`` : sql` and id <= ${through}::bigint`}`, limit)

async function one (db: Database, query: SQL): Promise<string | null> {
  const [row] = rowsOf<{ value: string | null }>(await db.execute(query))
  return row?.value ?? null
}

/** The highest id logged so far, '0' when none. */
export const lastEventId = async (db: Database) => (await one(db, sql`select coalesce(max(id), 0)::text as value from resource_events`))!

/** The highest id of `table` a purge deleted, '0' when none: a resume from below it may miss events. */
export const purgedThrough = async (db: Database, table: string) =>
  (await one(db, sql`select purged_through::text as value from resource_event_horizons where table_name = ${table}`)) ?? '0'

/** The transactions running now, as text: whichever of them took an id the log does not show yet may still commit it. */
export const currentSnapshot = async (db: Database) => (await one(db, sql`select pg_current_snapshot()::text as value`))!

/**
 * Whether every transaction running at `snapshot` has ended, committed or not, as a new statement sees
 * it. Snapshots span the cluster: a transaction another database's backend runs is not waited for.
 */
export async function snapshotSettled (db: Database, snapshot: string): Promise<boolean> {
  const value = await one(db, sql`
    select (not exists (
      select 1 from pg_snapshot_xip(${snapshot}::pg_snapshot) x
      where not pg_visible_in_snapshot(x, pg_current_snapshot())
        and not exists (select 1 from pg_stat_activity a where a.backend_xid = xid(x) and a.datname is distinct from current_database())
    ))::text as value`)
  return value === 'true'
}

export interface PurgeBounds {
  /** Events logged before this instant go. */
  before: Date
  /** At most this many of the newest events stay. */
  keep: number
}

/**
 * Deletes the events older than the bounds, oldest first by id (stopping at the first young one, so
 * it reads no more than it deletes), and records per table the highest id deleted. Answers how many.
 */
export async function purgeEvents (db: Database, { before, keep }: PurgeBounds): Promise<number> {
  // A purge of a long backlog may take longer than a request may.
  const purged = await db.transaction(async (tx) => {
    await tx.execute(WITHOUT_STATEMENT_TIMEOUT)
    return tx.execute(sql`
    with head as (select coalesce(max(id), 0) as id from resource_events),
    cut as (
      select greatest(
        coalesce((select id from resource_events where created_at >= ${before.toISOString()}::timestamptz order by id limit 1), (select id from head) + 1),
        (select id from head) - ${keep} + 1
      ) as below
    ),
    gone as (delete from resource_events where id < (select below from cut) returning table_name, id),
    horizons as (
      insert into resource_event_horizons (table_name, purged_through)
      select table_name, max(id) from gone group by table_name
      on conflict (table_name) do update set purged_through = greatest(resource_event_horizons.purged_through, excluded.purged_through)
    )
    select count(*)::int as n from gone`)
  })
  const [row] = rowsOf<{ n: number }>(purged)
  return row?.n ?? 0
}
