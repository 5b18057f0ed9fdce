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
