import { createHmac, randomBytes } from 'node:crypto'
import createError from '@fastify/error'
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { MIN_SECRET_BYTES } from './auth/options.js'
import { readOptions } from './options.js'
import type { App } from './validation.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The key of every row's ETag (plugins/conditional.ts), derived from etagsPlugin's secret. */
    plinthEtagKey: Buffer
  }
}

export const InvalidEtagsOptions = createError('ETAGS_INVALID_OPTIONS', 'etags plugin: %s')

export const EtagsOptionsSchema = Type.Object({
  /** Shared by every process of one database (SECRET_KEY), so that they give and take the same ETags. */
  secret: Type.Optional(Type.String({ minLength: 1, errorMessage: 'must be a non-empty string' }))
})

export type EtagsOptions = Partial<Static<typeof EtagsOptionsSchema>>

export const ETAG_KEY_WARNING = 'ETags are keyed per process (SECRET_KEY is not set, or etagsPlugin has no secret or is not registered): ' +
  'they change at restart, and another process on the same database answers 412 to them in If-Match'

// Its own key, never the secret itself: an ETag then tells nothing of what the secret signs.
const keyOf = (secret: string) => createHmac('sha256', secret).update('plinth etags').digest()

/** The key of a process without etagsPlugin, made at the first profile that needs one. */
let processKey: Buffer | undefined

/** The ETag key of `app`: etagsPlugin's, else this process's own, with a warning the first time. */
export function etagKeyOf (app: FastifyInstance): Buffer {
  if (app.hasDecorator('plinthEtagKey')) return app.plinthEtagKey
  if (processKey === undefined) app.log.warn(ETAG_KEY_WARNING)
  return (processKey ??= randomBytes(32))
}

/** Keys the ETags of plinth's profiles; register it before them. Without a secret, a random key per process. */
async function etagsPlugin (app: App, opts: EtagsOptions) {
  const { secret } = readOptions(EtagsOptionsSchema, opts, InvalidEtagsOptions)
  const bytes = secret === undefined ? undefined : Buffer.byteLength(secret)
  if (bytes !== undefined && bytes < MIN_SECRET_BYTES) throw new InvalidEtagsOptions(`secret must be at least ${MIN_SECRET_BYTES} bytes (got ${bytes})`)
  if (secret === undefined) app.log.warn(ETAG_KEY_WARNING)
  app.decorate('plinthEtagKey', secret === undefined ? randomBytes(32) : keyOf(secret))
}

export default fp(etagsPlugin, { name: 'plinth-etags', fastify: '5.x' })
