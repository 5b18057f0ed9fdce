import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { httpRequest } from '../support/http.js'
import { startLoad, tally, type Call, type Outcome } from '../support/load.js'
import { hasPostgresServer, privatePostgres } from '../support/postgres-server.js'
import { PROBLEM_TYPE } from '../support/responses.js'
import { startServer } from '../support/server-process.js'

// Generous on purpose: the machine is shared and slow; the point is "answers", not "answers fast".
// A request to a stopped PostgreSQL fails on ECONNREFUSED at once, and a connection attempt gives
// up after postgres.js's connect_timeout (5 s), so 10 s only fails on a hang.
const DOWN_ANSWER_MS = 10_000
const RECOVERY_MS = 10_000

const ok = (outcome: Outcome) => outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300
const ms = (value: number) => `${value.toFixed(0)} ms`

t.test('PostgreSQL stops and starts again under load: 503 while down, 2xx again without a restart', {
  skip: hasPostgresServer() ? false : 'no PostgreSQL server binaries on this machine'
}, async (t) => {
  const pg = await privatePostgres(t)
  const server = startServer(t, { DATABASE_URL: pg.url })
  const base = await server.listening
  const created = await httpRequest(base, '/api/v1/items', { json: { name: 'kept', price: 1 } })
  const { id } = created.json as { id: number }

  const mix: Call[] = [
    { kind: 'item get', method: 'GET', path: `/api/v1/items/${id}` },
    { kind: 'item post', method: 'POST', path: '/api/v1/items', body: { name: 'lamp', price: 2 } },
    { kind: 'record post', method: 'POST', path: '/api/v1/records/', body: { title: 'note' } },
    { kind: 'ready', method: 'GET', path: '/api/v1/health/ready' }
  ]
  const load = startLoad({ base, concurrency: 8, pauseMs: 20, maxMs: 120_000, next: (loop, n) => mix[(loop + n) % mix.length] as Call })
  await sleep(3000)

  const stopping = performance.now()
  await pg.stop()
  const down = performance.now()
  await sleep(5000)
  const live = await httpRequest(base, '/api/v1/health')
  const restarting = performance.now()
  await pg.start()
  const up = performance.now()

  const firstOk = (kind: string) => load.outcomes.find((outcome) => outcome.kind === kind && outcome.start >= up && ok(outcome))
  for (const started = Date.now(); mix.some(({ kind }) => !firstOk(kind)) && Date.now() - started < 30_000;) await sleep(100)
  await sleep(3000)
  const outcomes = await load.stop()

  t.comment(`PostgreSQL stop took ${ms(down - stopping)}, start ${ms(up - restarting)}; ${outcomes.length} requests: ${JSON.stringify(tally(outcomes))}`)
  t.same(outcomes.filter((outcome) => outcome.error), [], 'no request failed at the socket level')
  t.same(outcomes.filter((outcome) => ![200, 201, 503].includes(outcome.status as number)), [], 'every answer is a success or a 503')
  t.same(outcomes.filter((outcome) => outcome.status === 503 &&
    (outcome.contentType !== PROBLEM_TYPE || outcome.code !== 'DATABASE_UNAVAILABLE' || outcome.retryAfter !== '5')),
  [], 'every 503 is a DATABASE_UNAVAILABLE problem document with Retry-After')

  const whileDown = outcomes.filter((outcome) => outcome.start >= down && outcome.start < restarting)
  const slowest = Math.max(...outcomes.filter((outcome) => outcome.start >= stopping && outcome.start < restarting).map((outcome) => outcome.end - outcome.start))
  t.comment(`while down: ${whileDown.length} requests, slowest answer from the stop to the start ${ms(slowest)}`)
  for (const { kind } of mix) {
    const answers = whileDown.filter((outcome) => outcome.kind === kind)
    t.ok(answers.length > 0 && answers.every((outcome) => outcome.status === 503), `${kind}: 503 while PostgreSQL is down`)
  }
  t.ok(slowest < DOWN_ANSWER_MS, `no hang: every answer within ${DOWN_ANSWER_MS} ms`)
  t.equal(live.status, 200, 'liveness answers while the database is down')

  const recovered = mix.map(({ kind }) => [kind, firstOk(kind)] as const)
  t.comment(`first 2xx after PostgreSQL accepts connections: ${recovered.map(([kind, outcome]) => `${kind} ${outcome ? ms(outcome.end - up) : 'never'}`).join(', ')}`)
  for (const [kind, outcome] of recovered) {
    t.ok(outcome && outcome.end - up < RECOVERY_MS, `${kind}: 2xx again within ${RECOVERY_MS} ms, without a restart`)
  }
  const ready = recovered.find(([kind]) => kind === 'ready')?.[1]
  t.same(outcomes.filter((outcome) => ready && outcome.start > ready.end && !ok(outcome)), [], 'every request after readiness returned is a success')
  t.same([server.child.exitCode, server.child.signalCode], [null, null], 'the process stayed up throughout')
})
