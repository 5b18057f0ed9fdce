import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'

declare module 'fastify' {
  interface FastifyInstance {
    /** The key of every row's ETag, derived from etagsPlugin's secret. */
    plinthEtagKey: Buffer
  }
}

export const ETAG_KEY_WARNING = 'ETags are keyed per process (SECRET_KEY is not set, or etagsPlugin has no secret or is not registered): ' +
  'they change at restart, and another process on the same database answers 412 to them in If-Match'

let processKey: Buffer | undefined

/** The ETag key of `app`: etagsPlugin's, else this process's own, with a warning the first time. */
export function etagKeyOf (app: FastifyInstance): Buffer {
  if (app.hasDecorator('plinthEtagKey')) return app.plinthEtagKey
  if (processKey === undefined) app.log.warn(ETAG_KEY_WARNING)
  return (processKey ??= randomBytes(32))
}
