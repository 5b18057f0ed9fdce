import { sql, type SQL } from 'drizzle-orm'
import type { FieldKind } from '../schemas/fields.js'
import { WITHOUT_STATEMENT_TIMEOUT, type Database } from './client.js'
import { rowsOf } from './raw-rows.js'
import { condition, type Filter } from './resource-lists.js'

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

/** Whose events a resume reads: the rule the live stream applies to each event, as SQL. */
export interface EventScope {
  /** Only this owner's events: owner mode, for a user who is not a superuser. */
  ownerId?: number
  /** The stream's filters, on the row as the event logged it, with the list's semantics. */
  filters?: Filter[]
  /** Each filtered column's kind. */
  kinds?: Record<string, FieldKind>
}

/** One page of a table's log: the events in scope among the next `limit` read, and how far the page read. */
export interface EventPage {
  events: ChangeEvent[]
  /** The id of the last event read, in scope or not ('0' when none): the next page starts after it. */
  readThrough: string
  /** Whether the page was full: more events may follow. */
  full: boolean
}

// The logged row's member as the column it came from, so each filter means what it means on the list.
const CASTS: Partial<Record<FieldKind, string>> = { integer: 'integer', number: 'double precision', date: 'date', timestamp: 'timestamptz', boolean: 'boolean' }

function member (column: string, kind: FieldKind): SQL {
  if (kind === 'text[]') return sql`(case when jsonb_typeof(page.doc -> ${column}) = 'array' then array(select jsonb_array_elements_text(page.doc -> ${column})) end)`
  const cast = CASTS[kind]
  return cast === undefined ? sql`(page.doc ->> ${column})` : sql`(page.doc ->> ${column})::${sql.raw(cast)}`
}

function inScope ({ filters = [], kinds = {} }: EventScope): SQL {
  if (filters.length === 0) return sql`true`
  return sql.join(filters.map((filter) => {
    const kind = kinds[filter.column]
    if (kind === undefined) throw new Error(`no column ${filter.column}`)
    return condition(member(filter.column, kind), kind, filter, (_, value) => value, filter.column)
  }), sql` and `)
}

/**
 * The statement of one page: an index range of at most `limit` events of the table (of one owner's,
 * when scoped so), then the scope's filters on those. Its cost is the page's, whatever other owners logged.
 */
export function eventPageQuery (table: string, after: string, limit: number, through?: string, scope: EventScope = {}): SQL {
  const owned = scope.ownerId === undefined ? sql`` : sql` and owner_id = ${scope.ownerId}`
  const upTo = through === undefined ? sql`` : sql` and id <= ${through}::bigint`
  const doc = scope.filters?.length ? sql`, "row"::jsonb as doc` : sql``
  return sql`
    with page as materialized (
      select id, table_name, op, row_id, owner_id, "row"${doc} from resource_events
      where table_name = ${table}${owned} and id > ${after}::bigint${upTo}
      order by id limit ${limit}
    ),
    span as (select count(*)::int as n, coalesce(max(id), 0)::text as last from page)
    select span.n, span.last, page.id::text as id, page.table_name as "table", page.op, page.row_id as "rowId", page.owner_id as "ownerId", page."row"
    from span left join page on ${inScope(scope)}
    order by page.id`
}

/** Events of `table` with id > after (and <= through, when given), oldest first: those in scope among the next `limit`. */
export async function tableEventPage (db: Database, table: string, after: string, limit: number, through?: string, scope: EventScope = {}): Promise<EventPage> {
  const rows = rowsOf<ChangeEvent & { n: number, last: string }>(await db.execute(eventPageQuery(table, after, limit, through, scope)))
  const [first] = rows
  return {
    events: rows.filter((row) => row.id !== null).map(({ n, last, ...event }) => event),
    readThrough: first!.last,
    full: first!.n === limit
  }
}

async function one (db: Database, query: SQL): Promise<string | null> {
  const [row] = rowsOf<{ value: string | null }>(await db.execute(query))
  return row?.value ?? null
}

/** The highest id logged so far, '0' when none. */
export const lastEventId = async (db: Database) => (await one(db, sql`select coalesce(max(id), 0)::text as value from resource_events`))!

/**
 * Where a resume point must lie: above `purged`, the highest id of `table` a purge deleted ('0' when
 * none: a resume from below it may miss events), and at most `issued`, the highest id ever taken
 * (the sequence's, which a role that may insert into the log may read).
 */
export async function resumeBounds (db: Database, table: string): Promise<{ purged: string, issued: string }> {
  const [row] = rowsOf<{ purged: string, issued: string }>(await db.execute(sql`
    select coalesce((select purged_through from resource_event_horizons where table_name = ${table}), 0)::text as purged,
      coalesce(pg_sequence_last_value('resource_events_id_seq'), 0)::text as issued`))
  return row!
}

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
