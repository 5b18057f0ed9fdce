import { and, asc, count, getTableColumns, gt, sql } from 'drizzle-orm'
import type { Database } from './client.js'
import { coalesced } from '../concurrency/batch.js'
import { createRepository, type InTransaction, type Repository } from './crud.js'
import { statementCache, type Preparable, type StatementCache } from './driver.js'
import { itemCounts, items } from './schema.js'

export type ItemRow = typeof items.$inferSelect
export type NewItem = typeof items.$inferInsert

export interface ItemSlice {
  rows: ItemRow[]
  total: number
}

type PageQuery = { q?: string, offset: number, limit: number }
type AfterQuery = { q?: string, afterId: number, limit: number }

export interface ItemRepository extends Repository<ItemRow, NewItem> {
  /** Exact, from the trigger-maintained counter. */
  count (options?: InTransaction): Promise<number>
  /** The first `limit` (20 by default) items whose name contains `text`. */
  searchByName (text: string, options?: InTransaction & { limit?: number }): Promise<ItemRow[]>
  countByName (text: string, options?: InTransaction): Promise<number>
  page (query: PageQuery, options?: InTransaction): Promise<ItemSlice>
  pageAfter (query: AfterQuery, options?: InTransaction): Promise<ItemSlice>
}

/** A LIKE pattern that finds `text` anywhere in a value, `%`, `_` and `\` matching themselves. */
export function containsPattern (text: string): string {
  return `%${text.replace(/[\\%_]/g, (char) => `\\${char}`)}%`
}

/** Prepared once as `items_<kind>`; built anew inside a transaction. */
function statement<R> (db: Database, statements: StatementCache, kind: string, build: (exec: Database) => Preparable<R>) {
  const prepared = statements.one(kind, (as) => build(db).prepare(as))
  return (values: Record<string, unknown>, tx?: Database) => (tx ? build(tx) : prepared).execute(values)
}

// Served by the trigram index items_name_trgm_idx.
const nameMatches = sql`${items.name} ilike ${sql.placeholder('pattern')} escape '\\'`

export function createItemRepository (db: Database): ItemRepository {
  // Many requests write items at once: their updates share a statement.
  const base = createRepository(db, items, { batchUpdates: true })
  const statements = statementCache('items', 0)
  const total = statement(db, statements, 'total', (exec) =>
    exec.select({ total: sql<number>`coalesce(sum(${itemCounts.n}), 0)::int`.mapWith(Number) }).from(itemCounts))
  const matches = statement(db, statements, 'matches', (exec) =>
    exec.select({ total: count() }).from(items).where(nameMatches))
  const search = statement(db, statements, 'search', (exec) =>
    exec.select().from(items).where(nameMatches).orderBy(asc(items.id))
      .limit(sql.placeholder('limit')).offset(sql.placeholder('offset')))
  const searchAfter = statement(db, statements, 'search_after', (exec) =>
    exec.select().from(items).where(and(nameMatches, gt(items.id, sql.placeholder('afterId'))))
      .orderBy(asc(items.id)).limit(sql.placeholder('limit')))

  // The page and the total in one round trip (the counter sum is an InitPlan); an empty page asks for the total apart.
  const withTotal = { ...getTableColumns(items), total: sql<number>`(select coalesce(sum(${itemCounts.n}), 0)::int from ${itemCounts})`.mapWith(Number) }
  const pageWithTotal = statement(db, statements, 'page_total', (exec) =>
    exec.select(withTotal).from(items).orderBy(asc(items.id))
      .limit(sql.placeholder('limit')).offset(sql.placeholder('offset')))
  const afterWithTotal = statement(db, statements, 'after_total', (exec) =>
    exec.select(withTotal).from(items).where(gt(items.id, sql.placeholder('afterId')))
      .orderBy(asc(items.id)).limit(sql.placeholder('limit')))
  const countAll = async (tx?: Database) => (await total({}, tx))[0]?.total ?? 0
  const countByName = async (text: string, tx?: Database) =>
    (await matches({ pattern: containsPattern(text) }, tx))[0]?.total ?? 0

  const slice = async (found: Array<ItemRow & { total: number }>, tx?: Database): Promise<ItemSlice> => ({
    rows: found.map(({ total, ...row }) => row),
    total: found[0]?.total ?? await countAll(tx)
  })

  async function page ({ q, offset, limit }: PageQuery, tx?: Database): Promise<ItemSlice> {
    if (!q) return slice(await pageWithTotal({ offset, limit }, tx), tx)
    const rows = await search({ pattern: containsPattern(q), offset, limit }, tx)
    // A short page is the last one, so it tells the total: a selective search costs one index scan, not two.
    const last = rows.length < limit && (rows.length > 0 || offset === 0)
    return { rows, total: last ? offset + rows.length : await countByName(q, tx) }
  }
  async function pageAfter ({ q, afterId, limit }: AfterQuery, tx?: Database): Promise<ItemSlice> {
    if (!q) return slice(await afterWithTotal({ afterId, limit }, tx), tx)
    const [rows, all] = await Promise.all([searchAfter({ pattern: containsPattern(q), afterId, limit }, tx), countByName(q, tx)])
    return { rows, total: all }
  }
  // Outside a transaction, the same page asked for by many requests at once is read once.
  const sharedPage = coalesced(page, ({ q, offset, limit }) => `${offset}:${limit}:${q ?? ''}`)
  const sharedPageAfter = coalesced(pageAfter, ({ q, afterId, limit }) => `${afterId}:${limit}:${q ?? ''}`)

  return {
    ...base,
    count: ({ tx } = {}) => countAll(tx),
    countByName: (text, { tx } = {}) => countByName(text, tx),
    searchByName: (text, { limit = 20, tx } = {}) => search({ pattern: containsPattern(text), offset: 0, limit }, tx),
    page: (query, { tx } = {}) => tx ? page(query, tx) : sharedPage(query),
    pageAfter: (query, { tx } = {}) => tx ? pageAfter(query, tx) : sharedPageAfter(query)
  }
}
