import { availableParallelism } from 'node:os'
import t from 'tap'
import { reserveVerify } from '../../../../plugins/auth/passwords.js'
import { PASSWORD, bearer, build, newAccount, register, type Session } from '../../../support/app.js'
import { assertProblem } from '../../../support/responses.js'
import { until } from '../../../support/until.js'

// Issue 39, items 2 and 3: every route that checks a password shares the login's throttling, and
// failures are counted per client as the rate limiter groups addresses (an IPv6 client by its /64).

const ME = '/api/v1/users/me'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }
const NEW_PASSWORD = 'a brand new password'

const changePassword = (session: Session, current: string, remoteAddress?: string) =>
  ({ method: 'PATCH' as const, url: ME, headers: session.headers, payload: { password: NEW_PASSWORD, current_password: current }, ...(remoteAddress ? { remoteAddress } : {}) })
const deleteAccount = (session: Session, current: string) =>
  ({ method: 'DELETE' as const, url: ME, headers: session.headers, payload: { current_password: current } })
const loginForm = (username: string, password: string, headers: Record<string, string> = {}, remoteAddress?: string) => ({
  method: 'POST' as const,
  url: '/api/v1/auth/login',
  headers: { ...FORM, ...headers },
  payload: new URLSearchParams({ grant_type: 'password', username, password }).toString(),
  ...(remoteAddress ? { remoteAddress } : {})
})

/** Logs in from `remoteAddress`. */
async function login (app: Awaited<ReturnType<typeof build>>, email: string, password: string, remoteAddress: string): Promise<Session> {
  const res = await app.inject(loginForm(email, password, {}, remoteAddress))
  if (res.statusCode !== 200) throw new Error(`login ${email}: ${res.statusCode} ${res.payload}`)
  return { ...res.json(), headers: bearer(res.json().access_token) }
}

const refuse = () => new Error('probe')
/** True when at least `n` hashes wait in the queue (every CPU's slot being taken). */
const queueHolds = (n: number) => { try { reserveVerify({ queue: { maxWaiting: n, refuse } }).cancel(); return false } catch { return true } }

/** A promise that stays pending until released. */
function held () {
  let release!: () => void
  const done = new Promise<void>((resolve) => { release = resolve })
  return { done, release }
}

t.test('a stolen access token cannot guess current_password without end: PATCH and DELETE /users/me count failures as the login does', async (t) => {
  const app = await build(t, { LOGIN_MAX_FAILURES: 3 })
  const { email, session } = await newAccount(app)
  const statuses = [
    (await app.inject(changePassword(session, 'guess 1'))).statusCode,
    (await app.inject(deleteAccount(session, 'guess 2'))).statusCode,
    (await app.inject(changePassword(session, 'guess 3'))).statusCode
  ]
  t.same(statuses, [403, 403, 403], 'three wrong current passwords')
  const locked = await app.inject(changePassword(session, PASSWORD))
  assertProblem(t, locked, 429, 'AUTH_TOO_MANY_FAILURES', 'the fourth check is refused, even with the right password')
  const retryAfter = Number(locked.headers['retry-after'])
  t.ok(retryAfter > 0 && retryAfter <= 900, `Retry-After ${retryAfter} is within the window`)
  assertProblem(t, await app.inject(deleteAccount(session, PASSWORD)), 429, 'AUTH_TOO_MANY_FAILURES', 'and so is DELETE')
  t.equal((await app.inject(loginForm(email, PASSWORD))).statusCode, 429, 'the login shares the count: locked from this address too')
  t.equal((await app.inject(loginForm(email, PASSWORD, {}, '192.0.2.44'))).statusCode, 200, 'another address is counted apart')
  t.equal((await app.inject(changePassword(session, PASSWORD, '192.0.2.44'))).statusCode, 200, 'and may change the password')
})

t.test('the right current_password resets the count, as a successful login does', async (t) => {
  const app = await build(t, { LOGIN_MAX_FAILURES: 2 })
  const { email, session } = await newAccount(app)
  const answers = [(await app.inject(changePassword(session, 'guess'))).statusCode, (await app.inject(changePassword(session, PASSWORD))).statusCode]
  // The new password ended every session: a new one, from an address with a count of its own.
  const again = await login(app, email, NEW_PASSWORD, '192.0.2.46')
  for (let i = 0; i < 3; i++) answers.push((await app.inject(changePassword(again, 'guess'))).statusCode)
  t.same(answers, [403, 200, 403, 403, 429], 'a success forgets the earlier failure: two fresh ones are allowed, then 429')
})

