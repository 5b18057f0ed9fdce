import { randomUUID } from 'node:crypto'
import { rm, writeFile } from 'node:fs/promises'
import postgres from 'postgres'
import t, { type Test } from 'tap'
import { PASSWORD } from '../support/app.js'
import { clusterClient, type ClusterClient } from '../support/cluster-http.js'
import { clusterSkip, startTopology } from '../support/cluster.js'
import { until, untilAnswered } from '../support/until.js'

// The HTTP contract as a client of the reference deployment sees it: every request through nginx,
// to three plinth processes on PgBouncer in front of a primary with a streaming replica.
const skip = clusterSkip
const NOTES = {
  notes: {
    fields: {
      type: 'object',
      required: ['title'],
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 200 },
        priority: { type: 'integer', minimum: 1, maximum: 5, default: 3 },
        tags: { type: 'array', items: { type: 'string' }, default: [] }
      }
    },
    indexes: ['priority']
  }
}

t.test('the HTTP contract through nginx', { skip }, async (t) => {
  const resourcesFile = `/tmp/plinth-cluster-notes-${process.pid}.json`
  await writeFile(resourcesFile, JSON.stringify(NOTES))
  t.teardown(() => rm(resourcesFile, { force: true }))
  const { cluster, instances, nginx } = await startTopology(t, { env: { RESOURCES_FILE: resourcesFile } })
  const client = clusterClient(nginx.base, '127.0.0.11')
  t.teardown(() => client.close())
  const addresses = new Set(instances.map((one) => one.address))

  await t.test('the topology: both PgBouncers answer, the replica streams what the primary commits', async (t) => {
    const replica = postgres(cluster.replicaUrl, { max: 1, onnotice: () => {} })
    t.teardown(() => replica.end())
    for (const [mode, url] of [['session', cluster.bouncerSessionUrl], ['transaction', cluster.bouncerTransactionUrl]]) {
      const bouncer = postgres(url!, { max: 1, prepare: false, onnotice: () => {} })
      const [answer] = await bouncer<Array<{ users: number }>>`select count(*)::int as users from users`
      await bouncer.end()
      t.ok(answer!.users >= 0, `the ${mode} pooler reaches the primary's database`)
    }
    const [row] = await replica<Array<{ recovery: boolean }>>`select pg_is_in_recovery() as recovery`
    t.equal(row?.recovery, true, 'the replica is a hot standby')
    const email = `replicated-${randomUUID()}@example.com`
    t.equal((await client.send('/api/v1/auth/register', { json: { email, password: PASSWORD } })).status, 201)
    const rows = await untilAnswered('the registration on the replica', async () => {
      const found = await replica`select email from users where email = ${email}`
      return found.length === 1 ? found : undefined
    })
    t.equal(rows[0]!.email, email, 'a registration through nginx and PgBouncer reaches the replica')
  })

  await t.test('nginx spreads requests over the three instances and says which answered', async (t) => {
    const seen = new Set<string>()
    for (let i = 0; i < 12; i++) {
      const answer = await client.send('/api/v1/health')
      t.equal(answer.status, 200)
      seen.add(String(answer.headers.get('x-upstream')))
    }
    t.same(seen, addresses, 'each instance answered some')
  })

  await t.test('a reload of nginx takes an instance out of the upstream and puts it back', async (t) => {
    const [out, ...kept] = instances as [typeof instances[0], ...typeof instances]
    await nginx.reload(kept)
    const during = new Set<string>()
    for (let i = 0; i < 10; i++) during.add(String((await client.send('/api/v1/health')).headers.get('x-upstream')))
    t.same(during, new Set(kept.map((one) => one.address)), `${out.name} answers nothing, the others all`)
    await nginx.reload(instances)
    const after = new Set<string>()
    for (let i = 0; i < 12; i++) after.add(String((await client.send('/api/v1/health')).headers.get('x-upstream')))
    t.same(after, addresses, 'all three again')
  })

  await t.test('register, login, refresh, me, logout', async (t) => {
    const email = `contract-${randomUUID()}@example.com`
    const registered = await client.send('/api/v1/auth/register', { json: { email, password: PASSWORD } })
    t.equal(registered.status, 201)
    t.equal(registered.json.email, email)
    const login = await client.send('/api/v1/auth/login', { form: { grant_type: 'password', username: email, password: PASSWORD } })
    t.equal(login.status, 200, 'the OAuth password form')
    t.equal(login.headers.get('cache-control'), 'no-store')
    t.equal(login.json.token_type, 'bearer')
    const me = await client.send('/api/v1/users/me', { token: login.json.access_token })
    t.equal(me.status, 200)
    t.equal(me.json.email, email)
    const refreshed = await client.send('/api/v1/auth/refresh', { json: { refresh_token: login.json.refresh_token } })
    t.equal(refreshed.status, 200, 'the refresh token rotates')
    const replayed = await client.send('/api/v1/auth/refresh', { json: { refresh_token: login.json.refresh_token } })
    t.equal(replayed.status, 401, 'and is spent')
    t.equal(replayed.json.code, 'AUTH_INVALID_REFRESH_TOKEN')
    t.equal((await client.send('/api/v1/auth/logout', { json: { refresh_token: refreshed.json.refresh_token } })).status, 204)
    t.equal((await client.send('/api/v1/users/me', { token: refreshed.json.access_token })).status, 401, 'the logout ended the access token')
  })

  await t.test('a resource: CRUD, filters, a cursor through every page, ETags, Idempotency-Key', async (t) => {
    const tag = randomUUID()
    const created = []
    for (let i = 1; i <= 7; i++) {
      const answer = await client.send('/api/v1/notes/', { json: { title: `note ${i}`, priority: (i % 5) + 1, tags: [tag] } })
      t.equal(answer.status, 201, `create ${i}`)
      t.match(answer.headers.get('location'), /^\/api\/v1\/notes\/\d+$|^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/notes\/\d+$/)
      t.ok(answer.headers.get('etag'), 'with an ETag')
      created.push(answer.json as { id: number, title: string, priority: number })
    }
    const expected = created.filter((note) => note.priority >= 3).sort((a, b) => b.priority - a.priority || b.id - a.id).map((note) => note.id)
    const seen = await pages(client, `/api/v1/notes/?tags[contains]=${tag}&priority[gte]=3&sort=-priority&limit=2&count=exact`, t)
    t.same(seen, expected, 'every matching row once, in the sort, over the pages')

    const one = created[0]!
    const got = await client.send(`/api/v1/notes/${one.id}`)
    t.equal(got.status, 200)
    const etag = String(got.headers.get('etag'))
    // Any instance gives and takes the same ETag: one SECRET_KEY.
    for (let i = 0; i < 3; i++) {
      const cached = await client.send(`/api/v1/notes/${one.id}`, { headers: { 'if-none-match': etag } })
      t.equal(cached.status, 304, `If-None-Match at ${cached.headers.get('x-upstream')}`)
    }
    const patched = await client.send(`/api/v1/notes/${one.id}`, { method: 'PATCH', json: { title: 'changed' }, headers: { 'if-match': etag } })
    t.equal(patched.status, 200, 'a PATCH with the current ETag')
    t.not(patched.headers.get('etag'), etag, 'gives a new ETag')
    const stale = await client.send(`/api/v1/notes/${one.id}`, { method: 'PATCH', json: { title: 'lost update' }, headers: { 'if-match': etag } })
    t.equal(stale.status, 412, 'a PATCH with the old one is refused')
    t.equal(stale.json.code, 'PRECONDITION_FAILED')
    t.equal((await client.send(`/api/v1/notes/${one.id}`)).json.title, 'changed', 'and wrote nothing')
    t.equal((await client.send(`/api/v1/notes/${one.id}`, { method: 'DELETE' })).status, 204)
    t.equal((await client.send(`/api/v1/notes/${one.id}`)).status, 404)

    const key = randomUUID()
    const first = await client.send('/api/v1/notes/', { json: { title: `once ${key}` }, headers: { 'idempotency-key': key } })
    t.equal(first.status, 201)
    for (let i = 0; i < 3; i++) {
      const replay = await client.send('/api/v1/notes/', { json: { title: `once ${key}` }, headers: { 'idempotency-key': key } })
      t.equal(replay.status, 201, `replay at ${replay.headers.get('x-upstream')}`)
      t.equal(replay.headers.get('idempotent-replayed'), 'true')
      t.equal(replay.text, first.text, 'the first answer')
    }
    const [counted] = await cluster.sql<Array<{ count: number }>>`select count(*)::int as count from notes where title = ${`once ${key}`}`
    t.equal(counted?.count, 1, 'one row in the primary')
    const other = await client.send('/api/v1/notes/', { json: { title: 'another body' }, headers: { 'idempotency-key': key } })
    t.equal(other.status, 422, 'the key with another body')
  })

  await t.test('bad input through nginx is a problem document, never a 5xx', async (t) => {
    const invalid = await client.send('/api/v1/notes/', { json: { title: '', priority: 9 } })
    t.equal(invalid.status, 422)
    t.match(invalid.headers.get('content-type'), /^application\/problem\+json/)
    const form = await client.send('/api/v1/notes/', { form: { title: 'x' } })
    t.equal(form.status, 415, 'a form where JSON is due')
    const missing = await client.send('/api/v1/notes/999999999')
    t.equal(missing.status, 404)
    t.ok(missing.json.detail, 'with a detail')
  })

  await t.test('X-Forwarded-For from nginx is the client address plinth sees', async (t) => {
    // Two clients at two loopback addresses: a wrong password counts per email and address.
    const email = `forwarded-${randomUUID()}@example.com`
    t.equal((await client.send('/api/v1/auth/register', { json: { email, password: PASSWORD } })).status, 201)
    const log = (from: string) => instances.flatMap((one) => one.logs).some((entry) => (entry.req as { remoteAddress?: string } | undefined)?.remoteAddress === from)
    const other = clusterClient(nginx.base, '127.0.0.12')
    t.teardown(() => other.close())
    await other.send('/api/v1/health')
    await until('a request log from 127.0.0.12', () => log('127.0.0.12') || undefined, 10_000)
    t.pass('an instance logged the request as from 127.0.0.12, nginx being 127.0.0.1')
  })

  await t.test('the request id crosses the hop: nginx\'s $request_id is the instance\'s reqId', async (t) => {
    const path = `/api/v1/health?trace=${randomUUID()}`
    const answer = await client.send(path)
    t.equal(answer.status, 200)
    const requestId = String(answer.headers.get('x-request-id'))
    const logged = await until(`the access log line of ${path}`, () => nginx.accessLog().find((line) => line.request.includes(path)), 10_000)
    t.equal(logged.requestId, requestId, 'the access log has the id nginx sent')
    const entry = await until(`the request log of ${path}`, () => instances.flatMap((one) => one.logs)
      .find((line) => (line.req as { url?: string } | undefined)?.url === path), 10_000)
    t.equal(entry.reqId, requestId, 'the instance logged the request under it')

    const forgedPath = `/api/v1/health?forged=${randomUUID()}`
    const forged = await client.send(forgedPath, { headers: { 'x-request-id': 'chosen-by-the-client' } })
    const forgedEntry = await until(`the request log of ${forgedPath}`, () => instances.flatMap((one) => one.logs)
      .find((line) => (line.req as { url?: string } | undefined)?.url === forgedPath), 10_000)
    t.equal(forgedEntry.reqId, forged.headers.get('x-request-id'), 'a client\'s own X-Request-Id is replaced by nginx\'s')
    t.not(forgedEntry.reqId, 'chosen-by-the-client')
  })
})

/** Follows the Link header page by page; the ids in order. */
async function pages (client: ClusterClient, first: string, t: Test) {
  const ids: number[] = []
  let path: string | undefined = first
  for (let page = 0; path && page < 20; page++) {
    const answer = await client.send(path)
    t.equal(answer.status, 200, `page ${page + 1} from ${answer.headers.get('x-upstream')}`)
    if (page === 0) t.ok(Number(answer.headers.get('x-total-count')) > 0, 'X-Total-Count')
    ids.push(...(answer.json as Array<{ id: number }>).map((row) => row.id))
    path = /<([^>]+)>; rel="next"/.exec(answer.headers.get('link') ?? '')?.[1]
  }
  return ids
}
