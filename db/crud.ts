import { and, asc, count, eq, getTableColumns, getTableName, gt, is, sql, SQL, type InferInsertModel, type InferSelectModel } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import { batched } from '../concurrency/batch.js'
import type { Database } from './client.js'
import { serverBusyIn } from '../concurrency/busy.js'
import { prepareAs, statementCache, type Runnable } from './driver.js'
import { isDatabaseUnavailable, isRefusedValue } from './errors.js'
import { rowsOf } from './raw-rows.js'

export type TableWithId = PgTable & { id: PgColumn }

/** Prepared statements per table and kind, at most: shapes beyond run unprepared. */
const MAX_SHAPES = 64

export interface Page {
  offset: number
  limit: number
}

/** A row as it is now, with its version: the transaction that last wrote it (`xmin`), for ETags. */
export type Versioned<Row> = Row & { version: string }

export const versionOf = (table: PgTable) => sql<string>`${table}.xmin::text`

export interface InTransaction { tx?: Database }

/** A read in `tx` when given; `forUpdate` locks the row until the transaction ends (in `tx` only). */
export interface ReadOptions extends InTransaction { forUpdate?: boolean }

/** A write in `tx` when given; with `ifVersions`, only while the row's version is one of them. */
export interface WriteOptions extends InTransaction { ifVersions?: string[] }

export interface Repository<Row, Insert> {
  get (id: number, options?: ReadOptions): Promise<Versioned<Row> | null>
  list (page: Page, options?: InTransaction): Promise<Row[]>
  listAfter (afterId: number, limit: number, options?: InTransaction): Promise<Row[]>
  count (options?: InTransaction): Promise<number>
  create (values: Insert, options?: InTransaction): Promise<Versioned<Row>>
  /** Every row or none, in the given order; in `tx` when given, else in one transaction of its own. */
  createMany (values: Insert[], options?: InTransaction): Promise<Array<Versioned<Row>>>
  /** Null when no row matched: with `ifVersions`, also when the row's version has changed. */
  update (id: number, values: Partial<Insert>, options?: WriteOptions): Promise<Versioned<Row> | null>
  delete (id: number, options?: WriteOptions): Promise<boolean>
}

export interface RepositoryOptions {
  selection?: Selection
  /** Sends the updates of one event-loop turn as one statement: for a table whose rows many requests write at once. */
  batchUpdates?: boolean
}

/** Drops keys whose value is `undefined`, so an UPDATE never resets a field the client did not send. */
export function definedOnly<T extends object> (values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>
}

// Ids go as text cast here, opaque to the planner: else PostgreSQL plans each array length anew instead of keeping a generic plan.
const idArray = (name: string) => sql`(${sql.placeholder(name)}::text)::int[]`
const idList = (ids: readonly number[]) => `{${ids.join(',')}}`

/** Each value as JSON on its own, so one JSON cannot write (a cycle, too deep) fails alone: its error in its place. */
function jsonEach (values: readonly unknown[]): Array<string | Error> {
  return values.map((value) => {
    try {
      return JSON.stringify(value)
    } catch (err) {
      return err as Error
    }
  })
}

const isText = (text: string | Error): text is string => typeof text === 'string'

function inOrder<A> (texts: Array<string | Error>, answers: A[]): Array<A | Error> {
  let next = 0
  return texts.map((text) => isText(text) ? answers[next++]! : text)
}

// A refused value or a non-SQL error fails the whole batch, so its rows are retried alone; not when the database is down or full.
const ownAnswers = (error: unknown) => !isDatabaseUnavailable(error) && serverBusyIn(error) === undefined

export type Selection = { id: PgColumn } & Record<string, PgColumn | SQL>