t.test('PATCH and DELETE /users/me are limited per client address (RATE_LIMIT_PASSWORD_CHECK), as the token endpoint is', async (t) => {
  const app = await build(t, { RATE_LIMIT_PASSWORD_CHECK: 2, LOGIN_MAX_FAILURES: 0 })
  const { session } = await newAccount(app)
  const first = await app.inject(changePassword(session, 'guess'))
  t.equal(first.statusCode, 403)
  t.equal(first.headers['ratelimit-limit'], '2', 'the answer says where the client stands')
  t.equal((await app.inject(deleteAccount(session, 'guess'))).statusCode, 403)
  const limited = await app.inject(changePassword(session, 'guess'))
  assertProblem(t, limited, 429, 'RATE_LIMITED', 'the third password check from the address in the window')
  t.ok(Number(limited.headers['retry-after']) > 0, 'with Retry-After')
  t.equal((await app.inject(changePassword(session, 'guess', '192.0.2.45'))).statusCode, 403, 'another address has its own count')
  t.equal((await app.inject({ method: 'GET', url: ME, headers: session.headers })).statusCode, 200, 'reading the profile is not limited')
})

t.test('one account with 80 password checks in flight cannot make another user\'s login answer 503', async (t) => {
  const app = await build(t, { OVERLOAD_MAX_HASH_WAITING: 8, LOGIN_MAX_FAILURES: 100 })
  const attacker = await newAccount(app)
  await register(app, 'victim@example.com')
  // Every CPU's slot taken: every check below has to wait in the queue's 8 places.
  const gate = held()
  const busy = Array.from({ length: availableParallelism() }, () => reserveVerify().run(() => gate.done))
  let settled = 0
  const flood = Array.from({ length: 80 }, () => app.inject(changePassword(attacker.session, 'guess', '203.0.113.9')).finally(() => { settled++ }))
  let victim
  try {
    // Before the fix, 72 answered 503 at once: the other 8 filled the queue.
    await until('the flood to take what it can', () => settled >= 72 || undefined, 60_000)
    let answered = false
    victim = app.inject(loginForm('victim@example.com', PASSWORD, {}, '198.51.100.7')).finally(() => { answered = true })
    // Answered (the queue was full), or waiting beside the attacker's share of at most 4 places.
    await until('the victim\'s login to be answered or to wait for its hash', () => answered || (queueHolds(5) && !queueHolds(8)) || undefined, 60_000)
  } finally {
    gate.release()
  }
  await Promise.all(busy)
  const answers = await Promise.all(flood)
  const login = await victim!
  t.equal(login.statusCode, 200, `the victim logs in (${login.statusCode} ${login.payload.slice(0, 120)})`)
  const refused = answers.filter((res) => res.statusCode !== 403)
  t.ok(answers.filter((res) => res.statusCode === 403).length <= 4, 'the attacker held at most its share of the queue')
  t.ok(refused.length >= 76, `the rest of the flood was refused (${refused.length})`)
  for (const res of refused.slice(0, 3)) {
    assertProblem(t, res, 429, 'TOO_MANY_PASSWORD_HASHES', 'the flood is refused for itself, as too many requests')
    t.equal(res.headers['retry-after'], '1', 'with Retry-After')
  }
})

t.test('one address cannot take the whole hash queue with logins of many accounts', async (t) => {
  const app = await build(t, { OVERLOAD_MAX_HASH_WAITING: 8, LOGIN_MAX_FAILURES: 0 })
  await register(app, 'victim@example.com')
  const gate = held()
  const busy = Array.from({ length: availableParallelism() }, () => reserveVerify().run(() => gate.done))
  let settled = 0
  const flood = Array.from({ length: 40 }, (_, i) => app.inject(loginForm(`nobody${i}@example.com`, 'guess', {}, '203.0.113.10')).finally(() => { settled++ }))
  let victim
  try {
    await until('the flood to take what it can', () => settled >= 32 || undefined, 60_000)
    let answered = false
    victim = app.inject(loginForm('victim@example.com', PASSWORD, {}, '198.51.100.8')).finally(() => { answered = true })
    await until('the victim\'s login to be answered or to wait for its hash', () => answered || (queueHolds(5) && !queueHolds(8)) || undefined, 60_000)
  } finally {
    gate.release()
  }
  await Promise.all(busy)
  const answers = await Promise.all(flood)
  t.equal((await victim!).statusCode, 200, 'the victim logs in')
  t.ok(answers.filter((res) => res.statusCode === 400).length <= 4, 'the address held at most its share of the queue')
  t.ok(answers.filter((res) => res.statusCode === 429).length >= 36, 'the rest was refused with 429')
})

