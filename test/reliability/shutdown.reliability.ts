import { mkdtemp, rm } from 'node:fs/promises'
import { connect } from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { acknowledged, listedIds, startLoad, tally, writes } from '../support/load.js'
import { hasPostgresServer, privatePostgres } from '../support/postgres-server.js'
import { startServer, type ServerProcess } from '../support/server-process.js'

// server.ts's close-with-grace delay: past it the process exits 1 without closing the database.
const GRACE_MS = 10_000

/**
 * Opens a new connection every 10 ms until the process exits: when was the first refused, and was
 * any accepted after that. A connection still queued when the listener closes is reset by the
 * kernel (ECONNRESET), which no server can prevent; anything else is reported.
 */
async function probeNewConnections (port: number, server: ServerProcess) {
  let firstRefused: number | undefined
  let acceptedAfterRefusal = 0
  const other: string[] = []
  while (server.child.exitCode === null && server.child.signalCode === null) {
    const result = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => { socket.destroy(); resolve('accepted') })
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
    })
    if (result === 'ECONNREFUSED') firstRefused ??= performance.now()
    else if (result === 'accepted' && firstRefused !== undefined) acceptedAfterRefusal++
    else if (result !== 'accepted' && result !== 'ECONNRESET') other.push(result)
    await sleep(10)
  }
  return { firstRefused, acceptedAfterRefusal, other }
}

async function shutdownUnderLoad (t: Test, env: Record<string, string>) {
  const first = startServer(t, env)
  const base = await first.listening
  const load = startLoad({ base, concurrency: 24, next: writes, maxMs: 60_000 })
  await load.warmedUp(300)

  const signalAt = performance.now()
  first.child.kill('SIGTERM')
  const probe = probeNewConnections(Number(new URL(base).port), first)
  const [code, signal] = await first.exited
  const exitedAt = performance.now()
  const outcomes = await load.stop()
  const { firstRefused, acceptedAfterRefusal, other } = await probe

  t.comment(`exit ${code} ${(exitedAt - signalAt).toFixed(0)} ms after SIGTERM; new connections refused from ${firstRefused === undefined ? 'never' : `${(firstRefused - signalAt).toFixed(0)} ms`}`)
  t.comment(JSON.stringify(tally(outcomes)))
  t.same([code, signal], [0, null], 'exits 0 on SIGTERM')
  t.ok(exitedAt - signalAt < GRACE_MS, 'within the grace period')
  t.not(firstRefused, undefined, 'new connections are refused after the signal')
  t.equal(acceptedAfterRefusal, 0, 'and stay refused')
  t.same(other, [], 'no other connection error')

  const inFlight = outcomes.filter((outcome) => outcome.start < signalAt)
  t.same(inFlight.filter((outcome) => outcome.status !== 201), [], 'every request sent before the signal was answered 201')
  const late = outcomes.filter((outcome) => outcome.start >= signalAt)
  t.same(late.filter((outcome) => outcome.status !== 201 && outcome.error !== 'ECONNREFUSED'), [],
    'a request after the signal is served or refused, never cut off')

  const incoming = new Set(first.logs.filter((entry) => entry.msg === 'incoming request').map((entry) => entry.reqId))
  const completed = new Set(first.logs.filter((entry) => entry.msg === 'request completed').map((entry) => entry.reqId))
  t.same([...incoming].filter((id) => !completed.has(id)), [], 'the server answered every request it received')

  const second = startServer(t, env)
  const again = await second.listening
  const items = acknowledged(outcomes, 'item')
  const records = acknowledged(outcomes, 'record')
  t.comment(`${items.length} items and ${records.length} records acknowledged`)
  t.ok(items.length > 0 && records.length > 0, 'the load wrote both kinds')
  // Equal, not merely included: a write done without its 201 reaching the client would show here.
  t.same(await listedIds(again, '/api/v1/items'), items, 'every acknowledged item is stored, and nothing else')
  t.same(await listedIds(again, '/api/v1/records'), records, 'every acknowledged record is stored, and nothing else')
  second.child.kill('SIGTERM')
  t.same(await second.exited, [0, null])
}

t.test('SIGTERM under write load on PostgreSQL', {
  skip: hasPostgresServer() ? false : 'no PostgreSQL server binaries on this machine'
}, async (t) => {
  const pg = await privatePostgres(t)
  await shutdownUnderLoad(t, { DATABASE_URL: pg.url })
})

t.test('SIGTERM under write load on PGlite: closed cleanly, the folder opens again', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-shutdown-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await shutdownUnderLoad(t, { DATABASE_URL: `pglite://${dir}` })
})
