import { Type, type TOptional, type TSchema } from '@sinclair/typebox'

/** An environment variable: its schema, and the plugin options it sets, `scale` times its value. */
export interface Variable<T extends TSchema = TSchema> {
  schema: T
  options: TSchema[]
  /** Option units per variable unit: 1000 for a variable in seconds and an option in ms. */
  scale: number
}

interface Derivation {
  /** The value's meaning, for the message that refuses a bad one: `NAME: must be <description>`. */
  description?: string
  scale?: number
}

type Annotated = TSchema & { errorMessage?: unknown, fallback?: number, items?: TSchema }

/** The option's schema as a variable takes it: its default and bounds in the variable's unit, its plugin's wording left out. */
function asVariable<T extends TSchema> (option: T, { description, scale = 1 }: Derivation): T {
  const { errorMessage, description: _, fallback, ...schema } = option as Annotated
  if (fallback !== undefined) schema.default = fallback
  if (scale !== 1) {
    if (schema.minimum !== undefined) schema.minimum = Math.ceil(schema.minimum / scale)
    if (schema.maximum !== undefined) schema.maximum = Math.floor(schema.maximum / scale)
    if (schema.default !== undefined) schema.default = schema.default / scale
  }
  if (description === undefined) return schema as T
  return (schema.items ? { ...schema, items: { ...asVariable(schema.items, {}), description } } : { ...schema, description }) as T
}

/** A variable that sets one or more plugin options (the same option of several plugins), whose schema is the first one's. */
export function option<T extends TSchema> (options: T | [T, ...TSchema[]], derivation: Derivation = {}): Variable<T> {
  const [first, ...rest] = Array.isArray(options) ? options : [options]
  return { schema: asVariable(first, derivation), options: [first, ...rest], scale: derivation.scale ?? 1 }
}

/** As `option`, but unset unless given: the option's default then comes from other settings. */
export function optionalOption<T extends TSchema> (options: T | TOptional<T>, derivation: Derivation = {}): Variable<TOptional<T>> {
  const { default: _, ...schema } = option(options, derivation).schema as TSchema
  return { schema: Type.Optional(schema) as TOptional<T>, options: [options], scale: derivation.scale ?? 1 }
}

/** As `option`, for an optional option whose absence the plugin fills in: the variable always has a value. */
export function requiredOption<T extends TSchema> (options: TOptional<T> | [TOptional<T>, ...TSchema[]], derivation: Derivation = {}): Variable<T> {
  const variable = option(options, derivation)
  return { ...variable, schema: Type.Optional(variable.schema, false) as unknown as T }
}

export const server = <T extends TSchema> (schema: T): Variable<T> => ({ schema, options: [], scale: 1 })

export const Int = (min: number, fallback: number, max = 2147483647) =>
  Type.Integer({ minimum: min, maximum: max, default: fallback })
