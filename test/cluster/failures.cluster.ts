import { randomUUID } from 'node:crypto'
import t from 'tap'
import { clusterClient } from '../support/cluster-http.js'
import { loadLoops, type LoadAnswer } from '../support/cluster-load.js'
import { untilServing } from '../support/cluster-nginx.js'
import { clusterSkip, startTopology } from '../support/cluster.js'
import { until } from '../support/until.js'

// Instances die and restart under load, behind nginx: what clients see, and what the database keeps.
const skip = clusterSkip
const CONCURRENCY = 8

const last = (answer: LoadAnswer) => answer.upstreams.at(-1)
function tally (answers: LoadAnswer[]) {
  const counts = new Map<string, number>()
  for (const answer of answers) {
    const kind = answer.error ? `no answer (${answer.error})` : String(answer.status)
    counts.set(kind, (counts.get(kind) ?? 0) + 1)
  }
  return [...counts].map(([kind, count]) => `${kind}: ${count}`).join(', ')
}

t.test('instances dying and restarting under load', { skip }, async (t) => {
  const { cluster, instances, nginx } = await startTopology(t)

  await t.test('kill -9 of an instance under writes: every acknowledged write is kept, only its requests in flight fail', async (t) => {
    const run = randomUUID()
    const client = clusterClient(nginx.base, '127.0.0.41', CONCURRENCY)
    t.teardown(() => client.close())
    const load = loadLoops(t, client, CONCURRENCY, (_client, loop, i) => ({ method: 'POST', path: '/api/v1/items', json: { name: `kill ${run} ${loop}-${i}`, price: i } }))
    await load.reach(150)
    const victim = instances[1]!
    const killedAfter = load.answers.length
    const logsBefore = victim.logs.length
    await victim.stop('SIGKILL')
    await load.reach(killedAfter + 100)
    // Past fail_timeout nginx tries the victim again: its connect is refused, so even a POST moves on.
    const probedAgain = (answer: LoadAnswer) => answer.upstreams.length > 1 && answer.upstreams[0] === victim.address && answer.status === 201
    await until('nginx to try the dead instance again', () => load.answers.find(probedAgain), 20_000)
    const answers = await load.stop()

    const created = answers.filter((answer) => answer.status === 201)
    const failed = answers.filter((answer) => answer.status !== 201)
    const ids = created.map((answer) => answer.id!)
    const found = await cluster.sql<Array<{ id: number }>>`select id from items where id = any(${ids}::int[])`
    const stored = await cluster.sql<Array<{ count: number }>>`select count(*)::int as count from items where name like ${`kill ${run} %`}`
    // Requests the victim read but never answered: in flight when it died.
    const completed = new Set(victim.logs.filter((entry) => entry.msg === 'request completed').map((entry) => entry.reqId))
    const unanswered = victim.logs.filter((entry) => entry.msg === 'incoming request' && !completed.has(entry.reqId)).length
    t.comment(`kill -9 after ${killedAfter} answers; ${answers.length} requests: ${created.length} acknowledged (201), ${failed.length} errors [${tally(failed)}], ` +
      `${found.length} acknowledged rows found, ${stored[0]?.count} rows stored in all; ${unanswered} requests read by the victim and never answered (its log), ${victim.logs.length - logsBefore} of its log lines read after the kill`)

    t.equal(found.length, created.length, 'every acknowledged write is in the primary')
    t.ok(failed.length <= CONCURRENCY, `${failed.length} errors, at most the ${CONCURRENCY} requests that could be in flight`)
    t.ok(failed.every((answer) => answer.status === 502 && last(answer) === victim.address), 'each a 502 from nginx for a POST it had sent to the victim')
    const firstFailure = answers.findIndex((answer) => answer.status !== 201)
    t.ok(failed.every((answer) => answer.sentAfter <= firstFailure), 'each sent before the first 502: nginx sends nothing to the victim once it failed (max_fails=1)')
    t.equal(new Set(failed.map((answer) => answer.loop)).size, failed.length, 'no client loop failed twice')
    const after = created.filter((answer) => answer.sentAfter >= killedAfter)
    t.ok(after.length > 0 && after.every((answer) => last(answer) !== victim.address), `the ${after.length} writes sent after the kill were answered by the survivors`)
    const errorLines = nginx.errorLog().split('\n').filter((line) => line.includes(victim.address) && /\[error\]/.test(line))
    t.comment(`nginx error log about ${victim.name}: ${errorLines.length} lines, e.g. ${errorLines.slice(0, 2).map((line) => line.replace(/^.*\[error\] \d+#\d+: \*\d+ /, '')).join(' | ')}`)

    await victim.start()
    await untilServing(nginx, victim)
    t.pass(`${victim.name} restarted and nginx sends it requests again`)
  })

  await t.test('a rolling restart by SIGTERM under load fails no request', async (t) => {
    const run = randomUUID()
    const client = clusterClient(nginx.base, '127.0.0.42', CONCURRENCY)
    t.teardown(() => client.close())
    // Writes and reads of what was written, one after another in each loop.
    const load = loadLoops(t, client, CONCURRENCY, (_client, loop, i, previous) => previous?.id !== undefined && i % 2 === 1
      ? { path: `/api/v1/items/${previous.id}` }
      : { method: 'POST', path: '/api/v1/items', json: { name: `roll ${run} ${loop}-${i}`, price: i } })
    await load.reach(100)
    const exits = []
    for (const one of instances) {
      const from = load.answers.length
      exits.push(await one.stop('SIGTERM'))
      await one.start()
      await untilServing(nginx, one)
      t.comment(`${one.name} restarted: ${load.answers.length - from} answers meanwhile`)
      await load.reach(load.answers.length + 50)
    }
    const answers = await load.stop()
    const failed = answers.filter((answer) => answer.status < 200 || answer.status >= 300)
    const writes = answers.filter((answer) => answer.method === 'POST')
    t.comment(`${answers.length} requests (${writes.length} writes), ${failed.length} failed [${tally(failed)}]`)
    t.same(exits, instances.map(() => [0, null]), 'each instance exited 0 on SIGTERM')
    if (failed.length > 0) {
      t.comment(`failed: ${JSON.stringify(failed.slice(0, 10))}`)
      t.comment(`nginx error log:\n${nginx.problems().slice(-20).join('\n')}`)
    }
    t.equal(failed.length, 0, 'no request failed')
    const ids = writes.filter((answer) => answer.status === 201).map((answer) => answer.id!)
    const found = await cluster.sql<Array<{ id: number }>>`select id from items where id = any(${ids}::int[])`
    t.equal(found.length, ids.length, 'every acknowledged write is in the primary')
  })
})
