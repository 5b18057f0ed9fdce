import createError from '@fastify/error'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * Conditional requests (RFC 9110 section 13) on single rows. A row's version is PostgreSQL's
 * `xmin`, the transaction that wrote the row as it is now: every write of the row changes it, it
 * needs no column, and a write can be made conditional on it in its own WHERE clause.
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-13
 */

const PreconditionFailed = createError('PRECONDITION_FAILED', '%s has changed since the ETag sent in If-Match; read it again for its current ETag', 412)
export const preconditionFailed = (what: string) => new PreconditionFailed(what)
const PreconditionRequired = createError('PRECONDITION_REQUIRED', 'This write needs If-Match with the ETag of %s, from its last read or write', 428)

/** The plugin option, REQUIRE_IF_MATCH in the server. */
export const ConditionalOptions = {
  /** Writes to a row (PATCH, PUT, DELETE) without If-Match are refused with 428. */
  requireIfMatch: Type.Boolean({ default: false, errorMessage: 'must be a boolean' })
}

/** A strong ETag: a row's version names its exact bytes, as a representation is made from the row alone. */
export const etagOf = (version: string) => `"${version}"`

/** The entity tags of an If-Match or If-None-Match field, `*` as itself. */
function entityTags (field: string): string[] {
  return field.split(',').map((tag) => tag.trim()).filter(Boolean)
}

/**
 * Sets the row's ETag; when the request's If-None-Match already has it (weak comparison), sends
 * the 304, with no body, and is true: the handler then returns the reply.
 */
export function notModified (request: FastifyRequest, reply: FastifyReply, version: string): boolean {
  const etag = etagOf(version)
  reply.header('etag', etag)
  const field = request.headers['if-none-match']
  if (field === undefined) return false
  const matched = entityTags(field).some((tag) => tag === '*' || tag === etag || tag === `W/${etag}`)
  if (matched) reply.code(304).send()
  return matched
}

/**
 * The versions a write may replace, from If-Match (strong comparison: a weak tag never matches);
 * undefined when any will do (no field, or `*`). Without the field, 428 when it is required.
 */
export function expectedVersions (request: FastifyRequest, required: boolean, what: string): string[] | undefined {
  const field = request.headers['if-match']
  if (field === undefined) {
    if (required) throw new PreconditionRequired(what)
    return undefined
  }
  const tags = entityTags(field)
  if (tags.includes('*')) return undefined
  return tags.filter((tag) => tag.length > 2 && tag.startsWith('"') && tag.endsWith('"')).map((tag) => tag.slice(1, -1))
}

/**
 * Why a write under `versions` wrote nothing: the row is gone (the `missing` error, such as a
 * 404), or it is there with another version (412).
 */
export async function refusal (versions: string[] | undefined, exists: () => Promise<unknown>, missing: Error, what: string): Promise<Error> {
  return versions !== undefined && await exists() ? preconditionFailed(what) : missing
}
