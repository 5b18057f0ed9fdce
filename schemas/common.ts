import { Type, type Static, type TSchema, type StringOptions } from '@sinclair/typebox'

/**
 * A reference to a schema registered with `$id`, typed as the schema itself.
 * Only for response schemas: request schemas are inlined so the body validator needs no registry.
 */
export const ref = <T extends TSchema>(schema: T) => Type.Unsafe<Static<T>>(Type.Ref(schema.$id as string))

/** PostgreSQL `integer`: ids and query numbers never overflow into a driver error. */
export const PG_INT_MAX = 2147483647

export const Id = (options: { description?: string } = {}) =>
  Type.Integer({ minimum: 1, maximum: PG_INT_MAX, ...options })

/**
 * Text PostgreSQL can store: no NUL, and no unpaired UTF-16 surrogate (JSON's `"\\ud800"`), which
 * has no UTF-8 form. Both are refused at validation (422), not by the driver: PGlite even counts
 * a surrogate after a non-ASCII letter wrong and sends the server a corrupt query (a 500).
 */
export const TEXT_PATTERN = '^[^\\u0000\\ud800-\\udfff]*$'

export const Text = (options: StringOptions = {}) => Type.String({ pattern: TEXT_PATTERN, ...options })

export const Timestamp = (options: { description?: string } = {}) =>
  Type.Unsafe<Date | string>(Type.String({ format: 'date-time', ...options }))

/**
 * Registers shared schemas that this context does not see yet. Each profile calls it for what
 * its routes reference, so it also works registered alone in a host app.
 */
export function addSchemas (app: { getSchema (id: string): unknown, addSchema (schema: unknown): unknown }, schemas: TSchema[]) {
  for (const schema of schemas) {
    if (!app.getSchema(schema.$id as string)) app.addSchema(schema)
  }
}
