import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { sql } from 'drizzle-orm'
import t from 'tap'
import { connect } from '../../db/client.js'
import { connectReplicas } from '../../db/replicas.js'
import { rowsOf } from '../../db/raw-rows.js'
import { API_PREFIX } from '../../app.js'
import resourcePlugin from '../../routes/resources/index.js'
import { build, login, register } from '../support/app.js'
import { clusterSkip, startCluster } from '../support/cluster.js'
import { TEST_DATABASE_URL } from '../support/database.js'
import { readMetrics, valueOf } from '../support/metrics.js'
import { untilAnswered } from '../support/until.js'

const run = promisify(execFile)
// A real streaming replica, applying WAL 1 s late (scripts/cluster.sh); once per PostgreSQL run of the suite.
const skip = !TEST_DATABASE_URL ? 'the PostgreSQL run only (TEST_DATABASE_URL)' : clusterSkip
const pgCtl = (dir: string, action: 'start' | 'stop') => run('bash', ['-c',
  `runuser -u postgres -- "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/pg_ctl" ${action} -D "${dir}/replica" -w ` +
  (action === 'start' ? `-l "${dir}/replica.log"` : '-m immediate')])

t.test('a replica set', { skip }, async (t) => {
  const cluster = await startCluster(t, { replicaDelayMs: 1000 })
  const primary = await connect(cluster.primaryUrl)
  t.teardown(() => primary.close())
  await primary.db.execute(sql`create table if not exists notes (id int generated always as identity primary key, title text not null)`)
  const replicas = await connectReplicas(primary.db, { urls: [cluster.replicaUrl, cluster.primaryUrl], maxLagSeconds: 30, checkIntervalMs: 1000 })
  t.teardown(() => replicas.close())
  const position = async () => BigInt(rowsOf<{ lsn: string }>(await primary.db.execute(sql`select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint::text as lsn`))[0]!.lsn)
  const replicaDb = async () => (await replicas.pick(undefined))!
  const notesOn = async (db: Awaited<ReturnType<typeof replicaDb>>) => rowsOf<{ title: string }>(await db.execute(sql`select title from notes order by id`)).map((row) => row.title)

  await t.test('reports each replica; a URL that is no replica is down and never picked', async (t) => {
    await untilAnswered('the replica level', async () => (await replicas.check())[0]!.lag_bytes === 0 || undefined, 20_000)
    const [replica, primaryAsReplica] = await replicas.check()
    t.match(replica, { name: 'replica-1', status: 'ok', url: cluster.replicaUrl })
    t.match(primaryAsReplica, { name: 'replica-2', status: 'down', lag_bytes: null, lag_seconds: null })
    const before = replicas.reads()
    for (let i = 0; i < 4; i++) t.not(await replicaDb(), primary.db, 'only the real replica serves')
    t.same(replicas.reads(), { ...before, replica: before.replica + 4 }, 'each pick counted where it went')
  })

  await t.test('a floor the replica has not replayed sends the read to the primary, until it has', async (t) => {
    await primary.db.execute(sql`insert into notes (title) values ('fresh')`)
    const floor = await position()
    t.equal(await replicas.pick(floor), null, 'the primary: the replica is a second behind')
    t.equal(await replicas.pick('now'), null, 'and for a read that must see everything committed')
    t.notOk((await notesOn(await replicaDb())).includes('fresh'), 'a read with no floor of its own takes the replica as it is')
    const db = await untilAnswered('the replica replaying the write', async () => (await replicas.pick(floor)) ?? undefined, 20_000)
    t.ok((await notesOn(db)).includes('fresh'), 'then the replica, with the write')
  })

  await t.test('a replica that failed a read serves nothing until a check finds it up; a stopped one is down', async (t) => {
    const before = replicas.reads()
    replicas.failed(await replicaDb())
    t.equal(await replicas.pick(undefined), null, 'failed: the primary')
    t.same(replicas.reads(), { replica: before.replica + 1, primary: before.primary + 1, failed: before.failed + 1 })
    t.match((await replicas.check())[0], { status: 'ok' }, 'the next check finds it up')
    t.not(await replicas.pick(undefined), null)
    await pgCtl(cluster.dir, 'stop')
    t.match((await replicas.check())[0], { status: 'down', lag_bytes: null })
    t.equal(await replicas.pick(undefined), null, 'down: the primary')
    await pgCtl(cluster.dir, 'start')
    await untilAnswered('the replica back', async () => (await replicas.check())[0]!.status === 'ok' || undefined, 30_000)
    t.pass('back')
  })
})

