import { Type, type Static, type TInteger, type TObject, type TOptional } from '@sinclair/typebox'
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value'
import type { FastifyError } from 'fastify'
import type { Guard } from './types.js'
import { PG_INT_MAX } from '../schemas/common.js'

/** A plugin's boot error, made with @fastify/error: `new Invalid('maxLimit must be ...')`. */
export type InvalidOptions = new (message: string) => FastifyError

export const shown = (value: unknown) =>
  typeof value === 'function' ? 'a function' : typeof value === 'number' ? String(value) : JSON.stringify(value) ?? String(value)

/** A plugin's options with their defaults; the first bad one fails the boot, naming the option, its rule and the value. */
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
  throw new Invalid(`${option} ${ruleOf(error)} (got ${shown(error.value)})`)
}

/** The schema's `errorMessage`, else TypeBox's; past a maximum the message does not state, that maximum. */
function ruleOf ({ type, schema, message }: ValueError): string {
  const { errorMessage, maximum } = schema as { errorMessage?: string, maximum?: number }
  const over = type === ValueErrorType.IntegerMaximum || type === ValueErrorType.NumberMaximum
  if (over && errorMessage !== undefined && !errorMessage.includes(String(maximum))) return `must be an integer of at most ${maximum}`
  return errorMessage ?? message.toLowerCase()
}

// `maxLimit` first, so a bad one is named first; `fallback` is not a `default`, which would refuse a smaller maxLimit.
export const PageLimitOptions = <Fallback extends number | undefined = undefined> (maxLimit: number, fallback?: Fallback) => ({
  /** Larger requested page sizes are reduced to this. */
  maxLimit: Type.Integer({ minimum: 1, maximum: PG_INT_MAX, default: maxLimit, errorMessage: `must be an integer from 1 to ${PG_INT_MAX}` }),
  /** Page size when the request names none; at most maxLimit. */
  defaultLimit: Type.Optional(Type.Integer({ minimum: 1, maximum: PG_INT_MAX, fallback, errorMessage: 'must be an integer from 1 to maxLimit' })) as DefaultLimit<Fallback>
})

export interface DefaultLimit<Fallback> extends TOptional<TInteger> {
  fallback: Fallback
}

/** The page size used when the request names none: `defaultLimit`, else `fallback`, never above `maxLimit`. */
export function pageLimits ({ defaultLimit, maxLimit }: { defaultLimit?: number, maxLimit: number }, fallback: number, Invalid: InvalidOptions) {
  if (defaultLimit !== undefined && defaultLimit > maxLimit) {
    throw new Invalid(`defaultLimit must be an integer from 1 to maxLimit (${maxLimit}) (got ${defaultLimit})`)
  }
  return { defaultLimit: defaultLimit ?? Math.min(fallback, maxLimit), maxLimit }
}

export interface Guards {
  read?: Guard
  write?: Guard
}

const REGISTER_AUTH = 'app.authenticate and app.requireScopes exist once authPlugin is registered: register it, awaited, before this plugin'

/** `guard` (every route) or `guards` ({ read, write }); a guard that is not a function fails the boot: it is missing, not open. */
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
