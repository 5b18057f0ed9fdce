import { Type, type TSchema } from '@sinclair/typebox'
import { PG_INT_MAX } from './common.js'

/** The `offset` and `limit` of every list; the limits are the plugin's options, shown in the document. */
export const pageQuery = ({ defaultLimit, maxLimit, offset = 'Rows to skip, in id order' }: { defaultLimit: number, maxLimit: number, offset?: string }) => ({
  offset: Type.Integer({ minimum: 0, maximum: PG_INT_MAX, default: 0, description: offset }),
  // No maximum: a larger limit is clamped, never refused.
  limit: Type.Integer({ minimum: 1, default: defaultLimit, description: `Page size; values above ${maxLimit} are reduced to ${maxLimit}` })
})

/** A page of `item`; `total` counts the whole (filtered) collection, not what is left after this page. */
export const pageOf = <T extends TSchema>(item: T, options: { $id: string, title?: string, description?: string }) =>
  Type.Object({
    items: Type.Array(item),
    total: Type.Integer({ minimum: 0, description: 'Number of items in the whole (filtered) collection' }),
    offset: Type.Integer({ minimum: 0, description: 'Items skipped before this page (0 with after_id)' }),
    limit: Type.Integer({ minimum: 1, description: 'Page size used, after clamping to the maximum' }),
    has_next: Type.Boolean({ description: 'Whether another page follows this one' })
  }, { title: options.$id, ...options })

/** The envelope of a page; another follows when rows remain past it, unless a keyset page says otherwise. */
export const page = <T>(items: T[], total: number, { offset, limit }: { offset: number, limit: number }, hasNext = offset + items.length < total) =>
  ({ items, total, offset, limit, has_next: hasNext })