/** Prepared reads; outside a transaction, `get`, `create` and (with `batchUpdates`) `update` batch per event-loop turn. */
export function createRepository<T extends TableWithId, Row extends object = InferSelectModel<T>> (
  db: Database, table: T, { selection, batchUpdates = false }: RepositoryOptions = {}
): Repository<Row, InferInsertModel<T>> {
  const name = getTableName(table)
  const idOf = (row: Row) => (row as { id: number }).id
  const rowColumns = selection ?? getTableColumns(table) as Selection
  const fields = { ...rowColumns, version: versionOf(table) }
  const select = (exec: Database) => exec.select(fields)
  const selectRows = (exec: Database) => exec.select(rowColumns)
  const returning = <Q extends { returning (fields?: Selection): unknown }>(query: Q) => query.returning(fields) as ReturnType<Q['returning']>
  const isVersion = sql`${versionOf(table)} = any(${sql.placeholder('versions')}::text[])`

  const selectById = (exec: Database) =>
    select(exec).from(table as PgTable).where(eq(table.id, sql.placeholder('id'))).limit(1)
  const selectPage = (exec: Database) =>
    selectRows(exec).from(table as PgTable).orderBy(asc(table.id))
      .limit(sql.placeholder('limit')).offset(sql.placeholder('offset'))
  const selectAfter = (exec: Database) =>
    selectRows(exec).from(table as PgTable).where(gt(table.id, sql.placeholder('afterId')))
      .orderBy(asc(table.id)).limit(sql.placeholder('limit'))
  const selectCount = (exec: Database) => exec.select({ total: count() }).from(table as PgTable)
  const selectByIds = (exec: Database) =>
    select(exec).from(table as PgTable).where(sql`${table.id} = any(${idArray('ids')})`)

  const statements = statementCache(name, MAX_SHAPES)
  const getMany = statements.one('get_many', (as) => selectByIds(db).prepare(as))
  const list = statements.one('list', (as) => selectPage(db).prepare(as))
  const listAfter = statements.one('list_after', (as) => selectAfter(db).prepare(as))
  const countAll = statements.one('count', (as) => selectCount(db).prepare(as))

  const tableColumns = getTableColumns(table)

  type Found = Versioned<Row>
  const lookups = batched<number, Found | null>(async (ids) => {
    const rows = await getMany.execute({ ids: idList(ids) }) as Found[]
    const byId = new Map(rows.map((row) => [idOf(row), row]))
    return ids.map((id) => byId.get(id) ?? null)
  })

  const insert = async (rows: Array<InferInsertModel<T>>, exec: Database) =>
    await returning(exec.insert(table).values(rows)) as Found[]
  const byId = (rows: Found[]) => rows.sort((a, b) => idOf(a) - idOf(b))

  // The builder prepares the statement and maps its rows as it does its own; only the text is ours.
  const prepareText = (text: SQL, as: string): Runnable => prepareAs(returning(db.insert(table).values({} as never)), text, as)
  const returnedList = sql.join(Object.values(fields).map((field) => is(field, SQL) ? field : sql.identifier(field.name)), sql`, `)

  // A batch goes as one JSON parameter through one statement per set of columns; a column left out takes its default.
  function insertText (keys: string[]): SQL {
    const columns = sql.join(keys.map((key) => sql.identifier(tableColumns[key]!.name)), sql`, `)
    return sql`insert into ${table} (${columns}) select ${columns}
      from jsonb_populate_recordset(null::${table}, ${sql.placeholder('rows')}::jsonb) returning ${returnedList}`
  }
  const columnEntries = Object.entries(tableColumns)
  // No column sent, a default computed in JavaScript, or a key that is not the column's name: the builder's VALUES.
  const renamed = columnEntries.some(([key, column]) => key !== column.name)
  const computedDefaults = columnEntries.filter(([, column]) => column.defaultFn !== undefined).map(([key]) => key)
  const columnKeys = (row: object) => Object.keys(row).filter((key) => key in tableColumns && (row as Record<string, unknown>)[key] !== undefined)
  async function insertBatch (rows: Array<InferInsertModel<T>>, texts: string[]): Promise<Found[]> {
    const keys = columnKeys(rows[0]!).sort()
    const shape = keys.join(',')
    if (rows.some((row) => columnKeys(row).sort().join(',') !== shape)) return insert(rows, db)
    if (keys.length === 0 || renamed || computedDefaults.some((key) => !keys.includes(key))) return insert(rows, db)
    const statement = statements.shaped('insert', shape, (as) => prepareText(insertText(keys), as))
    if (!statement) return insert(rows, db)
    return await statement.execute({ rows: `[${texts.join(',')}]` }) as Found[]
  }
  // A bound value per column per row in VALUES: a chunk stays well under PostgreSQL's 65535 parameters.
  const valuesChunk = (keys: string[]) => Math.max(1, Math.floor(30_000 / Math.max(1, keys.length)))
  /** Rows of one set of columns, in order: one jsonb_populate_recordset statement when the shape allows it (in `exec`, unprepared). */
  async function insertRun (rows: Array<InferInsertModel<T>>, keys: string[], exec: Database): Promise<Found[]> {
    if (keys.length > 0 && !renamed && !computedDefaults.some((key) => !keys.includes(key)) && !keys.includes('id')) {
      const builder = Object.assign(returning(exec.insert(table).values({} as never)), { getSQL: () => insertText(keys) })
      return byId(await builder.execute({ rows: JSON.stringify(rows) }) as Found[])
    }
    const stored: Found[] = []
    for (let at = 0; at < rows.length; at += valuesChunk(keys)) stored.push(...byId(await insert(rows.slice(at, at + valuesChunk(keys)), exec)))
    return stored
  }
  /** Consecutive rows of one shape go in one statement, so ids ascend in the given order. */
  async function insertAll (rows: Array<InferInsertModel<T>>, exec: Database): Promise<Found[]> {
    const stored: Found[] = []
    for (let start = 0; start < rows.length;) {
      const keys = columnKeys(rows[start]!).sort()
      const shape = keys.join(',')
      let end = start + 1
      while (end < rows.length && columnKeys(rows[end]!).sort().join(',') === shape) end++
      stored.push(...await insertRun(rows.slice(start, end), keys, exec))
      start = end
    }
    return stored
  }

  // One value through the table's row type, as a batch sends it: whether it alone raises a data exception.
  const refuses = (key: string, value: unknown) => Promise.resolve()
    .then(() => db.execute(sql`select jsonb_populate_record(null::${table}, ${JSON.stringify({ [tableColumns[key]!.name]: value })}::jsonb) is null`))
    .then(() => false, isRefusedValue)
  async function withField (error: Error, values: object): Promise<Error> {
    if (!isRefusedValue(error)) return error
    for (const key of columnKeys(values)) {
      if (await refuses(key, (values as Record<string, unknown>)[key])) return Object.assign(error, { field: key })
    }
    return error
  }
  const inserts = batched<InferInsertModel<T>, Found>(async (batch) => {
    const texts = jsonEach(batch)
    const rows = batch.filter((_, i) => typeof texts[i] === 'string')
    let stored: Array<Found | Error> = []
    try {
      // The function scan feeds the insert in the array's order, so ascending ids are the batch's order.
      if (rows.length > 0) stored = (await insertBatch(rows, texts.filter(isText))).sort((a, b) => idOf(a) - idOf(b))
    } catch (err) {
      if (!ownAnswers(err)) throw err
      stored = await Promise.all(rows.map((values) => insert([values], db).then(([row]) => row!, (e: Error) => withField(e, values))))
    }
    return inOrder(texts, stored)
  })

  // A turn's updates go as one JSON parameter through one statement, each row under its own If-Match versions, found by primary key.
  const updatable = columnEntries.filter(([, column]) => column !== table.id)
  const updatedAt = updatable.filter(([, column]) => column.onUpdateFn !== undefined)
  const batchesUpdates = batchUpdates && !renamed && updatedAt.every(([, column]) => is(column.onUpdateFn!(), SQL))
  const quoted = (key: string) => sql.raw(`'${key.replaceAll("'", "''")}'`)
  const changes = sql`jsonb_array_elements(${sql.placeholder('rows')}::jsonb) as e`
  const changedId = sql`(e->>'i')::${sql.raw(table.id.getSQLType())}`
  const updateText = sql`update ${table} set ${sql.join(updatable.map(([key, column]) => {
    const kept = column.onUpdateFn ? column.onUpdateFn() as SQL : sql`${table}.${sql.identifier(column.name)}`
    return sql`${sql.identifier(column.name)} = case when u.b ? ${quoted(key)} then (u.r).${sql.identifier(column.name)} else ${kept} end`
  }), sql`, `)}
    from (select ${changedId} as i, e->'v' as v, e->'b' as b, jsonb_populate_record(null::${table}, e->'b') as r from ${changes}) as u
    where ${table.id} = any(array(select ${changedId} from ${changes}))
      and ${table.id} = u.i and (u.v is null or ${versionOf(table)} in (select jsonb_array_elements_text(u.v)))
    returning ${returnedList}`

  interface Change { id: number, change: Record<string, unknown>, versions?: string[] }
  async function updateAlone ({ id, change, versions }: Change, tx?: Database): Promise<Found | null> {
    const columns = Object.keys(change).filter((key) => key in tableColumns).sort()
    // A null is written as NULL, not handed to the column's encoder: one statement per null pattern.
    const build = (exec: Database) => returning(exec.update(table)
      .set(Object.fromEntries(columns.map((column) =>
        [column, change[column] === null ? sql`null` : sql.placeholder(`set_${column}`)])) as never)
      .where(versions ? and(eq(table.id, sql.placeholder('id')), isVersion) : eq(table.id, sql.placeholder('id'))))
    const shape = columns.map((column) => change[column] === null ? `${column}=null` : column).join(',') + (versions ? ':versioned' : '')
    const statement = tx ? build(tx) : statements.shaped('update', shape, (as) => build(db).prepare(as)) ?? build(db)
    const params: Record<string, unknown> = { id, versions }
    for (const column of columns) if (change[column] !== null) params[`set_${column}`] = change[column]
    return ((await statement.execute(params)) as Found[])[0] ?? null
  }
  async function updateRound (round: Change[]): Promise<Array<Found | null | Error>> {
    const updateStatement = statements.one('update_batch', (as) => prepareText(updateText, as))
    const texts = jsonEach(round.map(({ id, change, versions }) => ({ i: id, v: versions, b: change })))
    const sent = round.filter((_, i) => typeof texts[i] === 'string')
    let rows: Found[] = []
    try {
      if (sent.length > 0) rows = await updateStatement.execute({ rows: `[${texts.filter(isText).join(',')}]` }) as Found[]
    } catch (err) {
      if (!ownAnswers(err)) throw err
      return inOrder(texts, await Promise.all(sent.map((change) => updateAlone(change).catch((e: Error) => withField(e, change.change)))))
    }
    const byId = new Map(rows.map((row) => [idOf(row), row]))
    return inOrder(texts, sent.map(({ id }) => byId.get(id) ?? null))
  }
  const updateBatches = batched<Change, Found | null>(async (batch) => {
    const results: Array<Found | null | Error> = []
    // A row named twice in one UPDATE is written once: a row's later changes go in later rounds, in order.
    let pending = batch.map((change, index) => ({ change, index }))
    while (pending.length > 0) {
      const ids = new Set<number>()
      const round = pending.filter(({ change }) => !ids.has(change.id) && ids.add(change.id))
      const answers = await updateRound(round.map(({ change }) => change))
      round.forEach(({ index }, i) => { results[index] = answers[i]! })
      pending = pending.filter(({ index }) => !(index in results))
    }
    return results
  })

  return {
    async get (id, { tx, forUpdate = false } = {}) {
      if (!tx) return lookups.load(id)
      const rows = await (forUpdate ? selectById(tx).for('update') : selectById(tx)).execute({ id })
      return (rows[0] as Found | undefined) ?? null
    },
    async list ({ offset, limit }, { tx } = {}) {
      const rows = await (tx ? selectPage(tx).execute({ offset, limit }) : list.execute({ offset, limit }))
      return rows as Row[]
    },
    async listAfter (afterId, limit, { tx } = {}) {
      const rows = await (tx ? selectAfter(tx).execute({ afterId, limit }) : listAfter.execute({ afterId, limit }))
      return rows as Row[]
    },
    async count ({ tx } = {}) {
      const rows = await (tx ? selectCount(tx).execute() : countAll.execute())
      return rows[0]?.total ?? 0
    },
    async create (values, { tx } = {}) {
      // A caller's own id would break the id order the batch relies on: such rows go alone.
      if (!tx && !('id' in values)) return inserts.load(values)
      return (await insert([values], tx ?? db))[0]!
    },
    async createMany (values, { tx } = {}) {
      if (values.length === 0) return []
      return tx ? insertAll(values, tx) : db.transaction((own) => insertAll(values, own))
    },
    async update (id, values, { tx, ifVersions: versions } = {}) {
      const change = definedOnly(values) as Record<string, unknown>
      const columns = Object.keys(change).filter((key) => key in tableColumns).sort()
      if (columns.length === 0) {
        const row = await this.get(id, { tx })
        return row && versions && !versions.includes(row.version) ? null : row
      }
      if (!tx && batchesUpdates) return updateBatches.load({ id, change, versions })
      return updateAlone({ id, change, versions }, tx)
    },
    async delete (id, { tx, ifVersions: versions } = {}) {
      const rows = await (tx ?? db).delete(table)
        .where(versions ? and(eq(table.id, id), sql`${versionOf(table)} = any(${sql.param(versions)}::text[])`) : eq(table.id, id))
        .returning({ id: table.id })
      return rows.length > 0
    }
  }
}

