import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { performance } from 'node:perf_hooks'
import postgres from 'postgres'
import t from 'tap'
import { PASSWORD } from '../support/app.js'
import { freshPostgresUrl, TEST_DATABASE_URL, rawOptions } from '../support/database.js'
import { httpRequest, type HttpAnswer, type HttpRequestOptions } from '../support/http.js'
import { hasPostgresServer, privatePostgres } from '../support/postgres-server.js'
import { startServer, type ServerProcess } from '../support/server-process.js'
import { readMetrics, valueOf } from '../support/metrics.js'
import { until } from '../support/until.js'
import { getOnNewConnection, isAlive, loginAt, meAt, refreshAt } from './processes-http.js'

// WORKERS > 1 on PGlite (refused, exit 1) is covered by test/server.test.ts.
const skip = TEST_DATABASE_URL || hasPostgresServer()
  ? false
  : 'needs PostgreSQL: set TEST_DATABASE_URL or install the PostgreSQL server binaries'
const SECRET_KEY = 'processes-reliability-shared-secret'

// One new database for the file (a private server costs 10 s or more to set up): the first test
// starts its processes on it empty, so they migrate it together; the second finds it migrated.
const database = skip ? '' : TEST_DATABASE_URL ? await freshPostgresUrl(t) : (await privatePostgres(t)).url

const tokens = (answer: HttpAnswer) => answer.json as { access_token: string, refresh_token: string }

const listeningPids = (server: ServerProcess) => server.logs
  .filter((entry) => String(entry.msg).startsWith('Server listening at'))
  .map((entry) => entry.pid as number)

/** Which process answered each of `count` health probes sent one after another, as its request log says. */
async function whoAnswers (base: string, server: ServerProcess, count: number) {
  const tag = randomUUID()
  const answers: Array<{ status: number, pid: number }> = []
  for (let i = 0; i < count; i++) {
    const path = `/api/v1/health?probe=${tag}-${i}`
    const status = await getOnNewConnection(base + path)
    const pid = await until(`the request log of ${path}`, () => server.logs.find((entry) =>
      entry.msg === 'incoming request' && (entry.req as { url?: string } | undefined)?.url === path)?.pid as number | undefined, 10_000)
    answers.push({ status, pid })
  }
  return answers
}

