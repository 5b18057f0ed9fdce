import { createHash } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Field } from '../schemas/fields.js'
import { SCHEMA_LOCK, type Database } from './client.js'
import { rowsOf } from './raw-rows.js'
import { resourceJsonText } from './resource-json.js'
import { ident } from './resource-table.js'

/** The channel every resource write notifies, once per transaction: the feed then reads the log. */
export const EVENTS_CHANNEL = 'plinth_resource_events'

/** What the trigger of a table needs to log its rows as the list shows them. */
export interface EventSource {
  table: string
  fields: Field[]
  owner?: boolean
  timestamps?: boolean
}

const TRIGGERS = [
  { name: 'plinth_events_insert', event: 'INSERT', transition: 'NEW' },
  { name: 'plinth_events_update', event: 'UPDATE', transition: 'NEW' },
  { name: 'plinth_events_delete', event: 'DELETE', transition: 'OLD' }
] as const

const MAX_IDENTIFIER = 63

/** The trigger function of `table`: one per table, as its body spells the table's columns; hashed past PostgreSQL's 63 bytes. */
export function eventFunctionName (table: string): string {
  const name = `plinth_events_${table}`
  if (name.length <= MAX_IDENTIFIER) return name
  return `${name.slice(0, MAX_IDENTIFIER - 9)}_${createHash('sha256').update(table).digest('hex').slice(0, 8)}`
}

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/**
 * The function's body: one statement per write statement, however many rows it touched (the
 * transition table `changed` holds them), so a bulk create of 500 rows is one insert into the log.
 */
export function eventFunctionBody ({ table, fields, owner = false, timestamps = true }: EventSource): string {
  const row = resourceJsonText(fields, { owner, timestamps, of: 'changed' })
  return `
BEGIN
  INSERT INTO resource_events (table_name, op, row_id, owner_id, "row")
  SELECT ${literal(table)}, CASE TG_OP WHEN 'INSERT' THEN 'created' WHEN 'UPDATE' THEN 'updated' ELSE 'deleted' END,
    changed.id, ${owner ? 'changed.owner_id' : 'NULL'}, ${row}
  FROM changed ORDER BY changed.id;
  IF FOUND THEN PERFORM pg_notify(${literal(EVENTS_CHANNEL)}, ''); END IF;
  RETURN NULL;
END`
}

interface TriggerState { exists: boolean, body: string | null, triggers: number }

async function stateOf (db: Database, table: string): Promise<TriggerState> {
  const [state] = rowsOf<TriggerState>(await db.execute(sql`
    select to_regclass(quote_ident(${table})) is not null as exists,
      (select p.prosrc from pg_proc p where p.proname = ${eventFunctionName(table)} and p.pronamespace = current_schema()::regnamespace) as body,
      (select count(*)::int from pg_trigger g where g.tgrelid = to_regclass(quote_ident(${table}))
        and g.tgname in (${sql.join(TRIGGERS.map(({ name }) => sql`${name}`), sql`, `)})) as triggers`))
  return state!
}

function installStatements (source: EventSource): string[] {
  const fn = ident(eventFunctionName(source.table))
  return [
    `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $plinth$${eventFunctionBody(source)}$plinth$`,
    ...TRIGGERS.map(({ name, event, transition }) => `CREATE OR REPLACE TRIGGER ${ident(name)} AFTER ${event} ON ${ident(source.table)} ` +
      `REFERENCING ${transition} TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`)
  ]
}

function removeStatements (table: string, state: TriggerState): string[] {
  return [
    ...(state.exists ? TRIGGERS.map(({ name }) => `DROP TRIGGER IF EXISTS ${ident(name)} ON ${ident(table)}`) : []),
    `DROP FUNCTION IF EXISTS ${ident(eventFunctionName(table))}()`
  ]
}

/** The statements that take the table's triggers where `on` wants them; none when they are there already (most boots). */
function plan (source: EventSource, on: boolean, state: TriggerState): string[] {
  if (on) {
    const current = state.exists && state.body === eventFunctionBody(source) && state.triggers === TRIGGERS.length
    return current || !state.exists ? [] : installStatements(source)
  }
  return state.body === null && state.triggers === 0 ? [] : removeStatements(source.table, state)
}

/**
 * Logs every write to the table when `on` (made again when its fields change, so the logged rows
 * follow them), or stops logging; under the schema lock, like the table's own DDL. A table that
 * does not exist (yet) is left alone.
 */
export async function syncEventTrigger (db: Database, source: EventSource, on: boolean): Promise<void> {
  // Read first, without the lock: starting processes mostly find the work done.
  if (plan(source, on, await stateOf(db, source.table)).length === 0) return
  await db.transaction(async (tx) => {
    await tx.execute(sql.raw(`select pg_advisory_xact_lock(${SCHEMA_LOCK})`))
    for (const statement of plan(source, on, await stateOf(tx, source.table))) await tx.execute(sql.raw(statement))
  })
}
