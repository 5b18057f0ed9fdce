import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { httpProblems } from './errors.js'
import { etagKeyOf } from './etag-key.js'

/**
 * Conditional requests (RFC 9110 section 13) on single rows. A row's version is PostgreSQL's
 * `xmin`, the transaction that wrote the row as it is now: every write of the row changes it, it
 * needs no column, and a write can be made conditional on it in its own WHERE clause. The ETag
 * is the row's id and version encrypted: `xmin` counts the whole database's transactions, which
 * no client may read, and a key the clients lack turns it into 16 bytes that look random.
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-13
 */

const { PreconditionFailed, PreconditionRequired } = httpProblems
export const preconditionFailed = (what: string) => new PreconditionFailed(what)

/** The plugin option, REQUIRE_IF_MATCH in the server. */
export const ConditionalOptions = {
  /** Writes to a row (PATCH, PUT, DELETE) without If-Match are refused with 428. */
  requireIfMatch: Type.Boolean({ default: false, errorMessage: 'must be a boolean' })
}

/** The entity tags of an If-Match or If-None-Match field, `*` as itself. */
function entityTags (field: string): string[] {
  return field.split(',').map((tag) => tag.trim()).filter(Boolean)
}

/**
 * Sets `etag`, a strong ETag; when the request's If-None-Match already has it (weak comparison),
 * sends the 304, with no body, and is true: the handler then returns the reply.
 */
export function notModified (request: FastifyRequest, reply: FastifyReply, etag: string): boolean {
  reply.header('etag', etag)
  const field = request.headers['if-none-match']
  if (field === undefined) return false
  const matched = entityTags(field).some((tag) => tag === '*' || tag === etag || tag === `W/${etag}`)
  if (matched) reply.code(304).send()
  return matched
}

/** A row as it is now: its id and its version. */
export interface VersionedRow { id: number, version: string }

/** The ETags of one table's rows, and the conditions on them. */
export interface RowEtags {
  /** The row's strong ETag: it names the row's exact bytes, as a representation is made from the row alone. */
  of (row: VersionedRow): string
  /** `notModified` with the row's ETag. */
  notModified (request: FastifyRequest, reply: FastifyReply, row: VersionedRow): boolean
  /**
   * The versions a write may replace, from If-Match (strong comparison: a weak tag, or one that is
   * no ETag of this table under this key, never matches); undefined when any will do (no field, or
   * `*`). A tag of another row never matches. Without the field, 428 when it is required.
   */
  expectedVersions (request: FastifyRequest, required: boolean, id: number, what: string): string[] | undefined
}

const OPAQUE = /^"[\w-]{22}"$/

/**
 * The ETags of `table`'s rows under the app's key (plugins/etags.ts), with `salt` mixed in: a new
 * salt changes every ETag of the table. An ETag is the row's id, its version and four zero bytes,
 * one AES block encrypted: a row in one version always gets one tag, and a tag decrypts back to
 * its version, so a write stays conditional in its own WHERE clause; a tag whose zeros do not come
 * back was not made here, for this table, under this key and salt.
 */
export function rowEtags (app: FastifyInstance, table: string, salt = ''): RowEtags {
  const key = createHmac('sha256', etagKeyOf(app)).update(`${table}\0${salt}`).digest()
  // ECB on exactly one block is the bare permutation; the objects are kept, each call one block.
  const cipher = createCipheriv('aes-256-ecb', key, null).setAutoPadding(false)
  const decipher = createDecipheriv('aes-256-ecb', key, null).setAutoPadding(false)
  const block = Buffer.alloc(16)

  function of (row: VersionedRow): string {
    block.writeBigUInt64BE(BigInt(row.id), 0)
    block.writeUInt32BE(Number(row.version), 8)
    block.writeUInt32BE(0, 12)
    return `"${cipher.update(block).toString('base64url')}"`
  }

  function versionOf (tag: string, id: number): string | undefined {
    if (!OPAQUE.test(tag)) return undefined
    const bytes = Buffer.from(tag.slice(1, -1), 'base64url')
    // Several spellings decode to one block; only the one this server writes is its ETag.
    if (`"${bytes.toString('base64url')}"` !== tag) return undefined
    const plain = decipher.update(bytes)
    return plain.readUInt32BE(12) === 0 && plain.readBigUInt64BE(0) === BigInt(id) ? String(plain.readUInt32BE(8)) : undefined
  }

  return {
    of,
    notModified: (request, reply, row) => notModified(request, reply, of(row)),
    expectedVersions (request, required, id, what) {
      const field = request.headers['if-match']
      if (field === undefined) {
        if (required) throw new PreconditionRequired(what)
        return undefined
      }
      const tags = entityTags(field)
      if (tags.includes('*')) return undefined
      return tags.map((tag) => versionOf(tag, id)).filter((version) => version !== undefined)
    }
  }
}

/**
 * Why a write under `versions` wrote nothing: the row is gone (the `missing` error, such as a
 * 404), or it is there with another version (412).
 */
async function refusal (versions: string[] | undefined, exists: () => Promise<unknown>, missing: () => Error, what: string): Promise<Error> {
  return versions !== undefined && await exists() ? preconditionFailed(what) : missing()
}

/** What makes a write to one row conditional on If-Match. */
export interface IfMatchOptions {
  /** The table's ETags; without them If-Match is not read, and every write is unconditional. */
  etags?: RowEtags
  /** A write without If-Match is refused with 428. */
  requireIfMatch: boolean
  id: number
  /** The row as the problem details name it, such as `item 7`. */
  what: string
  /** The row as the caller last read it, if it did: a version If-Match does not name is refused (412) before any write. */
  current?: VersionedRow
}

/** The versions If-Match lets a write replace, undefined when any will do; 428 or 412 as `IfMatchOptions` says. */
export function ifMatchVersions (request: FastifyRequest, { etags, requireIfMatch, id, what, current }: IfMatchOptions): string[] | undefined {
  const versions = etags?.expectedVersions(request, requireIfMatch, id, what)
  if (versions && current && !versions.includes(current.version)) throw preconditionFailed(what)
  return versions
}

export interface ConditionalWriteOptions<T> extends IfMatchOptions {
  /** Writes the row, only in one of `ifVersions` when given; null or false when it wrote nothing. */
  write: (ifVersions: string[] | undefined) => Promise<T | null | false>
  /** Whether the row is there, asked only when a conditional write wrote nothing: 412 then, else `missing`. */
  exists: () => Promise<unknown>
  /** The error of a missing row, such as a 404. */
  missing: () => Error
}

/** What `write` wrote, under the versions If-Match allows; when it wrote nothing, 404 (`missing`) or 412. */
export async function conditionalWrite<T> (request: FastifyRequest, options: ConditionalWriteOptions<T>): Promise<T> {
  const versions = ifMatchVersions(request, options)
  const written = await options.write(versions)
  if (written === null || written === false) throw await refusal(versions, options.exists, options.missing, options.what)
  return written
}
