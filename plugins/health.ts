import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { coalesced } from '../concurrency/batch.js'
import type { ReplicaReport } from '../db/replicas.js'
import { addSchemas, ref } from '../schemas/common.js'
import { ProblemSchema, problemResponses } from '../schemas/error.js'
import { HealthSchema } from '../schemas/health.js'
import { documentRoutes } from './docs.js'
import { neverShed } from './overload.js'
import { defineProblems } from '../http/problem-error.js'
import { trailingSlashAliases } from '../http/trailing-slash.js'

const READY_TIMEOUT_MS = 2000

/** Every code this plugin throws: the readiness probe's 503, with the Retry-After of every DATABASE_UNAVAILABLE. */
export const healthProblems = defineProblems({
  NotReady: { status: 503, code: 'DATABASE_UNAVAILABLE', message: 'The database does not answer', headers: { 'retry-after': '5' } }
})
const { NotReady: NotReadyError } = healthProblems

async function within (ms: number, check: () => Promise<void>) {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  try {
    await Promise.race([check(), timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** What anyone may see of a replica: its state, never where it is or who connects to it. */
const stateOf = (report: ReplicaReport) => ({ name: report.name, status: report.status, lag_bytes: report.lag_bytes, lag_seconds: report.lag_seconds })

/** Liveness (no I/O, so a slow database never restarts a healthy process) and readiness. */
const health: FastifyPluginAsyncTypebox = async (app) => {
  addSchemas(app, [ProblemSchema, HealthSchema])
  documentRoutes(app)
  trailingSlashAliases(app)
  // The probes that arrive in one event-loop turn share one ping: its answer is as fresh for all.
  const ping = coalesced((_key: 'ping') => within(READY_TIMEOUT_MS, () => app.plinthDb.ping()), (key) => key)
  const replicas = app.hasDecorator('plinthReplicas') ? app.plinthReplicas : null

  // Probes are never shed: a busy process is alive, and readiness asks the database itself.
  app.get('/health', {
    config: neverShed,
    schema: {
      operationId: 'getHealth',
      summary: 'Liveness probe',
      tags: ['health'],
      response: { 200: ref(HealthSchema) }
    }
  }, async function liveness () {
    return { status: 'ok' as const }
  })

  app.get('/health/ready', {
    config: neverShed,
    schema: {
      operationId: 'getReadiness',
      summary: 'Readiness probe: 200 when the database answers, with the state of each replica (never its address)',
      tags: ['health'],
      response: { 200: ref(HealthSchema), ...problemResponses(503) }
    }
  }, async function readiness (request) {
    try {
      await ping('ping')
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed')
      throw new NotReadyError()
    }
    // A replica down or behind only sends its reads to the primary: the instance stays ready.
    if (replicas === null) return { status: 'ok' as const }
    let reports = replicas.reports()
    await within(READY_TIMEOUT_MS, async () => { reports = await replicas.check() }).catch(() => {})
    return { status: 'ok' as const, replicas: reports.map(stateOf) }
  })
}

export default fp(health, { name: 'plinth-health', fastify: '5.x', dependencies: ['plinth-db'], encapsulate: true })