t.test('an app on a replica: a session reads its own writes, a read the replica cannot serve runs on the primary', { skip }, async (t) => {
  const cluster = await startCluster(t, { replicaDelayMs: 1000 })
  const database = await connect(cluster.primaryUrl)
  t.teardown(() => database.close())
  const app = await build(t, { DATABASE_URL: cluster.primaryUrl, DATABASE_REPLICA_URLS: [cluster.replicaUrl], RESOURCES: [], METRICS_PORT: 0 }, { database })
  const scrape = async () => readMetrics(await app.plinthMetrics!.registry.metrics())
  const signedIn = app.plinthGuards.authenticate
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'records', guards: { read: signedIn, write: signedIn } })
  await app.ready()
  const writer = (await login(app, (await register(app, 'writer@example.com')).email)).access_token
  const reader = (await login(app, (await register(app, 'reader@example.com')).email)).access_token
  const auth = (token: string) => ({ authorization: `Bearer ${token}` })
  await untilAnswered('the replica level', async () => ((await app.inject('/api/v1/health/ready')).json().replicas[0].lag_bytes === 0) || undefined, 20_000)

  const created = await app.inject({ method: 'POST', url: '/api/v1/records', headers: auth(writer), payload: { title: 'mine' } })
  t.equal(created.statusCode, 201)
  const id = created.json().id as number
  t.equal((await app.inject({ url: `/api/v1/records/${id}`, headers: auth(writer) })).statusCode, 200, 'the writer reads its write at once')
  t.equal((await app.inject({ url: `/api/v1/records/${id}`, headers: auth(reader) })).statusCode, 404, 'a session that wrote nothing reads the replica, a second behind')
  const item = await app.inject({ method: 'POST', url: '/api/v1/items', headers: auth(writer), payload: { name: 'lamp', price: 3 } })
  t.equal(item.statusCode, 201)
  t.equal((await app.inject({ url: `/api/v1/items/${item.json().id}` })).statusCode, 200,
    'a read without a session (the catalog\'s are public) sees everything committed before it: the primary, while the replica is behind')

  const up = await scrape()
  const replica = { replica: 'replica-1' }
  t.equal(valueOf(up, 'plinth_db_replica_serving', replica), 1)
  t.equal(up.get('plinth_db_replica_lag_bytes')?.samples.length, 1, 'its lag, in bytes')
  t.equal(up.get('plinth_db_replica_lag_seconds')?.samples.length, 1, 'and in seconds')
  t.ok(valueOf(up, 'plinth_db_reads_total', { target: 'replica' }) >= 1, 'the reader\'s read went to the replica')
  t.ok(valueOf(up, 'plinth_db_reads_total', { target: 'primary' }) >= 2, 'the writer\'s and the anonymous read to the primary')
  t.equal(valueOf(up, 'plinth_db_replica_failed_reads_total'), 0)

  await pgCtl(cluster.dir, 'stop')
  const answers = await Promise.all([1, 2, 3].map(() => app.inject({ url: `/api/v1/records/${id}`, headers: auth(reader) })))
  t.same(answers.map((answer) => answer.statusCode), [200, 200, 200], 'the replica gone mid-read: each read runs again on the primary')
  t.match((await app.inject('/api/v1/health/ready')).json(), { status: 'ok', replicas: [{ name: 'replica-1', status: 'down' }] })
  const down = await scrape()
  t.equal(valueOf(down, 'plinth_db_replica_serving', replica), 0)
  t.equal(down.get('plinth_db_replica_lag_seconds')?.samples.length, 0, 'no lag for a replica that is down, rather than its last')
  const { replica: onReplica, primary: onPrimary, failed } = app.plinthReplicas!.reads()
  t.equal(valueOf(down, 'plinth_db_reads_total', { target: 'replica' }), onReplica, 'the scrape says what the replica set counted')
  t.equal(valueOf(down, 'plinth_db_reads_total', { target: 'primary' }), onPrimary)
  t.equal(valueOf(down, 'plinth_db_replica_failed_reads_total'), failed, 'a read the replica failed, if the stop came before a check found it')
})
