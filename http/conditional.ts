import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { httpProblems } from './errors.js'
import { etagKeyOf } from './etag-key.js'

/** Conditional requests on rows versioned by `xmin`, which ETags encrypt: it counts the database's transactions. @see https://www.rfc-editor.org/rfc/rfc9110#section-13 */

const { PreconditionFailed, PreconditionRequired } = httpProblems
export const preconditionFailed = (what: string) => new PreconditionFailed(what)

export const ConditionalOptions = {
  /** Writes to a row (PATCH, PUT, DELETE) without If-Match are refused with 428. */
  requireIfMatch: Type.Boolean({ default: false, errorMessage: 'must be a boolean' })
}

function entityTags (field: string): string[] {
  return field.split(',').map((tag) => tag.trim()).filter(Boolean)
}

/** Sets the strong `etag`; true when If-None-Match has it (weak comparison) and the 304 was sent. */
export function notModified (request: FastifyRequest, reply: FastifyReply, etag: string): boolean {
  reply.header('etag', etag)
  const field = request.headers['if-none-match']
  if (field === undefined) return false
  const matched = entityTags(field).some((tag) => tag === '*' || tag === etag || tag === `W/${etag}`)
  if (matched) reply.code(304).send()
  return matched
}

export interface VersionedRow { id: number, version: string }

export interface RowEtags {
  /** The row's strong ETag: it names the row's exact bytes, as a representation is made from the row alone. */
  of (row: VersionedRow): string
  notModified (request: FastifyRequest, reply: FastifyReply, row: VersionedRow): boolean
  /** The versions If-Match lets a write replace (strong comparison), undefined when any will do; 428 when required and absent. */
  expectedVersions (request: FastifyRequest, required: boolean, id: number, what: string): string[] | undefined
}

const OPAQUE = /^"[\w-]{22}"$/

/** An ETag: the row's id, version and four zero bytes as one AES block under a per-table key; a tag whose zeros do not come back is not ours. */
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

/** Why a conditional write wrote nothing: the row is gone (`missing`), or it has another version (412). */
async function refusal (versions: string[] | undefined, exists: () => Promise<unknown>, missing: () => Error, what: string): Promise<Error> {
  return versions !== undefined && await exists() ? preconditionFailed(what) : missing()
}

export interface IfMatchOptions {
  /** The table's ETags; without them If-Match is not read, and every write is unconditional. */
  etags?: RowEtags
  requireIfMatch: boolean
  id: number
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
  missing: () => Error
}

/** What `write` wrote, under the versions If-Match allows; when it wrote nothing, 404 (`missing`) or 412. */
export async function conditionalWrite<T> (request: FastifyRequest, options: ConditionalWriteOptions<T>): Promise<T> {
  const versions = ifMatchVersions(request, options)
  const written = await options.write(versions)
  if (written === null || written === false) throw await refusal(versions, options.exists, options.missing, options.what)
  return written
}