export interface PresentOptions {
  /** Only the rows of this owner count. */
  ownerId?: number
  /** In a transaction: the rows found cannot be deleted (nor their id changed) until it ends, as a foreign key's check holds them. */
  lock?: boolean
}

/** Which of `ids` are rows of the table named `table` (resource tables: an `id`, and an `owner_id` in owner mode). */
export async function presentIds (exec: Database, table: string, ids: readonly number[], { ownerId, lock = false }: PresentOptions = {}): Promise<Set<number>> {
  if (ids.length === 0) return new Set()
  const owned = ownerId === undefined ? sql`` : sql` and owner_id = ${ownerId}`
  const result = await exec.execute(sql`select id from ${sql.identifier(table)} where id = any(${idList([...new Set(ids)])}::text::int[])${owned}${lock ? sql` for key share` : sql``}`)
  return new Set(rowsOf<{ id: number | string }>(result).map((row) => Number(row.id)))
}

/** The foreign key on `table (column)` alone, if there is one: its name and the table it references, as a violation of it is answered. */
export async function foreignKeyOf (exec: Database, table: string, column: string): Promise<{ constraint: string, references: string } | undefined> {
  const result = await exec.execute(sql`
    select c.conname as "constraint", f.relname as "references"
    from pg_constraint c
    join pg_class f on f.oid = c.confrelid
    join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
    where c.contype = 'f' and c.conrelid = to_regclass(quote_ident(${table})) and cardinality(c.conkey) = 1 and a.attname = ${column}
    order by c.conname limit 1`)
  return rowsOf<{ constraint: string, references: string }>(result)[0]
}
