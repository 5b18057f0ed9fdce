import { Type, type Static } from '@sinclair/typebox'
import { PageLimitOptions, pageLimits, readOptions } from '../../plugins/options.js'
import { InvalidCatalogOptions } from './errors.js'

export const CatalogOptionsSchema = Type.Object({ ...PageLimitOptions(100) })

/** DEFAULT_PAGE_LIMIT and MAX_PAGE_LIMIT in the server: a page of 20 unless asked, at most 100. */
export type CatalogOptions = Partial<Static<typeof CatalogOptionsSchema>>

export function resolveCatalogOptions (opts: CatalogOptions = {}) {
  return pageLimits(readOptions(CatalogOptionsSchema, opts, InvalidCatalogOptions), 20, InvalidCatalogOptions)
}