t.test('failures from addresses across one IPv6 /64 lock the account at the same count as from one address', async (t) => {
  const app = await build(t, { LOGIN_MAX_FAILURES: 3, TRUST_PROXY: true })
  await register(app, 'ada@example.com')
  const attempt = (address: string, password = 'guess') => app.inject(loginForm('ada@example.com', password, { 'x-forwarded-for': address }))
  const statuses = []
  for (const address of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:aaaa:bbbb:cccc:3']) statuses.push((await attempt(address)).statusCode)
  const locked = await attempt('2001:db8:1:2:ffff:ffff:ffff:ffff', PASSWORD)
  statuses.push(locked.statusCode)
  t.same(statuses, [400, 400, 400, 429], 'three failures across the /64, then 429 even for the right password')
  t.equal(locked.json().code, 'AUTH_TOO_MANY_FAILURES')
  t.equal((await attempt('2001:db8:1:3::1', PASSWORD)).statusCode, 200, 'the next /64 is another client')
})

t.test('current_password checks from one /64 share their count too', async (t) => {
  const app = await build(t, { LOGIN_MAX_FAILURES: 2, TRUST_PROXY: true })
  const { session } = await newAccount(app)
  const check = (address: string, current = 'guess') =>
    app.inject({ ...changePassword(session, current), headers: { ...session.headers, 'x-forwarded-for': address } })
  const statuses = []
  for (const address of ['2001:db8:9:9::1', '2001:db8:9:9::2', '2001:db8:9:9::3']) statuses.push((await check(address)).statusCode)
  t.same(statuses, [403, 403, 429])
})

t.test('registrations from one address hold at most its share of the hash queue; OVERLOAD_MAX_HASH_WAITING_PER_CLIENT=0 lifts the share', async (t) => {
  for (const [perClient, waited, refused] of [[4, 4, 429], [0, 8, 503]] as const) {
    const app = await build(t, { OVERLOAD_MAX_HASH_WAITING: 8, OVERLOAD_MAX_HASH_WAITING_PER_CLIENT: perClient })
    await app.ready()
    const gate = held()
    const busy = Array.from({ length: availableParallelism() }, () => reserveVerify().run(() => gate.done))
    let settled = 0
    const flood = Array.from({ length: 20 }, (_, i) => app.inject({
      method: 'POST', url: '/api/v1/auth/register', remoteAddress: '203.0.113.11', payload: { email: `flood${i}@example.com`, password: PASSWORD }
    }).finally(() => { settled++ }))
    try {
      await until('the flood to take what it can', () => settled >= 20 - waited || undefined, 60_000)
    } finally {
      gate.release()
    }
    await Promise.all(busy)
    const statuses = (await Promise.all(flood)).map((res) => res.statusCode)
    t.equal(statuses.filter((status) => status === 201).length, waited, `share ${perClient}: ${waited} waited their turn`)
    t.equal(statuses.filter((status) => status === refused).length, 20 - waited, `the others were refused with ${refused}`)
  }
})

t.test('the document lists the 429 of a password check only while a limit can answer it', async (t) => {
  const responses = async (settings: Parameters<typeof build>[1]) => {
    const paths = (await (await build(t, settings)).inject({ method: 'GET', url: '/docs/json' })).json().paths
    return [paths['/api/v1/users/me'].delete, paths['/api/v1/auth/register'].post].map((operation) => '429' in operation.responses)
  }
  t.same(await responses({ LOGIN_MAX_FAILURES: 0, OVERLOAD_MAX_HASH_WAITING_PER_CLIENT: 0 }), [false, false], 'every limit off')
  t.same(await responses({ LOGIN_MAX_FAILURES: 0, OVERLOAD_MAX_HASH_WAITING_PER_CLIENT: 0, RATE_LIMIT_PASSWORD_CHECK: 5 }), [true, false], 'the rate limit')
  t.same(await responses({ LOGIN_MAX_FAILURES: 3, OVERLOAD_MAX_HASH_WAITING_PER_CLIENT: 0 }), [true, false], 'the failure count')
  t.same(await responses({ LOGIN_MAX_FAILURES: 0 }), [true, true], 'the share of the hash queue')
})
