import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import postgres from 'postgres'
import t, { type Test } from 'tap'
import { acknowledged, listedIds, startLoad, tally, writes } from '../support/load.js'
import { httpRequest } from '../support/http.js'
import { hasPostgresServer, privatePostgres } from '../support/postgres-server.js'
import { startServer } from '../support/server-process.js'
import { rawOptions } from '../support/database.js'

/**
 * kill -9 of the server under a write load; `crash` may take down more (PostgreSQL itself) and
 * `recover` bring it back. After a restart on the same database, no acknowledged write is missing.
 */
async function crashUnderLoad (t: Test, env: Record<string, string>, crash = async () => {}, recover = async () => {}) {
  const first = startServer(t, env)
  const base = await first.listening
  const load = startLoad({ base, concurrency: 24, next: writes, maxMs: 60_000 })
  await load.warmedUp(300)

  first.child.kill('SIGKILL')
  await crash()
  await first.exited
  const outcomes = await load.stop()
  await recover()
  t.comment(JSON.stringify(tally(outcomes)))

  const started = Date.now()
  const second = startServer(t, env)
  const again = await second.listening
  t.equal((await httpRequest(again, '/api/v1/health/ready')).status, 200, 'the database opens after the crash')
  t.comment(`restart after the crash: ${Date.now() - started} ms`)
  for (const [kind, path] of [['item', '/api/v1/items'], ['record', '/api/v1/records']] as const) {
    const acked = acknowledged(outcomes, kind)
    const stored = new Set(await listedIds(again, path))
    const missing = acked.filter((id) => !stored.has(id))
    // Extra rows are writes whose 201 the kill cut off: committed, never acknowledged.
    t.comment(`${kind}: ${acked.length} acknowledged, ${stored.size} stored, ${missing.length} missing`)
    t.ok(acked.length > 0, `the load wrote ${kind}s`)
    t.same(missing, [], `every acknowledged ${kind} is stored`)
  }
  second.child.kill('SIGTERM')
  t.same(await second.exited, [0, null])
}

// PGlite commits through fs.writeSync, so the kernel holds every acknowledged write (db/client.ts).
// Tried with synchronous_commit=off: all 494 acknowledged writes were gone after the restart.
t.test('kill -9 under write load on PGlite: the folder opens and keeps every acknowledged write', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-crash-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await crashUnderLoad(t, { DATABASE_URL: `pglite://${dir}` })
})

t.test('kill -9 of the server and of PostgreSQL together under write load: no acknowledged write is lost', {
  skip: hasPostgresServer() ? false : 'no PostgreSQL server binaries on this machine'
}, async (t) => {
  const pg = await privatePostgres(t)
  const admin = postgres(pg.url, rawOptions)
  const [{ setting }] = await admin`select setting from pg_settings where name = 'data_directory'` as unknown as [{ setting: string }]
  await admin.end()
  // As at a power cut minus the kernel: the postmaster dies at once, so commits live only if the
  // WAL reached the operating system before the 201 left (with synchronous_commit=off, 10 of 305
  // acknowledged writes were lost).
  const killPostgres = async () => {
    const pid = Number((await readFile(join(setting, 'postmaster.pid'), 'utf8')).split('\n')[0])
    process.kill(pid, 'SIGKILL')
  }
  await crashUnderLoad(t, { DATABASE_URL: pg.url }, killPostgres, async () => { await pg.start() })
})
