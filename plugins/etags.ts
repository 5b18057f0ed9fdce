import { createHmac, randomBytes } from 'node:crypto'
import { Type, type Static } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { ETAG_KEY_WARNING } from '../http/etag-key.js'
import { MIN_SECRET_BYTES } from './auth/keys.js'
import { readOptions } from '../http/options.js'
import type { App } from '../http/types.js'
import { defineProblems } from '../http/problem-error.js'

export const etagsProblems = defineProblems({ InvalidEtagsOptions: { code: 'ETAGS_INVALID_OPTIONS', message: 'etags plugin: %s' } })
export const { InvalidEtagsOptions } = etagsProblems

export const EtagsOptionsSchema = Type.Object({
  /** Shared by every process of one database (SECRET_KEY), so that they give and take the same ETags. */
  secret: Type.Optional(Type.String({ minLength: 1, errorMessage: 'must be a non-empty string' }))
})

export type EtagsOptions = Partial<Static<typeof EtagsOptionsSchema>>

// Its own key, never the secret itself: an ETag then tells nothing of what the secret signs.
const keyOf = (secret: string) => createHmac('sha256', secret).update('plinth etags').digest()

/** Keys the ETags of plinth's profiles; register it before them. Without a secret, a random key per process. */
async function etagsPlugin (app: App, opts: EtagsOptions) {
  const { secret } = readOptions(EtagsOptionsSchema, opts, InvalidEtagsOptions)
  const bytes = secret === undefined ? undefined : Buffer.byteLength(secret)
  if (bytes !== undefined && bytes < MIN_SECRET_BYTES) throw new InvalidEtagsOptions(`secret must be at least ${MIN_SECRET_BYTES} bytes (got ${bytes})`)
  if (secret === undefined) app.log.warn(ETAG_KEY_WARNING)
  app.decorate('plinthEtagKey', secret === undefined ? randomBytes(32) : keyOf(secret))
}

export default fp(etagsPlugin, { name: 'plinth-etags', fastify: '5.x' })
