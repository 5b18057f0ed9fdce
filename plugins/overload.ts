import type { OutgoingHttpHeaders } from 'node:http'
import createError from '@fastify/error'
import underPressure from '@fastify/under-pressure'
import { Type, type Static } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import type { QueueBound } from '../db/gate.js'
import { serverBusy, type ShedReason } from '../db/errors.js'
import { problem } from './errors.js'
import { assertBeforeRoutes } from './order.js'
import { readOptions } from './options.js'
import type { App } from './validation.js'

export const InvalidOverloadOptions = createError('OVERLOAD_INVALID_OPTIONS', 'overload plugin: %s')

const Limit = (fallback: number, what: string) =>
  Type.Integer({ minimum: 0, maximum: 2147483647, default: fallback, errorMessage: `must be an integer of at least 0 (${what}; 0 turns the check off)` })

export const OverloadOptionsSchema = Type.Object({
  /** Requests refused at once while this many are in progress: the queue every other one stands in. */
  maxInFlight: Limit(300, 'requests'),
  /** Requests are shed while the event loop's mean delay over the last sample exceeds this. */
  maxEventLoopDelayMs: Limit(200, 'milliseconds'),
  /** Queries refused at once while this many wait for a database connection (PGlite: in its queue). */
  maxDbWaiting: Limit(200, 'queries'),
  /** Password hashes and verifies refused at once while this many wait for a CPU. */
  maxHashWaiting: Limit(64, 'hashes'),
  /** The Retry-After of every shed request. */
  retryAfterSeconds: Type.Integer({ minimum: 1, maximum: 86400, default: 2, errorMessage: 'must be an integer from 1 to 86400' }),
  /** How often the event-loop delay is sampled: a shorter interval reacts, and recovers, sooner. */
  sampleIntervalMs: Type.Integer({ minimum: 10, maximum: 60000, default: 500, errorMessage: 'must be an integer from 10 to 60000' })
})

export type OverloadOptions = Partial<Static<typeof OverloadOptionsSchema>>

export interface OverloadState {
  retryAfterSeconds: number
  /** The bound on the password-hash queue, which the accounts profile applies; none when off. */
  passwordQueue?: QueueBound
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Set by overloadPlugin. */
    plinthOverload: OverloadState
  }
}

/** Route config that keeps a route answering under overload (probes): under-pressure's own per-route handler, admitting. */
export const neverShed = { pressureHandler: () => undefined }

/**
 * Graceful overload: past a threshold, requests are answered 503 with Retry-After and the problem
 * document at once instead of queueing without bound. The event-loop delay is checked before
 * routing (@fastify/under-pressure); the database's and the password hashes' queues refuse the
 * task that would wait beyond their bound. Register it after plinth's db plugin and before the profiles.
 * @see https://github.com/fastify/under-pressure
 */
async function overloadPlugin (app: App, opts: OverloadOptions) {
  assertBeforeRoutes(app, 'plinth-overload', 'its hook must run for their routes, and the accounts profile reads its hash bound when registered')
  const options = readOptions(OverloadOptionsSchema, opts, InvalidOverloadOptions)
  const { retryAfterSeconds } = options
  // One error per reason, made once: a refusal must cost far less than the work it spares.
  const busy = (reason: ShedReason) => serverBusy(reason, retryAfterSeconds)
  const refusals = { in_flight: busy('in_flight'), event_loop: busy('event_loop'), database_queue: busy('database_queue'), password_queue: busy('password_queue') }
  const bound = (reason: ShedReason, maxWaiting: number): QueueBound | undefined =>
    maxWaiting === 0 ? undefined : { maxWaiting, refuse: () => refusals[reason] }

  if (app.hasDecorator('plinthDb')) {
    const database = app.plinthDb
    database.limitWaiting?.(bound('database_queue', options.maxDbWaiting))
    // The client may be the host's and outlive this app.
    app.addHook('onClose', async () => database.limitWaiting?.(undefined))
  }
  app.decorate('plinthOverload', { retryAfterSeconds, passwordQueue: bound('password_queue', options.maxHashWaiting) })

  if (options.maxInFlight > 0) {
    const { maxInFlight } = options
    let inFlight = 0
    const refusedBody = JSON.stringify(problem(503, refusals.in_flight.code, refusals.in_flight.message))
    const refusedHeaders = { 'content-type': 'application/problem+json; charset=utf-8', 'content-length': Buffer.byteLength(refusedBody), 'retry-after': String(retryAfterSeconds) }
    const ended = () => { inFlight-- }
    app.addHook('onRequest', function shedPastInFlight (request, reply, done) {
      if (inFlight >= maxInFlight && (request.routeOptions.config as { pressureHandler?: unknown }).pressureHandler !== neverShed.pressureHandler) {
        // Written straight out, with the headers set so far (security, CORS): a refusal that cost
        // as much as a cheap read would spare nothing.
        reply.hijack()
        reply.raw.writeHead(503, { ...reply.getHeaders(), ...refusedHeaders } as OutgoingHttpHeaders).end(refusedBody)
        app.plinthMetrics?.shed('in_flight')
        return
      }
      inFlight++
      // 'close' comes once however the response ends, sent or cut; `on` spares the wrapper `once` makes per request.
      reply.raw.on('close', ended)
      done()
    })
  }

  if (options.maxEventLoopDelayMs === 0) return
  if (app.hasPlugin('@fastify/under-pressure') || app.hasDecorator('isUnderPressure')) {
    app.log.info('overload: the app has its own @fastify/under-pressure; the event-loop check is left to it')
    return
  }
  // The boot blocks the loop (migrations, PGlite's start): the samples that saw it are not load.
  let settled = false
  app.addHook('onReady', async () => { setTimeout(() => { settled = true }, 2 * options.sampleIntervalMs).unref() })
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    sampleInterval: options.sampleIntervalMs,
    // A rejection is passed on as the request's error, so the route's error handler answers it.
    pressureHandler: () => settled ? Promise.reject(refusals.event_loop) : undefined
  })
}

export default fp(overloadPlugin, { name: 'plinth-overload', fastify: '5.x' })
