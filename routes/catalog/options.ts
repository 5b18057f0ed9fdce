import { Type, type Static } from '@sinclair/typebox'
import type { Guard } from '../../http/types.js'
import { ConditionalOptions } from '../../http/conditional.js'
import { IdempotencyOptions } from '../../http/idempotency.js'
import { PageLimitOptions, pageLimits, readGuards, readOptions, type Guards } from '../../http/options.js'
import { InvalidCatalogOptions } from './errors.js'

export const CatalogOptionsSchema = Type.Object({
  ...PageLimitOptions(100, 20),
  ...ConditionalOptions,
  /** ETags and conditional requests; false for a host that keeps transaction ids (an ETag is one) to itself. */
  etags: Type.Boolean({ default: true, errorMessage: 'must be a boolean' }),
  ...IdempotencyOptions
})

export type CatalogOptions = Partial<Static<typeof CatalogOptionsSchema>> & {
  /** An onRequest hook on every route, e.g. `app.authenticate`. */
  guard?: Guard
  /** Separate hooks for reads and writes, e.g. `{ write: app.requireScopes('items:write') }`. */
  guards?: Guards
}

export function resolveCatalogOptions (opts: CatalogOptions = {}) {
  const options = readOptions(CatalogOptionsSchema, opts, InvalidCatalogOptions)
  const limits = pageLimits(options, CatalogOptionsSchema.properties.defaultLimit.fallback, InvalidCatalogOptions)
  if (options.requireIfMatch && !options.etags) throw new InvalidCatalogOptions('requireIfMatch needs etags: without an ETag no client can send If-Match')
  return { ...limits, requireIfMatch: options.requireIfMatch, etags: options.etags, idempotencyTtlHours: options.idempotencyTtlHours, guards: readGuards(opts, InvalidCatalogOptions) }
}
