import { Type, type TSchema } from '@sinclair/typebox'

/** A page of `item`; `total` counts the whole (filtered) collection, not what is left after this page. */
export const pageOf = <T extends TSchema>(item: T, options: { $id: string, title?: string, description?: string }) =>
  Type.Object({
    items: Type.Array(item),
    total: Type.Integer({ minimum: 0, description: 'Number of items in the whole (filtered) collection' }),
    offset: Type.Integer({ minimum: 0, description: 'Items skipped before this page (0 with after_id)' }),
    limit: Type.Integer({ minimum: 1, description: 'Page size used, after clamping to the maximum' }),
    has_next: Type.Boolean({ description: 'Whether another page follows this one' })
  }, { title: options.$id, ...options })
