import { sql, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import type { Database } from './client.js'
import { ident } from './resource-table.js'

/** The text search configuration of `?q=`: no stemming or stop words, so it reads any language the same way, on PGlite too. */
export const SEARCH_CONFIG = 'simple'

/**
 * The document `?q=` matches, as SQL text: the search fields' words, weighted A, B, C, D in the order given.
 * The GIN index is on this very expression, so a query must use it unchanged to be served by it.
 */
export function searchDocument (fields: readonly string[], of?: string): string {
  const weights = ['A', 'B', 'C', 'D']
  return fields.map((field, i) => {
    const column = of === undefined ? ident(field) : `${of}.${ident(field)}`
    return `setweight(to_tsvector('${SEARCH_CONFIG}'::regconfig, coalesce(${column}::text, '')), '${weights[Math.min(i, 3)]}')`
  }).join(' || ')
}

/** The index name of a table's search document. */
export const searchIndexName = (table: string) => `${table}_search_idx`

/** The longest `?q=`, in characters: a search box's text, not a document. */
export const MAX_SEARCH_LENGTH = 256

/** A last word shorter than this matches whole words only: a prefix of one or two letters would match most of a table. */
export const MIN_PREFIX_LENGTH = 3

/** Why a `?q=` cannot be searched for, in words for its 422; undefined when it can. */
export function searchTextRefusal (text: string): string | undefined {
  // PostgreSQL's text cannot hold NUL.
  if (text.includes('\u0000')) return 'must not contain NUL (\\u0000)'
  if (!/\S/u.test(text)) return 'must have something to search for, not only spaces'
  if ([...text].length > MAX_SEARCH_LENGTH) return `must be at most ${MAX_SEARCH_LENGTH} characters`
  return undefined
}

/** A search box's text: websearch syntax (`"a phrase"`, `-not`, `or`), and the word still being typed, matched as a prefix. */
export interface SearchTerms {
  words: string
  prefix?: string
}

// A plain word at the very end: a trailing space means the user finished it.
const LAST_WORD = /(^|\s)([\p{L}\p{N}]+)$/u

export function searchTerms (text: string): SearchTerms {
  const last = LAST_WORD.exec(text)
  if (last === null || [...last[2]!].length < MIN_PREFIX_LENGTH) return { words: text }
  const before = text.slice(0, last.index + last[1]!.length)
  // Inside an open quote the word belongs to a phrase; after `or` it is an alternative, which a prefix would turn into a requirement.
  if ((before.match(/"/g)?.length ?? 0) % 2 === 1 || /(^|\s)or\s+$/iu.test(before)) return { words: text }
  return { words: before, prefix: last[2]! }
}

/** The statement shape of the terms: with or without a prefix. */
export const searchShape = (terms: SearchTerms) => terms.prefix === undefined ? 'q' : 'q*'

/** The tsquery of the terms; `bind` gives each value its placeholder or the value itself. */
export function searchQuery (terms: SearchTerms, bind: (name: string, value: unknown) => unknown): SQL {
  const words = sql`websearch_to_tsquery(${sql.raw(`'${SEARCH_CONFIG}'::regconfig`)}, ${bind('q', terms.words)})`
  if (terms.prefix === undefined) return words
  // Letters and digits only, so `:*` is the only syntax to_tsquery sees.
  return sql`(${words} && to_tsquery(${sql.raw(`'${SEARCH_CONFIG}'::regconfig`)}, ${bind('q_prefix', `${terms.prefix}:*`)}))`
}

/** The rows whose document matches: the very expression of the GIN index, so the planner can use it. */
export const searchMatch = (document: string, query: SQL): SQL => sql`(${sql.raw(document)}) @@ ${query}`

/**
 * The rank `?q=` sorts by: a real, with the weights A (1.0), B (0.4), C (0.2), D (0.1) of the fields. Cover density rather
 * than ts_rank, which ranks every row of a query with `-word` the same.
 */
export const searchRank = (document: string, query: SQL): SQL<number> => sql`ts_rank_cd(${sql.raw(document)}, ${query})`.mapWith(Number)

/** The most matches a ranked search ranks: the newest ones. Ranking reads every match's text, so a common word would cost seconds. */
export const RANKED_MATCHES = 1000

/**
 * The newest RANKED_MATCHES rows that match, found without ranking any, by the id index or the search index, whichever the
 * planner finds cheaper. `matching` names the table unaliased. An `in` list, not `id >=`, so the planner expects a thousand rows.
 */
export const rankedWindow = (table: PgTable, id: PgColumn, matching: SQL): SQL =>
  sql`${id} in (select ${id} from ${table} where ${matching} order by ${id} desc limit ${sql.raw(String(RANKED_MATCHES))})`

/**
 * `read` in a transaction whose statements are planned for their values each time: PostgreSQL's generic plan of a search,
 * made after a few rare words, reads every match of a common one. A search sorted by a column also goes without plain index
 * scans: walking the column's index in order until enough rows match reads the whole table for a rare word.
 */
export const withCustomPlans = <T>(db: Database, sorted: boolean, read: (tx: Database) => Promise<T>): Promise<T> =>
  db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('plan_cache_mode', 'force_custom_plan', true), set_config('enable_indexscan', ${sorted ? 'off' : 'on'}, true)`)
    return read(tx as unknown as Database)
  })
