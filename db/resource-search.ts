import { sql, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import type { Database } from './client.js'
import { InvalidSearchError } from './errors.js'
import { rowsOf } from './raw-rows.js'
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

/** The most words a `?q=` may have: each is a condition on every row the index finds. */
export const MAX_SEARCH_WORDS = 16

/** A last word shorter than this matches whole words only: a prefix of one or two letters would match most of a table. */
export const MIN_PREFIX_LENGTH = 3

/** Why a `?q=` cannot be searched for, in words for its 422; undefined when it can. */
export function searchTextRefusal (text: string): string | undefined {
  // PostgreSQL's text cannot hold NUL.
  if (text.includes('\u0000')) return 'must not contain NUL (\\u0000)'
  if (!/\S/u.test(text)) return 'must have something to search for, not only spaces'
  if ([...text].length > MAX_SEARCH_LENGTH) return `must be at most ${MAX_SEARCH_LENGTH} characters`
  if ((text.match(/[\p{L}\p{N}]+/gu)?.length ?? 0) > MAX_SEARCH_WORDS) return `must have at most ${MAX_SEARCH_WORDS} words`
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
  // Inside an open quote the word belongs to a phrase; after a lone - it is excluded. With an `or` anywhere, the prefix,
  // added to the whole query, would also be required of the alternatives before it.
  if ((before.match(/"/g)?.length ?? 0) % 2 === 1 || /(^|\s)-+\s*$/u.test(before) || /(^|\s)or(\s|$)/iu.test(before)) return { words: text }
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

/** The words whose occurrences a rank counts: the text without `or` and the excluded words (`-word`, `-"a phrase"`). */
export const countedWords = ({ words }: SearchTerms) =>
  words.replace(/(^|\s)-+\s*("[^"]*"?|\S*)/gu, '$1').replace(/(^|\s)or(?=\s|$)/giu, '$1')

/** The value of the counted words' placeholder, bound beside the query's. */
export const COUNTED_WORDS = 'q_counted'

// A rank is a real: its tier (3 for the first field down to 0 for the fourth and later) above up to TIER - 1 occurrences.
const TIER = 1 << 20

/**
 * The rank `?q=` sorts by, as the docs give it: first the earliest search field in which a word of the query occurs, then how
 * many times its words (and the prefix's completions) occur in all the search fields. Exact in a real, up to 2^24.
 */
export function searchRank (document: string, terms: SearchTerms, bind: (name: string, value: unknown) => unknown): SQL<number> {
  const words = sql`l.lexeme = any(tsvector_to_array(to_tsvector(${sql.raw(`'${SEARCH_CONFIG}'::regconfig`)}, ${bind(COUNTED_WORDS, countedWords(terms))})))`
  const prefix = terms.prefix === undefined ? sql`` : sql` or starts_with(l.lexeme, lower(left(${bind('q_prefix', `${terms.prefix}:*`)}, -2)))`
  // Per lexeme of the document: the best weight of its positions, and how many positions it has.
  const tier = sql.raw("case when 'A' = any(l.weights) then 3 when 'B' = any(l.weights) then 2 when 'C' = any(l.weights) then 1 else 0 end")
  return sql`(select coalesce(max(${tier}) * ${sql.raw(String(TIER))} + least(sum(cardinality(l.weights)), ${sql.raw(String(TIER - 1))}), 0)::real
    from unnest(${sql.raw(document)}) as l(lexeme, positions, weights) where ${words}${prefix})`.mapWith(Number)
}

/** The most matches a ranked search ranks: the newest ones. Ranking reads every match's text, so a common word would cost seconds. */
export const RANKED_MATCHES = 1000

/**
 * The newest RANKED_MATCHES rows that match, found without ranking any, by the id index or the search index, whichever the
 * planner finds cheaper. `matching` names the table unaliased. An `in` list, not `id >=`, so the planner expects a thousand rows.
 */
export const rankedWindow = (table: PgTable, id: PgColumn, matching: SQL): SQL =>
  sql`${id} in (select ${id} from ${table} where ${matching} order by ${id} desc limit ${sql.raw(String(RANKED_MATCHES))})`

/** Why a query that matches a row without any of its words is refused: the index finds rows by their words. */
export const UNBOUNDED_SEARCH = 'must have a word to find in every alternative: excluding words (-word) alone would read every row; ' +
  'add a word to look for, such as plinth -marble'

/**
 * A query that matches a row with none of its words (only `-word`, or `-word` as an alternative) is refused with
 * InvalidSearchError: the index cannot find such rows, and every row in scope would be read.
 * `read` in a transaction whose statements are planned for their values each time: PostgreSQL's generic plan of a search,
 * made after a few rare words, reads every match of a common one. A search sorted by a column also goes without plain index
 * scans: walking the column's index in order until enough rows match reads the whole table for a rare word.
 */
export const withCustomPlans = <T>(db: Database, sorted: boolean, query: SQL, read: (tx: Database) => Promise<T>): Promise<T> =>
  db.transaction(async (tx) => {
    const [settings] = rowsOf<{ unbounded: boolean }>(await tx.execute(sql`select set_config('plan_cache_mode', 'force_custom_plan', true),
      set_config('enable_indexscan', ${sorted ? 'off' : 'on'}, true), ''::tsvector @@ ${query} as unbounded`))
    if (settings?.unbounded === true) throw new InvalidSearchError(UNBOUNDED_SEARCH)
    return read(tx as unknown as Database)
  })
