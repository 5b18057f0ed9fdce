/** The PgBouncer pool modes the `*-pooled-*` scenarios go through. */
export type PoolMode = 'session' | 'transaction'

export const POOL_MODES: PoolMode[] = ['session', 'transaction']

const VARIABLES: Record<PoolMode, string> = {
  session: 'BENCH_POOLER_SESSION_URL',
  transaction: 'BENCH_POOLER_TRANSACTION_URL'
}

/** The pooler's URL from the environment: a PgBouncer in front of BENCH_DATABASE_URL's database. */
export const poolerUrl = (mode: PoolMode) => process.env[VARIABLES[mode]] || undefined

export const pooledName = (direct: string, mode: PoolMode) => `${direct}-pooled-${mode}`

/** The pool mode a scenario's app server goes through, or undefined for a direct one. */
export function pooledMode (name: string): PoolMode | undefined {
  return POOL_MODES.find((mode) => name.endsWith(`-pooled-${mode}`))
}

/** Whether the scenario can run here: a pooled one needs its pooler's URL. */
export const poolerAvailable = (name: string) => {
  const mode = pooledMode(name)
  return mode === undefined || poolerUrl(mode) !== undefined
}

/** Why some pooled scenarios are left out, or undefined when none is. */
export function poolersMissing (onPostgres: boolean): string | undefined {
  const missing = POOL_MODES.filter((mode) => !onPostgres || poolerUrl(mode) === undefined)
  if (!missing.length) return undefined
  const names = missing.flatMap((mode) => ['item-get', 'item-post'].map((direct) => pooledName(direct, mode)))
  const needs = [...(onPostgres ? [] : ['BENCH_DATABASE_URL=postgres://...']), ...missing.map((mode) => VARIABLES[mode])]
  return `left out: ${names.join(', ')} (they need ${needs.join(' and ')}, PgBouncers in front of that database)`
}
