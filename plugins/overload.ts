import type { IncomingHttpHeaders, OutgoingHttpHeaders, Server } from 'node:http'
import type { Socket } from 'node:net'
import { Readable } from 'node:stream'
import { normalizeIP } from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { QueueBound } from '../concurrency/gate.js'
import { serverBusy, type ShedReason } from '../concurrency/busy.js'
import { problem } from '../http/problems.js'
import { assertBeforeRoutes } from '../http/order.js'
import { readOptions } from '../http/options.js'
import { defineProblems } from '../http/problem-error.js'
import type { App } from '../http/types.js'

/** Every code this plugin throws; a shed request's SERVER_BUSY is concurrency/busy.ts's. */
export const overloadProblems = defineProblems({
  InvalidOverloadOptions: { code: 'OVERLOAD_INVALID_OPTIONS', message: 'overload plugin: %s' },
  BodyTimeout: { status: 408, code: 'REQUEST_TIMEOUT', message: 'The request body did not arrive within %s s' }
})
export const { InvalidOverloadOptions } = overloadProblems
const { BodyTimeout } = overloadProblems

const Limit = (fallback: number, what: string) =>
  Type.Integer({ minimum: 0, maximum: 2147483647, default: fallback, errorMessage: `must be an integer of at least 0 (${what}; 0 turns the check off)` })

export const OverloadOptionsSchema = Type.Object({
  /** Requests refused at once while this many are in progress, counted once their body has arrived. */
  maxInFlight: Limit(300, 'requests'),
  /** Requests are shed while the event loop's mean delay over the last sample exceeds this. */
  maxEventLoopDelayMs: Limit(200, 'milliseconds'),
  /** Queries refused at once while this many wait for a database connection (PGlite: in its queue). */
  maxDbWaiting: Limit(200, 'queries'),
  /** Password hashes and verifies refused at once while this many wait for a CPU. */
  maxHashWaiting: Limit(64, 'hashes'),
  retryAfterSeconds: Type.Integer({ minimum: 1, maximum: 86400, default: 2, errorMessage: 'must be an integer from 1 to 86400' }),
  /** How often the event-loop delay is sampled: a shorter interval reacts, and recovers, sooner. */
  sampleIntervalMs: Type.Integer({ minimum: 10, maximum: 60000, default: 500, errorMessage: 'must be an integer from 10 to 60000' }),
  /** How long a request's body may take to arrive after its head: past it, 408 and the connection is closed. */
  bodyTimeoutMs: Type.Integer({ minimum: 1, maximum: 3600000, default: 20000, errorMessage: 'must be an integer from 1 to 3600000' }),
  /** Connections one client address (an IPv6 client's /64) may hold open; the ones past it are closed at once. */
  maxConnectionsPerAddress: Limit(100, 'connections'),
  /** Every connection comes from a proxy, whose address is no client's: connections are then not capped per address. */
  behindProxy: Type.Boolean({ default: false, errorMessage: 'must be a boolean' })
})

export type OverloadOptions = Partial<Static<typeof OverloadOptionsSchema>>

export interface OverloadState {
  retryAfterSeconds: number
  /** The bound on the password-hash queue, which the accounts profile applies; none when off. */
  passwordQueue?: QueueBound
}

/** The route config of a long-lived answer (an event stream): shed like any request when it arrives, not counted in flight while it lasts. */
export const longLived = { plinthLongLived: true }

declare module 'fastify' {
  interface FastifyInstance {
    plinthOverload: OverloadState
  }
  interface FastifyContextConfig {
    plinthLongLived?: boolean
  }
}

/** Route config that keeps a route answering under overload (probes): under-pressure's own per-route handler, admitting. */
export const neverShed = { pressureHandler: () => undefined }

const expectsBody = (headers: IncomingHttpHeaders) =>
  headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0')

/** `request`'s body as Fastify's parsers read it, a 408 unless whole within `ms`; read lazily, so a raw parser gets every byte. */
function timedBody (request: FastifyRequest, reply: FastifyReply, ms: number): Readable {
  const raw = request.raw
  let reading = false
  const body = new Readable({
    read () {
      if (reading) {
        raw.resume()
        return
      }
      reading = true
      raw.on('data', (chunk: Buffer) => { if (!body.push(chunk)) raw.pause() })
      raw.once('end', () => body.push(null))
      raw.once('error', (err) => body.destroy(err))
    }
  })
  // A parser of the raw request leaves this stream unread: its timeout must not go unheard and throw.
  body.on('error', () => {})
  const timer = setTimeout(() => {
    reply.raw.shouldKeepAlive = false
    body.destroy(new BodyTimeout(ms / 1000))
  }, ms)
  const stop = () => clearTimeout(timer)
  raw.once('end', stop)
  reply.raw.once('close', stop)
  return body
}

/** Closes at once each connection past `max` from one client address; an IPv6 client counts by its /64, as it can use any address in it. */
function capConnections (server: Server, max: number) {
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const address = normalizeIP(socket.remoteAddress as string)
    const count = open.get(address) ?? 0
    if (count >= max) {
      socket.destroy()
      return
    }
    open.set(address, count + 1)
    socket.once('close', () => {
      const left = open.get(address)! - 1
      if (left === 0) open.delete(address)
      else open.set(address, left)
    })
  })
}

/** Graceful overload: a 503 with Retry-After past a threshold, not an unbounded queue. @see https://github.com/fastify/under-pressure */
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

  app.addHook('preParsing', function timeBody (request, reply, payload, done) {
    // Most bodies come with their head, whole before any hook runs: they need no timer.
    if (request.raw.complete || !expectsBody(request.headers)) return done(null, payload)
    done(null, timedBody(request, reply, options.bodyTimeoutMs))
  })

  if (options.maxConnectionsPerAddress > 0) {
    if (options.behindProxy) app.log.info('overload: behind a proxy (TRUST_PROXY) MAX_CONNECTIONS_PER_ADDRESS is not applied: every connection comes from the proxy')
    else capConnections(app.server, options.maxConnectionsPerAddress)
  }

  if (options.maxInFlight > 0) {
    const { maxInFlight } = options
    let inFlight = 0
    const refusedBody = JSON.stringify(problem(503, refusals.in_flight.code, refusals.in_flight.message))
    const refusedHeaders = { 'content-type': 'application/problem+json; charset=utf-8', 'content-length': Buffer.byteLength(refusedBody), ...refusals.in_flight.headers }
    const ended = () => { inFlight-- }
    // Counted once the body is in: a client that trickles its body holds a connection, never a place.
    app.addHook('preValidation', function shedPastInFlight (request, reply, done) {
      if (inFlight >= maxInFlight && (request.routeOptions.config as { pressureHandler?: unknown }).pressureHandler !== neverShed.pressureHandler) {
        // Written straight out with the headers set so far (security, CORS): a refusal must stay cheap.
        reply.hijack()
        reply.raw.writeHead(503, { ...reply.getHeaders(), ...refusedHeaders } as OutgoingHttpHeaders).end(refusedBody)
        app.plinthMetrics?.shed('in_flight')
        return
      }
      // An event stream lasts as long as its client listens: shed when it arrives, never counted as work in flight.
      if ((request.routeOptions.config as { plinthLongLived?: boolean }).plinthLongLived === true) return done()
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
    pressureHandler: () => settled ? Promise.reject(refusals.event_loop) : undefined
  })
}

export default fp(overloadPlugin, { name: 'plinth-overload', fastify: '5.x' })
