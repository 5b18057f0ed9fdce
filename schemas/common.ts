import { Type, type Static, type TSchema, type StringOptions } from '@sinclair/typebox'

/** A typed `$ref`, for responses only: request schemas are inlined so the body validator needs no registry. */
export const ref = <T extends TSchema>(schema: T) => Type.Unsafe<Static<T>>(Type.Ref(schema.$id as string))

/** PostgreSQL `integer`: ids and query numbers never overflow into a driver error. */
export const PG_INT_MAX = 2147483647
export const PG_INT_MIN = -PG_INT_MAX - 1

/** A lower-case SQL identifier PostgreSQL never truncates: resource, table and field names. */
export const IDENTIFIER_PATTERN = '^[a-z][a-z0-9_]{0,62}$'

export const SCOPE_PATTERN = '^[a-z][a-z0-9:_.-]{0,63}$'

export const Id = (options: { description?: string } = {}) =>
  Type.Integer({ minimum: 1, maximum: PG_INT_MAX, ...options })

// No NUL and no unpaired surrogate: a 422 here, not a driver error (PGlite even sends a corrupt query for some surrogates).
export const TEXT_PATTERN = '^[^\\u0000\\ud800-\\udfff]*$'

export const Text = (options: StringOptions = {}) => Type.String({ pattern: TEXT_PATTERN, ...options })

// One JSON Schema type list, not a union: a bad value gets one clear error instead of one per branch.
export const NullableText = ({ maxLength, examples }: { maxLength: number, examples: string[] }) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength, pattern: TEXT_PATTERN, examples })

export const Timestamp = (options: { description?: string } = {}) =>
  Type.Unsafe<Date | string>(Type.String({ format: 'date-time', ...options }))

/** Registers the shared schemas this context lacks, so each profile also works registered alone. */
export function addSchemas (app: { getSchema (id: string): unknown, addSchema (schema: unknown): unknown }, schemas: TSchema[]) {
  for (const schema of schemas) {
    if (!app.getSchema(schema.$id as string)) app.addSchema(schema)
  }
}
