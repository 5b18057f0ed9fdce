import { Type, type Static } from '@sinclair/typebox'
import { Id, NullableText, Text, Timestamp, ref } from './common.js'
import { pageOf } from './page.js'

export const ITEM_NAME_MAX = 128
export const ITEM_DESCRIPTION_MAX = 512

const Name = () => Text({ minLength: 1, maxLength: ITEM_NAME_MAX, examples: ['Desk lamp'] })
const Description = () => NullableText({ maxLength: ITEM_DESCRIPTION_MAX, examples: ['Brass, with a linen shade'] })
const Price = () => Type.Number({ minimum: 0, examples: [12.5] })

export const ItemSchema = Type.Object({
  name: Type.String({ examples: ['Desk lamp'] }),
  description: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
  price: Type.Number({ examples: [12.5] }),
  in_stock: Type.Boolean(),
  id: Id(),
  created_at: Timestamp({ description: 'When the item was created (UTC)' })
}, { $id: 'Item', title: 'ItemPublic' })

export type Item = Static<typeof ItemSchema>

/** POST body. `id` and `created_at` are server-assigned: sent anyway, they are stripped. */
export const ItemCreateSchema = Type.Object({
  name: Name(),
  description: Type.Optional(Description()),
  price: Price(),
  in_stock: Type.Optional(Type.Boolean({ default: true }))
}, { additionalProperties: false, title: 'ItemCreate' })

export type ItemCreate = Static<typeof ItemCreateSchema>

/** PATCH body: only the fields sent are written; `null` clears `description` only. No defaults, or an unsent field would be reset. */
export const ItemUpdateSchema = Type.Object({
  name: Type.Optional(Name()),
  description: Type.Optional(Description()),
  price: Type.Optional(Price()),
  in_stock: Type.Optional(Type.Boolean())
}, { additionalProperties: false, title: 'ItemUpdate' })

export type ItemUpdate = Static<typeof ItemUpdateSchema>

export const ItemPageSchema = pageOf(ref(ItemSchema), { $id: 'ItemPage', description: 'A page of items, ordered by id' })

export type ItemPage = Static<typeof ItemPageSchema>

export const ItemIdParams = Type.Object({ item_id: Id({ description: 'The item id' }) })
