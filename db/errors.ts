import { defineProblems } from '../http/problem-error.js'

/** Every code the data layer throws: the resource tables' and lists' under RESOURCE_, the database's boot errors under PLINTH_. */
export const dbProblems = defineProblems({
  // A resource table that cannot be created or brought up to date without risk to its rows.
  ResourceTableError: { code: 'RESOURCE_TABLE_INVALID', message: '%s' },
  InvalidCursorError: { status: 422, code: 'RESOURCE_INVALID_CURSOR', message: '%s' },
  // A `?q=` the search index cannot serve.
  InvalidSearchError: { status: 422, code: 'RESOURCE_INVALID_SEARCH', message: '%s' },
  // A database URL that cannot be used as written: malformed, or a pglite:// path that is no folder.
  DatabaseUrlError: { code: 'PLINTH_INVALID_DATABASE_URL', message: '%s' },
  // A PGlite folder another process (or another client of this one) has open: two would corrupt it.
  PgliteInUseError: { code: 'PLINTH_PGLITE_IN_USE', message: '%s is in use by process %s: stop the server, or use PostgreSQL' }
})

export const { ResourceTableError, InvalidCursorError, InvalidSearchError, DatabaseUrlError, PgliteInUseError } = dbProblems

// SQLSTATE classes and driver codes that mean "the database is not there", not "the query is wrong".
const UNAVAILABLE_SQLSTATE = /^(08|53|57P0[1-3])/
const UNAVAILABLE_DRIVER_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE',
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED'
])

/** Drizzle wraps driver errors in `cause`; this walks the chain to the driver's error. */
export function * causes (error: unknown): Generator<{ code?: unknown, severity?: unknown }> {
  let current = error
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    yield current as { code?: unknown }
    current = (current as { cause?: unknown }).cause
  }
}

export function isDatabaseUnavailable (error: unknown): boolean {
  for (const { code } of causes(error)) {
    if (typeof code !== 'string') continue
    if (UNAVAILABLE_DRIVER_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code)) return true
  }
  return false
}

/** A statement the server cancelled (57014): at the statement timeout, the only cancel plinth causes. */
export const isStatementCancelled = (error: unknown): boolean => sqlState(error) === '57014'

/** The SQLSTATE of a server error, e.g. '23505' for a unique violation (both drivers set `severity`). */
export function sqlState (error: unknown): string | undefined {
  for (const cause of causes(error)) {
    if ('severity' in cause && typeof cause.code === 'string') return cause.code
  }
  return undefined
}

/** A value the database cannot take (SQLSTATE class 22, a data exception), but for a sequence's end (2200H): the server's limit. */
export function isRefusedValue (error: unknown): boolean {
  const state = sqlState(error)
  return state !== undefined && state.startsWith('22') && state !== '2200H'
}

export function refusedField (error: unknown): string | undefined {
  for (const cause of causes(error)) {
    if ('field' in cause && typeof cause.field === 'string') return cause.field
  }
  return undefined
}

export type ConstraintKind = 'not_null' | 'foreign_key' | 'unique' | 'check'

// 23001 is a RESTRICT foreign key refusing a delete (23503 is NO ACTION's).
const CONSTRAINT_KINDS: Record<string, ConstraintKind> = { 23001: 'foreign_key', 23502: 'not_null', 23503: 'foreign_key', 23505: 'unique', 23514: 'check' }

/** A write a constraint refused: which kind, and the names PostgreSQL gives with the error (never the values). */
export interface ConstraintViolation {
  kind: ConstraintKind
  constraint?: string
  schema?: string
  table?: string
  column?: string
}

/** The first of these fields that is text: postgres.js names PostgreSQL's fields `table_name`..., PGlite `table`... */
function text (error: Record<string, unknown>, ...names: string[]): string | undefined {
  for (const name of names) if (typeof error[name] === 'string' && error[name] !== '') return error[name]
  return undefined
}

export function constraintViolation (error: unknown): ConstraintViolation | undefined {
  for (const cause of causes(error)) {
    if (!('severity' in cause) || typeof cause.code !== 'string') continue
    const kind = CONSTRAINT_KINDS[cause.code]
    if (kind === undefined) return undefined
    const fields = cause as Record<string, unknown>
    return {
      kind,
      constraint: text(fields, 'constraint_name', 'constraint'),
      schema: text(fields, 'schema_name', 'schema'),
      table: text(fields, 'table_name', 'table'),
      column: text(fields, 'column_name', 'column')
    }
  }
  return undefined
}
