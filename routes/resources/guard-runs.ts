import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Guard } from '../../http/types.js'
import { guardCheck, type PlinthAccount } from '../../plugins/auth/index.js'

/** Runs `guard` as Fastify runs an onRequest hook: async, or written with a callback, as Fastify also allows. */
export async function runGuard (app: FastifyInstance, guard: Guard, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (guard.length >= 3) {
    await new Promise<void>((resolve, reject) => (guard as unknown as (...args: unknown[]) => void).call(app, request, reply, (err?: Error) => err ? reject(err) : resolve()))
  } else {
    await guard.call(app as never, request, reply)
  }
}

/** A guard's 4xx is its refusal; anything else (the database down) is rethrown, and answered as on the guard's own routes. */
function keepRefusal (err: unknown): void {
  const status = (err as { statusCode?: unknown } | null)?.statusCode
  if (!(typeof status === 'number' && status >= 400 && status < 500)) throw err
}

/**
 * Whether `guard` would let `request` through, and with which account, answering nothing: the request and the reply are
 * left as they were, so a refusal can be answered as something else (a missing row).
 */
export async function passesGuard (app: FastifyInstance, guard: Guard, request: FastifyRequest, reply: FastifyReply): Promise<{ account: PlinthAccount | null } | false> {
  // What the guard sets (the account, the token's claims) lands on the probe, never on the request.
  const probe = Object.create(request) as FastifyRequest
  const check = guardCheck(guard)
  if (check !== undefined) {
    try {
      await check(probe)
    } catch (err) {
      keepRefusal(err)
      return false
    }
    return { account: probe.account ?? null }
  }
  // A host's own guard answers its refusal: the answer is caught, and its status and headers undone.
  let refused = false
  const status = reply.statusCode
  const headers = reply.getHeaders()
  const stand = Object.create(reply) as FastifyReply
  stand.send = function caughtRefusal () {
    refused = true
    return stand
  }
  // A reply is a thenable that settles once sent: a guard that returns this one would never settle.
  Object.defineProperty(stand, 'then', { value: undefined })
  try {
    await runGuard(app, guard, probe, stand)
  } catch (err) {
    keepRefusal(err)
    refused = true
  } finally {
    reply.statusCode = status
    for (const name of Object.keys(reply.getHeaders())) if (!(name in headers)) reply.removeHeader(name)
    reply.headers(headers)
  }
  return refused ? false : { account: probe.account ?? null }
}
