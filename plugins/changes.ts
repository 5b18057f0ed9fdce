import { Type, type Static } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import type { Listening } from '../db/client.js'
import { createChangeFeed, type ChangePump } from '../db/resource-events.js'
import { ACCOUNTS_CHANNEL } from '../db/sessions.js'
import { createOpenStreams, type OpenStreams } from '../http/open-streams.js'
import { readOptions } from '../http/options.js'
import { defineProblems } from '../http/problem-error.js'
import type { App } from '../http/types.js'

export const changesProblems = defineProblems({ InvalidChangesOptions: { code: 'CHANGES_INVALID_OPTIONS', message: 'changes plugin: %s' } })
export const { InvalidChangesOptions } = changesProblems

const HOUR_MS = 3_600_000

const Bounded = (minimum: number, maximum: number, fallback: number) =>
  Type.Integer({ minimum, maximum, default: fallback, errorMessage: `must be an integer from ${minimum} to ${maximum}` })

export const ChangesOptionsSchema = Type.Object({
  /** Events older than this are purged: a client resuming from further back gets a `reset`. */
  retentionHours: Bounded(1, 8760, 24),
  /** At most this many of the newest events are kept, whatever their age. */
  maxEvents: Bounded(1000, 2147483647, 1_000_000),
  /** Longest wait between reads of the log when no notification comes (one lost while the listener reconnected). */
  pollIntervalMs: Bounded(10, 60000, 1000),
  /** How often the purge runs. */
  purgeIntervalMs: Bounded(1000, 86_400_000, 60_000),
  /** Event streams one account may hold open at once on this process; 0: no cap. */
  maxStreamsPerAccount: Bounded(0, 100_000, 20),
  /** Event streams one client address (an IPv6 client's /64) may hold open at once on this process; 0: no cap. */
  maxStreamsPerAddress: Bounded(0, 100_000, 100)
})

export type ChangesOptions = Partial<Static<typeof ChangesOptionsSchema>>

declare module 'fastify' {
  interface FastifyInstance {
    /** The live change feed of the resources whose `events` route is on: subscribe, resume with since(), position(). */
    plinthChanges: ChangePump
    /** The open event streams, capped per account and per address, and told when an account's sessions end. */
    plinthStreams: StreamRegistry
  }
}

export interface StreamRegistry extends OpenStreams {
  /** Starts listening for account notices if it does not yet; resolves once it listens (or polls). */
  ready (): Promise<void>
}

/**
 * The open streams, and the LISTEN that tells them an account changed (db/sessions.ts notifies it when
 * sessions end): started with the first stream. Where no notification can come (a transaction pooler
 * without a listen URL), or one may have been lost while the listener reconnected, every account's
 * streams check their guard at each poll instead.
 */
function streamRegistry (app: App, { maxStreamsPerAccount, maxStreamsPerAddress, pollIntervalMs }: Static<typeof ChangesOptionsSchema>) {
  const streams = createOpenStreams({ maxPerAccount: maxStreamsPerAccount, maxPerAddress: maxStreamsPerAddress })
  const listen = app.plinthDb.listen
  let started: Promise<void> | undefined
  let listening: Listening | undefined
  let timer: NodeJS.Timeout | undefined
  let closed = false

  async function poll () {
    try {
      if (listening?.polled === true || await listening?.renew() === true) streams.checkAll()
    } catch (err) {
      app.log.warn({ err }, 'event streams: listening for account changes failed; retrying at the next poll')
    }
  }

  async function start () {
    if (listen === undefined) throw new Error('the database client cannot LISTEN: event streams need a client of db/client.ts')
    listening = await listen(ACCOUNTS_CHANNEL, (payload) => {
      const account = Number(payload)
      if (Number.isSafeInteger(account)) streams.accountChanged(account)
    })
    if (closed) {
      await listening.close()
      return
    }
    streams.listening(true)
    timer = setInterval(() => { poll().catch(() => {}) }, pollIntervalMs).unref()
  }

  app.addHook('onClose', async () => {
    closed = true
    clearInterval(timer)
    await started?.catch(() => {})
    await listening?.close()
  })

  return Object.assign(streams, {
    ready (): Promise<void> {
      started ??= start().catch((err: unknown) => {
        started = undefined
        throw err
      })
      return started
    }
  })
}

/** Decorates `plinthChanges`; its listener starts with the first subscriber, and stops with the app. The purge always runs. */
async function changesPlugin (app: App, opts: ChangesOptions) {
  const options = readOptions(ChangesOptionsSchema, opts, InvalidChangesOptions)
  const feed = createChangeFeed(app.plinthDb, {
    clock: app.plinthClock,
    pollIntervalMs: options.pollIntervalMs,
    batch: 500,
    retentionMs: options.retentionHours * HOUR_MS,
    maxEvents: options.maxEvents,
    onError: (err) => app.log.warn({ err }, 'change feed: reading the log failed; retrying at the next notification or poll')
  })
  const purge = () => feed.purge()
    .then((events) => { if (events > 0) app.log.debug({ events }, 'purged change events past the retention window') })
    .catch((err: unknown) => app.log.warn({ err }, 'purging change events failed'))
  const timer = setInterval(purge, options.purgeIntervalMs).unref()
  app.addHook('onClose', async () => {
    clearInterval(timer)
    await feed.close()
  })
  app.decorate('plinthChanges', feed)
  app.decorate('plinthStreams', streamRegistry(app, options))
}

export default fp(changesPlugin, { name: 'plinth-changes', fastify: '5.x', dependencies: ['plinth-db'], decorators: { fastify: ['plinthDb', 'plinthClock'] } })
