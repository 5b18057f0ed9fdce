import { Type, type Static, type TObject } from '@sinclair/typebox'
import { Value, ValueErrorType } from '@sinclair/typebox/value'
import type { FastifyError } from 'fastify'
import type { Guard } from './types.js'
import { PG_INT_MAX } from '../schemas/common.js'

/** A plugin's boot error, made with @fastify/error: `new Invalid('maxLimit must be ...')`. */
export type InvalidOptions = new (message: string) => FastifyError

/** A value as a boot error shows it. */
export const shown = (value: unknown) =>
  typeof value === 'function' ? 'a function' : typeof value === 'number' ? String(value) : JSON.stringify(value) ?? String(value)

/**
 * A plugin's options with their defaults, checked against its TypeBox schema. The first bad one
 * fails the boot with the option, its rule (the schema's `errorMessage`, else TypeBox's) and the value.
 */
export function readOptions<T extends TObject> (schema: T, opts: object, Invalid: InvalidOptions): Static<T> {
  // Only the schema's own keys: Fastify adds `prefix`, and a guard is a function TypeBox cannot clone.
  const given = Object.keys(schema.properties).filter((key) => key in opts).map((key) => [key, opts[key as keyof typeof opts]])
  const options = Value.Default(schema, Object.fromEntries(given)) as Static<T>
  const error = Value.Errors(schema, options).First()
  if (error === undefined) return options
  const option = error.path.slice(1).replaceAll('/', '.')
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    const parent = option.slice(0, option.lastIndexOf('.'))
    throw new Invalid(`${option} is unknown: ${parent} takes ${Object.keys((error.schema as TObject).properties).join(', ')}`)
  }
  const rule = (error.schema as { errorMessage?: string }).errorMessage ?? error.message.toLowerCase()
  throw new Invalid(`${option} ${rule} (got ${shown(error.value)})`)
}

/** The page limits of a plugin with a list; `maxLimit` comes first so that a bad one is named first. */
export const PageLimitOptions = (maxLimit: number) => ({
  /** Larger requested page sizes are reduced to this. */
  maxLimit: Type.Integer({ minimum: 1, maximum: PG_INT_MAX, default: maxLimit, errorMessage: `must be an integer from 1 to ${PG_INT_MAX}` }),
  /** Page size when the request names none; at most maxLimit. */
  defaultLimit: Type.Optional(Type.Integer({ minimum: 1, maximum: PG_INT_MAX, errorMessage: 'must be an integer from 1 to maxLimit' }))
})

/** The page size used when the request names none: `defaultLimit`, else `fallback`, never above `maxLimit`. */
export function pageLimits ({ defaultLimit, maxLimit }: { defaultLimit?: number, maxLimit: number }, fallback: number, Invalid: InvalidOptions) {
  if (defaultLimit !== undefined && defaultLimit > maxLimit) {
    throw new Invalid(`defaultLimit must be an integer from 1 to maxLimit (${maxLimit}) (got ${defaultLimit})`)
  }
  return { defaultLimit: defaultLimit ?? Math.min(fallback, maxLimit), maxLimit }
}

/** Hooks that guard the reads (list, get) and the writes (create, update, replace, delete). */
export interface Guards {
  read?: Guard
  write?: Guard
}

const REGISTER_AUTH = 'app.authenticate and app.requireScopes exist once authPlugin is registered: register it, awaited, before this plugin'

/**
 * `guard` (every route) or `guards` ({ read, write }). A guard named but not a function, such as
 * app.authenticate read before authPlugin exists, fails the boot: it is missing, not open.
 */
export function readGuards (opts: { guard?: unknown, guards?: unknown }, Invalid: InvalidOptions, prefix = ''): Guards {
  const fail = (option: string, value: unknown) =>
    new Invalid(`${prefix}${option} must be a function such as app.authenticate (got ${shown(value)}); ${REGISTER_AUTH}`)
  if ('guard' in opts) {
    if ('guards' in opts) throw new Invalid(`${prefix}give guard (every route) or guards ({ read, write }), not both`)
    if (typeof opts.guard !== 'function') throw fail('guard', opts.guard)
    return { read: opts.guard as Guard, write: opts.guard as Guard }
  }
  if (!('guards' in opts)) return {}
  const { guards } = opts
  if (typeof guards !== 'object' || guards === null) throw new Invalid(`${prefix}guards must be an object such as { write: app.authenticate } (got ${shown(guards)})`)
  for (const [key, guard] of Object.entries(guards)) {
    if (key !== 'read' && key !== 'write') throw new Invalid(`${prefix}guards.${key} is unknown: guards takes read, write`)
    if (typeof guard !== 'function') throw fail(`guards.${key}`, guard)
  }
  return { ...guards as Guards }
}