const elapsed = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`

/** Resident memory in MB, from /proc (Linux). */
const rssMb = (pid: number) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024)

const pidsOf = (answers: Array<{ pid: number }>) => new Set(answers.map((answer) => answer.pid))

t.test('separate server processes on one database with one SECRET_KEY', { skip }, async (t) => {
  // Limits high enough for every other step here, in a window longer than the test.
  const limits = { RATE_LIMIT_WINDOW_SECONDS: '3600', RATE_LIMIT_REGISTER: '30', RATE_LIMIT_TOKEN: '40', RATE_LIMIT_REFRESH: '60', RATE_LIMIT_REVOKE: '10' }
  const env = { DATABASE_URL: database, SECRET_KEY, LOGIN_MAX_FAILURES: '3', ...limits }
  // Started at the same moment: all three migrate the empty database at once.
  const startedAt = performance.now()
  const servers = [startServer(t, env), startServer(t, env), startServer(t, { ...env, SECRET_KEY: 'some-other-secret-of-at-least-32-bytes' })]
  const [a, b, stranger] = await Promise.all(servers.map((server) => server.listening)) as [string, string, string]
  t.comment(`three processes listening ${elapsed(startedAt)} after the start`)

  const journal = JSON.parse(await readFile(new URL('../../db/migrations/meta/_journal.json', import.meta.url), 'utf8'))
  const sql = postgres(database, rawOptions)
  const applied = await sql<Array<{ hash: string }>>`select hash from drizzle.__drizzle_migrations`
  await sql.end()
  t.equal(new Set(applied.map((row) => row.hash)).size, journal.entries.length, 'each migration is applied')
  t.equal(applied.length, journal.entries.length, 'and recorded once')

  let accounts = 0
  async function account () {
    const email = `processes${++accounts}@example.com`
    const res = await httpRequest(a, '/api/v1/auth/register', { json: { email, password: PASSWORD } })
    if (res.status !== 201) throw new Error(`register: ${res.status} ${res.text}`)
    return email
  }

  await t.test('a token pair issued by one is accepted and rotated by the other', async (t) => {
    const pair = tokens(await loginAt(a, await account()))
    t.equal(await meAt(b, pair.access_token), 200, 'the access token')
    const rotated = await refreshAt(b, pair.refresh_token)
    t.equal(rotated.status, 200, 'the refresh token')
    t.equal((await refreshAt(a, pair.refresh_token)).status, 401, 'the issuer sees it spent')
    t.equal(await meAt(a, tokens(rotated).access_token), 200, 'the issuer accepts the new access token')
  })

  await t.test('one Idempotency-Key sent to both processes at once creates one item, which both then replay', async (t) => {
    for (let round = 1; round <= 3; round++) {
      const key = randomUUID()
      const name = `idempotent ${key}`
      const post = (base: string) => httpRequest(base, '/api/v1/items', { json: { name, price: round }, headers: { 'idempotency-key': key } })
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => post(i % 2 === 0 ? a : b)))
      t.comment(`round ${round}: ${JSON.stringify(answers.map((answer) => `${answer.status}${answer.headers.get('idempotent-replayed') ? ' replayed' : ''}`))}`)
      t.ok(answers.every((answer) => answer.status === 201 || answer.status === 409), `round ${round}: each a 201 or a 409 (in flight)`)
      const first = answers.filter((answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null)
      t.equal(first.length, 1, `round ${round}: one first answer`)
      t.equal((await httpRequest(a, `/api/v1/items?q=${encodeURIComponent(name)}`)).json.total, 1, `round ${round}: one item`)
      for (const base of [a, b]) {
        const replay = await post(base)
        t.equal(replay.headers.get('idempotent-replayed'), 'true', `round ${round}: ${base === a ? 'one' : 'the other'} replays`)
        t.equal(replay.text, first[0]!.text)
      }
    }
  })

  await t.test('20 concurrent refreshes of one token across both processes: one new pair, 19 refusals', async (t) => {
    const pair = tokens(await loginAt(a, await account()))
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => refreshAt(i % 2 === 0 ? a : b, pair.refresh_token)))
    t.comment(`statuses: ${JSON.stringify(answers.map((answer) => answer.status))}`)
    const won = answers.filter((answer) => answer.status === 200)
    const refused = answers.filter((answer) => answer.status === 401)
    t.equal(won.length, 1, 'exactly one 200')
    t.equal(refused.length, 19, 'and 19 401s')
    t.ok(refused.every((answer) => answer.json?.code === 'AUTH_INVALID_REFRESH_TOKEN'), 'each as an invalid refresh token')
    const next = tokens(won[0] as HttpAnswer)
    t.equal(await meAt(a, next.access_token), 200, 'the new access token works on one')
    t.equal(await meAt(b, next.access_token), 200, 'and on the other')
    t.equal((await refreshAt(b, next.refresh_token)).status, 200, 'the new refresh token rotates')
  })

  await t.test('failed logins count across processes', async (t) => {
    const email = await account()
    for (const base of [a, b, a]) t.equal((await loginAt(base, email, 'not the password')).status, 400, `a failure at ${base}`)
    // The right password now: only the shared count of failures can refuse it.
    for (const base of [b, a]) {
      const answer = await loginAt(base, email)
      t.equal(answer.status, 429, `the 4th attempt is refused at ${base}`)
      t.equal(answer.json?.code, 'AUTH_TOO_MANY_FAILURES', 'as too many failures')
      const retryAfter = Number(answer.headers.get('retry-after'))
      t.ok(retryAfter >= 1 && retryAfter <= 900, `Retry-After ${retryAfter} s is within the 15-minute window`)
    }
  })

  await t.test('a process with another SECRET_KEY refuses the tokens of the others', async (t) => {
    const email = await account()
    const pair = tokens(await loginAt(a, email))
    const access = await httpRequest(stranger, '/api/v1/users/me', { token: pair.access_token })
    t.equal(access.status, 401, 'the access token')
    t.equal(access.json?.code, 'AUTH_INVALID_TOKEN', 'as an invalid token')
    t.equal((await refreshAt(stranger, pair.refresh_token)).status, 401, 'the refresh token')
    t.equal(await meAt(stranger, tokens(await loginAt(stranger, email)).access_token), 200, 'it accepts its own')
    t.equal((await refreshAt(a, pair.refresh_token)).status, 200, 'the refused refresh token was not spent')
  })

  // Last: it spends every limit of the window, which the stranger shares too (one database, one address).
  await t.test('each unauthenticated route\'s limit is one count for both processes', async (t) => {
    const routes: Array<[string, (i: number) => [string, HttpRequestOptions]]> = [
      ['register', (i) => ['/api/v1/auth/register', { json: { email: `limited${i}@example.com`, password: PASSWORD } }]],
      ['the token endpoint', () => ['/api/v1/auth/login', { form: { grant_type: 'refresh_token', refresh_token: 'not.a.token' } }]],
      ['refresh', () => ['/api/v1/auth/refresh', { json: { refresh_token: 'not.a.token' } }]],
      ['revoke', () => ['/api/v1/auth/revoke', { form: { token: 'not.a.token' } }]],
      ['logout', () => ['/api/v1/auth/logout', { json: { refresh_token: 'not.a.token' } }]]
    ]
    for (const [name, request] of routes) {
      // Earlier steps used some of the window: the first answer says how much is left.
      const first = await httpRequest(a, ...request(0))
      const limit = Number(first.headers.get('ratelimit-limit'))
      let remaining = Number(first.headers.get('ratelimit-remaining'))
      t.ok(limit > 0 && remaining >= 0 && remaining < limit, `${name}: ${remaining} of ${limit} left`)
      let steps = 0
      for (let i = 1; remaining > 0; i++) {
        const answer = await httpRequest(i % 2 === 0 ? a : b, ...request(i))
        const left = Number(answer.headers.get('ratelimit-remaining'))
        if (answer.status === 429 || left !== remaining - 1) {
          t.fail(`${name}: answer ${i} was ${answer.status} with ${left} left, after ${remaining}`)
          break
        }
        remaining = left
        steps++
      }
      t.pass(`${name}: ${steps} more answered, alternating processes, each counting down the same window`)
      for (const [label, base] of [['a', a], ['b', b]] as const) {
        const refused = await httpRequest(base, ...request(1000))
        t.equal(refused.status, 429, `${name}: then 429 at ${label}`)
        t.equal(refused.json?.code, 'RATE_LIMITED', name)
        t.ok(Number(refused.headers.get('retry-after')) >= 1, `${name}: Retry-After`)
        t.equal(refused.headers.get('ratelimit-remaining'), '0', `${name}: RateLimit-Remaining`)
      }
    }
  })

  for (const server of servers) server.child.kill('SIGTERM')
  t.same(await Promise.all(servers.map((server) => server.exited)), [[0, null], [0, null], [0, null]], 'all exit 0 on SIGTERM')
})

t.test('WORKERS=3 on PostgreSQL: workers share the port, a killed one is replaced, SIGTERM stops all with 0', { skip }, async (t) => {
  const startedAt = performance.now()
  const server = startServer(t, { DATABASE_URL: database, WORKERS: '3', SECRET_KEY })
  const base = await server.listening
  const workers = await until('three workers listening', () => {
    const pids = new Set(listeningPids(server))
    return pids.size === 3 ? pids : undefined
  })
  t.comment(`three workers listening ${elapsed(startedAt)} after the start`)
  // The primary's SIGKILL at teardown would take the workers down too (they exit on disconnect); this is for certainty.
  t.teardown(() => { for (const pid of listeningPids(server)) if (isAlive(pid)) process.kill(pid, 'SIGKILL') })
  t.notOk(workers.has(server.child.pid as number), 'the primary does not serve requests itself')

  const spread = await whoAnswers(base, server, 15)
  t.comment(`15 requests, each on a new connection, answered by: ${JSON.stringify(spread.map((answer) => answer.pid))}`)
  t.ok(spread.every((answer) => answer.status === 200), 'all answered 200')
  t.same(pidsOf(spread), workers, 'every worker answers')

  const [victim, ...survivors] = [...workers] as [number, ...number[]]
  const killedAt = performance.now()
  process.kill(victim, 'SIGKILL')
  const death = await until('the primary to notice the death', () =>
    server.logs.find((entry) => entry.msg === 'worker died; starting another'))
  t.equal(death.signal, 'SIGKILL', 'the primary logs the death and its signal')
  const meanwhile = await whoAnswers(base, server, 10)
  t.ok(meanwhile.every((answer) => answer.status === 200), 'the others keep answering while the replacement starts')
  t.notOk(pidsOf(meanwhile).has(victim), 'the killed worker answers nothing')

  const replacement = await until('a replacement worker listening', () => listeningPids(server).find((pid) => !workers.has(pid)))
  t.comment(`replacement listening ${elapsed(killedAt)} after the SIGKILL`)
  const after = await whoAnswers(base, server, 15)
  t.ok(after.every((answer) => answer.status === 200), 'all answered 200 after the replacement')
  t.same(pidsOf(after), new Set([...survivors, replacement]), 'the replacement serves beside the survivors, the victim is gone')

  const serving = [...survivors, replacement]
  t.comment(`RSS: primary ${rssMb(server.child.pid as number)} MB, workers ${serving.map(rssMb).join(', ')} MB`)
  const stoppedAt = performance.now()
  server.child.kill('SIGTERM')
  t.same(await server.exited, [0, null], 'the primary exits 0 on SIGTERM')
  t.comment(`exited ${elapsed(stoppedAt)} after SIGTERM`)
  for (const pid of serving) {
    t.ok(server.logs.some((entry) => entry.pid === pid && entry.msg === 'closing' && entry.signal === 'SIGTERM'), `worker ${pid} closed gracefully`)
    t.notOk(isAlive(pid), `worker ${pid} is gone`)
  }
  const errors = server.logs.filter((entry) => Number(entry.level) >= 50).map((entry) => entry.msg)
  t.same(errors, ['worker died; starting another'], 'no error logged but the one death: none during shutdown')
  await t.rejects(getOnNewConnection(`${base}/api/v1/health`), { code: 'ECONNREFUSED' }, 'the port is closed')
})

t.test('WORKERS=2 with METRICS_PORT: the primary serves the metrics of every worker, summed', { skip }, async (t) => {
  const server = startServer(t, { DATABASE_URL: database, WORKERS: '2', SECRET_KEY, METRICS_PORT: '0' })
  const base = await server.listening
  await until('two workers listening', () => new Set(listeningPids(server)).size === 2 || undefined)
  t.teardown(() => { for (const pid of listeningPids(server)) if (isAlive(pid)) process.kill(pid, 'SIGKILL') })
  const announced = await until('the metrics listener', () => server.logs.find((entry) => entry.msg === 'metrics listening'))
  t.equal(announced.pid, server.child.pid, 'the primary listens for metrics, not a worker')

  const answers = await whoAnswers(base, server, 20)
  t.equal(pidsOf(answers).size, 2, 'both workers answered some of the probes')
  const scrape = await httpRequest(String(announced.url), '')
  t.equal(scrape.status, 200)
  t.match(scrape.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const metrics = readMetrics(scrape.text)
  t.equal(valueOf(metrics, 'http_request_duration_seconds', { route: '/api/v1/health', status_class: '2xx' }), 20, 'every probe, whichever worker answered it')
  t.equal(valueOf(metrics, 'plinth_db_pool_size'), 20, 'two pools of 10')
  t.equal((await httpRequest(base, '/metrics')).status, 404, 'the API port never serves metrics')

  server.child.kill('SIGTERM')
  t.same(await server.exited, [0, null], 'the primary exits 0 on SIGTERM')
  await t.rejects(fetch(String(announced.url)), 'the metrics port is closed')
})
