import { Type, type Static } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { createChangeFeed, type ChangePump } from '../db/resource-events.js'
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
  purgeIntervalMs: Bounded(1000, 86_400_000, 60_000)
})

export type ChangesOptions = Partial<Static<typeof ChangesOptionsSchema>>

declare module 'fastify' {
  interface FastifyInstance {
    /** The live change feed of the resources whose `events` route is on: subscribe, resume with since(), position(). */
    plinthChanges: ChangePump
  }
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
}

export default fp(changesPlugin, { name: 'plinth-changes', fastify: '5.x', dependencies: ['plinth-db'], decorators: { fastify: ['plinthDb', 'plinthClock'] } })
