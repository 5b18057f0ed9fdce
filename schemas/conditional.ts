import { Type, type TSchema } from '@sinclair/typebox'

const ETAG = 'The strong ETag of the row as it is now: send it back in If-Match to write the row, or in If-None-Match to revalidate it'

export const withEtag = <T extends TSchema>(schema: T): T => ({ ...schema, headers: { etag: Type.String({ description: ETAG }) } })

const LOCATION = Type.String({ description: 'The URL of the new row' })

/** A 201: the new row's ETag (unless `etag` is false), and its URL in Location. */
export const created = <T extends TSchema>(schema: T, etag = true): T => ({
  ...schema,
  headers: etag ? { etag: Type.String({ description: ETAG }), location: LOCATION } : { location: LOCATION }
})

/** A single-row read: If-None-Match, and its 304. */
export const ConditionalRead = {
  headers: Type.Object({
    'if-none-match': Type.Optional(Type.String({ description: 'ETags the client holds: 304 with no body when one is current' }))
  }),
  notModified: { 304: Type.Null({ description: 'Not modified: an ETag in If-None-Match is current; no body' }) }
}

/** A single-row write (PATCH, PUT, DELETE): If-Match. */
export const ConditionalWrite = {
  headers: Type.Object({
    'if-match': Type.Optional(Type.String({
      description: 'The ETag the write is based on: 412 when the row has changed since; 428 without it when the server sets REQUIRE_IF_MATCH'
    }))
  })
}
