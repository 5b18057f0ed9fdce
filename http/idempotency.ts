import { createHash } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest, onSendHookHandler, preHandlerAsyncHookHandler } from 'fastify'
import { createIdempotencyStore } from '../db/idempotency.js'
import type { Database } from '../db/client.js'
import type { Clock } from '../db/clock.js'
import { httpProblems } from './errors.js'
import { inputError } from './problems.js'

/** Idempotency-Key on create routes (IETF httpapi draft): a repeated key and request get the first answer again, no second row. */

const { IdempotencyKeyInFlight: KeyInFlight, ValidationFailed } = httpProblems
const keyReused = () => inputError(ValidationFailed)('headers', '/idempotency-key', 'was first sent with another request; a key names one request, body included')

export const IdempotencyOptions = {
  /** How long the answer to an Idempotency-Key is kept for replays. */
  idempotencyTtlHours: Type.Integer({ minimum: 1, maximum: 8760, default: 24, errorMessage: 'must be a whole number of hours from 1 to 8760' })
}

const KEPT_HEADERS = ['content-type', 'location', 'etag']

/** `value` with every object's keys sorted, at any depth: one JSON value has one text, whatever order its keys were sent in. */
function canonical (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical((value as Record<string, unknown>)[key])]))
}

/** What a key names: the method, the path and the body as a JSON value, not as the text it was sent in. */
const fingerprintOf = (request: FastifyRequest) =>
  createHash('sha256').update(`${request.method} ${request.url.split('?')[0]!}\n${JSON.stringify(canonical(request.body))}`).digest('base64url')

/** A key is per user, or per client address for a request without one. */
const scopeOf = (request: FastifyRequest) => {
  const account = (request as { account?: { id: number } | null }).account
  return account ? `user:${account.id}` : `address:${request.ip}`
}

/** The route hooks of Idempotency-Key, for the create routes of one plugin; keys expire by `clock` (the system's by default). */
export function idempotentCreates (db: Database, ttlHours: number, clock?: Clock) {
  const store = createIdempotencyStore(db, { clock })
  const ttlMs = ttlHours * 3_600_000
  const claims = new WeakMap<FastifyRequest, { scope: string, key: string }>()

  const preHandler: preHandlerAsyncHookHandler = async function idempotencyKey (request: FastifyRequest, reply: FastifyReply) {
    const key = request.headers['idempotency-key']
    if (typeof key !== 'string') return
    const scope = scopeOf(request)
    const fingerprint = fingerprintOf(request)
    const claim = await store.claim(scope, key, fingerprint, ttlMs)
    if (claim.claimed) {
      claims.set(request, { scope, key })
      return
    }
    const { held } = claim
    if (held.status === null) throw new KeyInFlight(key)
    if (held.fingerprint !== fingerprint) throw keyReused()
    return reply.code(held.status).headers({ ...held.headers, 'idempotent-replayed': 'true' }).send(held.body)
  }

  const onSend: onSendHookHandler = async function keepAnswer (request, reply, payload) {
    const claim = claims.get(request)
    if (!claim) return payload
    claims.delete(request)
    if (reply.statusCode < 200 || reply.statusCode > 299) {
      await store.release(claim.scope, claim.key)
      return payload
    }
    const headers = Object.fromEntries(KEPT_HEADERS.flatMap((name) => {
      const value = reply.getHeader(name)
      return value === undefined ? [] : [[name, String(value)]]
    }))
    await store.answer(claim.scope, claim.key, reply.statusCode, headers, String(payload))
    return payload
  }

  return { preHandler, onSend }
}
