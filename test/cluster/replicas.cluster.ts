import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { rm, writeFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import t from 'tap'
import { PASSWORD } from '../support/app.js'
import { clusterClient, type ClusterClient } from '../support/cluster-http.js'
import { clusterSkip, instance, startTopology } from '../support/cluster.js'
import { listenPort } from '../support/cluster-processes.js'
import { untilAnswered } from '../support/until.js'

const run = promisify(execFile)
// Reads of lists and rows on a streaming replica that applies WAL 1.5 s after the primary commits,
// so its lag is real, through PgBouncer in transaction mode: everything a client sees is the primary's truth.
const skip = clusterSkip
const DELAY_MS = 1500
const NOTES = {
  notes: {
    fields: { type: 'object', required: ['title'], properties: { title: { type: 'string', minLength: 1, maxLength: 200 } } },
    guards: { read: 'authenticated', write: 'authenticated' }
  }
}

interface Replica { name: string, status: string, lag_bytes: number | null, lag_seconds: number | null }

t.test('reads on a lagging replica, read-your-writes across instances', { skip }, async (t) => {
  const resourcesFile = `/tmp/plinth-cluster-replica-notes-${process.pid}.json`
  await writeFile(resourcesFile, JSON.stringify(NOTES))
  t.teardown(() => rm(resourcesFile, { force: true }))
  const { cluster, instances } = await startTopology(t, {
    instances: 2,
    replicaDelayMs: DELAY_MS,
    env: (cluster) => ({
      DATABASE_URL: cluster.bouncerTransactionUrl,
      DATABASE_POOL_MODE: 'transaction',
      DATABASE_LISTEN_URL: cluster.primaryUrl,
      DATABASE_REPLICA_URLS: cluster.replicaUrl,
      RESOURCES_FILE: resourcesFile
    })
  })
  const [one, two] = instances as [typeof instances[0], typeof instances[0]]
  let address = 40
  const client = (base: string) => {
    const made = clusterClient(base, `127.0.0.${++address}`)
    t.teardown(() => made.close())
    return made
  }
  const session = async (via: ClusterClient) => {
    const email = `replica-${randomUUID()}@example.com`
    t.equal((await via.send('/api/v1/auth/register', { json: { email, password: PASSWORD } })).status, 201)
    const login = await via.send('/api/v1/auth/login', { form: { grant_type: 'password', username: email, password: PASSWORD } })
    return login.json.access_token as string
  }
  const replicasOf = async (via: ClusterClient) => (await via.send('/api/v1/health/ready')).json.replicas as Replica[]
  const a = client(one.base)
  const b = client(two.base)
  // Settled: the registrations and logins above reached the replica, so what follows is each test's own lag.
  const settle = () => untilAnswered('the replica level with the primary', async () => (await replicasOf(a))[0]?.lag_bytes === 0 || undefined, 20_000)

  await t.test('the readiness probe reports the replica, level once nothing is written', async (t) => {
    await settle()
    const [replica] = await replicasOf(a)
    t.match(replica, { name: 'replica-1', status: 'ok', lag_bytes: 0, lag_seconds: 0 })
    t.notOk(JSON.stringify(replica).includes('password'), 'no secret in it')
  })

  await t.test('a client reads its own write at once on another instance; another client reads the replica, behind until it replays', async (t) => {
    const writer = await session(a)
    const reader = await session(b)
    await settle()
    const created = await a.send('/api/v1/notes/', { json: { title: 'written on plinth-1' }, token: writer })
    t.equal(created.status, 201)
    const id = created.json.id as number
    const own = await b.send(`/api/v1/notes/${id}`, { token: writer })
    t.equal(own.status, 200, 'the writer, on plinth-2 at once: the primary serves it until the replica has its write')
    t.equal(own.json.title, 'written on plinth-1')
    const ownList = await b.send('/api/v1/notes/?limit=100', { token: writer })
    t.ok(ownList.json.some((note: { id: number }) => note.id === id), 'in its list too')
    const other = await b.send(`/api/v1/notes/${id}`, { token: reader })
    t.equal(other.status, 404, 'a client that wrote nothing reads the replica, 1.5 s behind: the row is not there yet')
    const later = await untilAnswered('the replica replaying the write', async () => {
      const answer = await b.send(`/api/v1/notes/${id}`, { token: reader })
      return answer.status === 200 ? answer : undefined
    }, 20_000)
    t.equal(later.json.title, 'written on plinth-1', 'then it is')
  })

  await t.test('an update and a delete are read back by their writer at once, everywhere', async (t) => {
    const writer = await session(a)
    const created = await a.send('/api/v1/notes/', { json: { title: 'first' }, token: writer })
    const id = created.json.id as number
    await settle()
    t.equal((await b.send(`/api/v1/notes/${id}`, { method: 'PATCH', json: { title: 'second' }, token: writer })).status, 200)
    t.equal((await a.send(`/api/v1/notes/${id}`, { token: writer })).json.title, 'second', 'the update, on the other instance')
    t.equal((await a.send(`/api/v1/notes/${id}`, { method: 'DELETE', token: writer })).status, 204)
    t.equal((await b.send(`/api/v1/notes/${id}`, { token: writer })).status, 404, 'the delete, on the other instance')
  })

  await t.test('a replica behind past DATABASE_REPLICA_MAX_LAG_SECONDS is reported lagging and serves no reads', async (t) => {
    const strict = instance(t, cluster, 'plinth-strict', await listenPort(), { ...one.env, DATABASE_REPLICA_MAX_LAG_SECONDS: '1' })
    await strict.start()
    const s = client(strict.base)
    const writer = await session(a)
    const reader = await session(s)
    await settle()
    // Writes every 100 ms keep the replica 1.5 s behind: past a bound of 1 s.
    const state = { writing: true }
    const made: number[] = []
    const writes = (async () => {
      while (state.writing) {
        const answer = await a.send('/api/v1/notes/', { json: { title: 'steady' }, token: writer })
        if (answer.status === 201) made.push(answer.json.id as number)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    })()
    try {
      const lagging = await untilAnswered('the replica reported lagging', async () => {
        const [replica] = await replicasOf(s)
        return replica?.status === 'lagging' ? replica : undefined
      }, 20_000)
      t.ok(lagging.lag_seconds! > 1, `lag_seconds ${lagging.lag_seconds} is past the bound`)
      t.ok(lagging.lag_bytes! > 0, 'and WAL is waiting')
      const last = made.at(-1)!
      const fresh = await s.send(`/api/v1/notes/${last}`, { token: reader })
      t.equal(fresh.status, 200, 'a client that wrote nothing still reads the newest row: the primary serves it')
    } finally {
      state.writing = false
      await writes
    }
    await untilAnswered('the replica caught up and serving again', async () => (await replicasOf(s))[0]?.status === 'ok' || undefined, 20_000)
  })

  await t.test('a replica down: readiness says so, every read still answers from the primary, and it serves again once back', async (t) => {
    const writer = await session(a)
    const reader = await session(b)
    const created = await a.send('/api/v1/notes/', { json: { title: 'while the replica is down' }, token: writer })
    await settle()
    await run('bash', ['-c', `runuser -u postgres -- "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/pg_ctl" stop -D "${cluster.dir}/replica" -m immediate -w`])
    const statuses: number[] = []
    for (let i = 0; i < 20; i++) statuses.push((await b.send(`/api/v1/notes/${created.json.id}`, { token: reader })).status)
    t.same([...new Set(statuses)], [200], 'twenty reads with the replica gone: every one 200, none an error')
    const down = await untilAnswered('the replica reported down', async () => {
      const [replica] = await replicasOf(b)
      return replica?.status === 'down' ? replica : undefined
    }, 20_000)
    t.match(down, { status: 'down', lag_bytes: null, lag_seconds: null })
    t.equal((await b.send('/api/v1/health/ready')).status, 200, 'the instance stays ready: the primary answers')
    await run('bash', ['-c', `runuser -u postgres -- "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/pg_ctl" start -D "${cluster.dir}/replica" -l "${cluster.dir}/replica.log" -w`])
    await untilAnswered('the replica back and serving', async () => (await replicasOf(b))[0]?.status === 'ok' || undefined, 30_000)
    t.pass('back')
  })
})
