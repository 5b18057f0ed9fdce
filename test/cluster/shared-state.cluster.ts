import { randomUUID } from 'node:crypto'
import t from 'tap'
import { PASSWORD } from '../support/app.js'
import { clusterClient, type ClusterClient } from '../support/cluster-http.js'
import { clusterSkip, startTopology } from '../support/cluster.js'

// No instance keeps state another would need: each request below goes to a chosen instance, by
// its own port, while nginx stays in front of all three.
const skip = clusterSkip
const LOGIN_MAX_FAILURES = 3
const RATE_LIMIT_REGISTER = 6

t.test('state shared by the instances', { skip }, async (t) => {
  const { cluster, instances, nginx } = await startTopology(t, {
    env: { LOGIN_MAX_FAILURES: String(LOGIN_MAX_FAILURES), RATE_LIMIT_REGISTER: String(RATE_LIMIT_REGISTER), RATE_LIMIT_WINDOW_SECONDS: '3600' }
  })
  let addresses = 20
  /** One client per instance, all from one loopback address of their own: one client of plinth's. */
  const clients = () => {
    const from = `127.0.0.${++addresses}`
    const list = instances.map((one) => clusterClient(one.base, from))
    t.teardown(() => { for (const client of list) client.close() })
    return list as [ClusterClient, ClusterClient, ClusterClient]
  }
  const account = async (client: ClusterClient) => {
    const email = `shared-${randomUUID()}@example.com`
    const answer = await client.send('/api/v1/auth/register', { json: { email, password: PASSWORD } })
    if (answer.status !== 201) throw new Error(`register: ${answer.status} ${answer.text}`)
    return email
  }
  const login = (client: ClusterClient, email: string, password = PASSWORD) =>
    client.send('/api/v1/auth/login', { form: { grant_type: 'password', username: email, password } })

  await t.test('a refresh token rotated on one instance is refused on the others', async (t) => {
    const [a, b, c] = clients()
    const pair = (await login(a, await account(a))).json
    const rotated = await a.send('/api/v1/auth/refresh', { json: { refresh_token: pair.refresh_token } })
    t.equal(rotated.status, 200, 'rotated on plinth-1')
    for (const [name, other] of [['plinth-2', b], ['plinth-3', c]] as const) {
      const replayed = await other.send('/api/v1/auth/refresh', { json: { refresh_token: pair.refresh_token } })
      t.equal(replayed.status, 401, `refused on ${name}`)
      t.equal(replayed.json.code, 'AUTH_INVALID_REFRESH_TOKEN')
    }
    t.equal((await c.send('/api/v1/auth/refresh', { json: { refresh_token: rotated.json.refresh_token } })).status, 200, 'its successor rotates on plinth-3')
  })

  await t.test('a logout on one instance ends the access token on all of them', async (t) => {
    const [a, b, c] = clients()
    const pair = (await login(b, await account(b))).json
    for (const client of [a, b, c]) t.equal((await client.send('/api/v1/users/me', { token: pair.access_token })).status, 200, `accepted at ${client.base}`)
    t.equal((await b.send('/api/v1/auth/logout', { json: { refresh_token: pair.refresh_token } })).status, 204, 'logout on plinth-2')
    for (const client of [a, b, c]) {
      const me = await client.send('/api/v1/users/me', { token: pair.access_token })
      t.equal(me.status, 401, `refused at ${client.base}`)
    }
  })

  await t.test('failed logins spread over the three instances lock the account at LOGIN_MAX_FAILURES', async (t) => {
    const list = clients()
    const email = await account(list[0])
    for (let i = 0; i < LOGIN_MAX_FAILURES; i++) {
      t.equal((await login(list[i % 3]!, email, 'not the password')).status, 400, `failure ${i + 1} at plinth-${(i % 3) + 1}`)
    }
    // The right password now: only the count the three share can refuse it.
    for (const [i, client] of list.entries()) {
      const refused = await login(client, email)
      t.equal(refused.status, 429, `locked at plinth-${i + 1}`)
      t.equal(refused.json.code, 'AUTH_TOO_MANY_FAILURES')
      t.ok(Number(refused.headers.get('retry-after')) >= 1, 'with Retry-After')
    }
    const elsewhere = clusterClient(instances[0]!.base, `127.0.0.${++addresses}`)
    t.teardown(() => elsewhere.close())
    t.equal((await login(elsewhere, email)).status, 200, 'another client address is not locked out')
  })

  await t.test('a rate limit counts the requests of all three instances', async (t) => {
    const list = clients()
    const answers = []
    for (let i = 0; i <= RATE_LIMIT_REGISTER; i++) {
      answers.push(await list[i % 3]!.send('/api/v1/auth/register', { json: { email: `limited-${randomUUID()}@example.com`, password: PASSWORD } }))
    }
    t.same(answers.map((answer) => answer.status), [...Array(RATE_LIMIT_REGISTER).fill(201), 429], `${RATE_LIMIT_REGISTER} registrations over three instances, then 429`)
    t.same(answers.slice(0, -1).map((answer) => Number(answer.headers.get('ratelimit-remaining'))),
      Array.from({ length: RATE_LIMIT_REGISTER }, (_, i) => RATE_LIMIT_REGISTER - 1 - i), 'one countdown')
    t.equal(answers.at(-1)!.json.code, 'RATE_LIMITED')
    for (const [i, client] of list.entries()) {
      t.equal((await client.send('/api/v1/auth/register', { json: { email: `late-${randomUUID()}@example.com`, password: PASSWORD } })).status, 429, `429 at plinth-${i + 1}`)
    }
  })

  await t.test('an Idempotency-Key replayed through another instance gets the first answer', async (t) => {
    const [a, b, c] = clients()
    const key = randomUUID()
    const body = { name: `idempotent ${key}`, price: 3 }
    const first = await a.send('/api/v1/items', { json: body, headers: { 'idempotency-key': key } })
    t.equal(first.status, 201, 'created on plinth-1')
    for (const [name, other] of [['plinth-2', b], ['plinth-3', c]] as const) {
      const replay = await other.send('/api/v1/items', { json: body, headers: { 'idempotency-key': key } })
      t.equal(replay.status, 201, `replayed on ${name}`)
      t.equal(replay.headers.get('idempotent-replayed'), 'true')
      t.equal(replay.text, first.text, 'the first body')
      t.equal(replay.headers.get('location'), first.headers.get('location'))
      t.equal(replay.headers.get('etag'), first.headers.get('etag'))
    }
    const through = clusterClient(nginx.base, a.from)
    t.teardown(() => through.close())
    const viaNginx = await through.send('/api/v1/items', { json: body, headers: { 'idempotency-key': key } })
    t.equal(viaNginx.headers.get('idempotent-replayed'), 'true', `replayed through nginx by ${viaNginx.headers.get('x-upstream')}`)
    const rows = await cluster.sql`select id from items where name = ${body.name}`
    t.equal(rows.length, 1, 'one item in the primary')
  })
})
