import { Type, type Static } from '@sinclair/typebox'
import { Id, NullableText, Text } from './common.js'
import { pascalName } from './fields.js'

export const RECORD_TITLE_MAX = 255
// Bounds a list page too: at most maxLimit records of this size.
export const RECORD_DESCRIPTION_MAX = 10_000

export { pascalName } from './fields.js'

export const recordSchemaId = (name: string) => `${pascalName(name)}Record`

const Title = () => Text({ minLength: 1, maxLength: RECORD_TITLE_MAX, examples: ['Buy milk'] })
const Description = () => NullableText({ maxLength: RECORD_DESCRIPTION_MAX, examples: ['Semi-skimmed, two litres'] })

export const recordSchema = (name: string) => Type.Object({
  id: Id({ description: 'Assigned by the server: 1, 2, 3... per resource, never reused' }),
  title: Type.String({ examples: ['Buy milk'] }),
  description: Type.Unsafe<string | null>({ type: ['string', 'null'] })
}, { $id: recordSchemaId(name), title: recordSchemaId(name), description: `A record of the ${name} resource` })

export type ResourceRecord = Static<ReturnType<typeof recordSchema>>

/** POST body. `id` is server-assigned: sent anyway, it is stripped like any unknown field. */
export const RecordCreateSchema = Type.Object({
  title: Title(),
  description: Type.Optional(Description())
}, { additionalProperties: false, title: 'RecordCreate' })

export type RecordCreate = Static<typeof RecordCreateSchema>

/** PUT body, partial: only the fields sent are written, `null` clears `description`. No defaults, or an unsent field would be reset. */
export const RecordUpdateSchema = Type.Object({
  title: Type.Optional(Title()),
  description: Type.Optional(Description())
}, { additionalProperties: false, title: 'RecordUpdate' })

export type RecordUpdate = Static<typeof RecordUpdateSchema>
