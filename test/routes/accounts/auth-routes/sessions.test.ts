import { randomUUID } from 'node:crypto'
import { mock } from 'node:test'
import { eq } from 'drizzle-orm'
import Fastify from 'fastify'
import { createSigner } from 'fast-jwt'
import t, { type Test } from 'tap'
import { refreshTokens, sessions, users } from '../../../../db/schema.js'
import authPlugin from '../../../../plugins/auth/index.js'
import dbPlugin from '../../../../plugins/db.js'
import accountsPlugin from '../../../../routes/accounts/index.js'
import { build, claimsOf, login, newAccount, superuser, type Session } from '../../../support/app.js'
import { freshDatabase } from '../../../support/database.js'
import { until } from '../../../support/until.js'

const SECRET_KEY = 'the sessions test secret, 32 bytes or more'
const app = await build(t, { SECRET_KEY })
const refresh = (token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })
const logout = (token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: token } })
const logoutAll = (session: Session) => app.inject({ method: 'POST', url: '/api/v1/auth/logout-all', headers: session.headers })
const me = (token: string) => app.inject({ method: 'GET', url: '/api/v1/users/me', headers: { authorization: `Bearer ${token}` } })

const newUser = () => newAccount(app)

function assertRefreshRefused (t: Test, res: Awaited<ReturnType<typeof refresh>>, detail: RegExp) {
  t.equal(res.statusCode, 401)
  t.equal(res.json().code, 'AUTH_INVALID_REFRESH_TOKEN')
  t.match(res.json().detail, detail)
}

t.test('login stores one active record per refresh token', async (t) => {
  const { user, session } = await newUser()
  const rows = await app.plinthDb.db.select().from(refreshTokens).where(eq(refreshTokens.user_id, user.id))
  t.equal(rows.length, 1)
  const [row] = rows
  const jti = JSON.parse(Buffer.from(session.refresh_token.split('.')[1] as string, 'base64url').toString()).jti
  t.equal(row?.jti, jti)
  t.equal(row?.revoked, false)
  t.equal(row?.family_id, jti, 'a login starts a family')
  t.ok(Math.abs((row?.expires_at.getTime() ?? 0) - (Date.now() + 14 * 86400_000)) < 60_000, 'expires in 14 days')
})

t.test('refresh rotates: a new pair, the old record revoked, the new one active in the same family', async (t) => {
  const { user, session } = await newUser()
  const res = await refresh(session.refresh_token)
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  const pair = res.json()
  t.not(pair.refresh_token, session.refresh_token)
  t.not(pair.access_token, session.access_token)
  t.equal(pair.token_type, 'bearer')
  t.equal((await me(pair.access_token)).statusCode, 200, 'the new access token works')
  const rows = await app.plinthDb.db.select().from(refreshTokens).where(eq(refreshTokens.user_id, user.id))
  t.equal(rows.length, 2)
  t.same(rows.map((row) => row.revoked).sort(), [false, true])
  t.equal(new Set(rows.map((row) => row.family_id)).size, 1, 'one family')
  const claims = JSON.parse(Buffer.from(pair.refresh_token.split('.')[1], 'base64url').toString())
  const successor = rows.find((row) => !row.revoked)
  t.equal(successor?.jti, claims.jti, 'the active record is the new token')
  t.equal(successor?.expires_at.getTime(), claims.exp * 1000, 'and expires when the token does')
})

t.test('a replayed refresh token is refused with 401 and no pair', async (t) => {
  const { session } = await newUser()
  const first = await refresh(session.refresh_token)
  t.equal(first.statusCode, 200)
  const replay = await refresh(session.refresh_token)
  assertRefreshRefused(t, replay, /already used, revoked, or is unknown/)
  t.notOk(replay.json().access_token)
  t.equal((await refresh(first.json().refresh_token)).statusCode, 200, 'the rotated token still works')
})

t.test('20 concurrent refreshes of one token: exactly one gets a pair', async (t) => {
  const { user, session } = await newUser()
  const results = await Promise.all(Array.from({ length: 20 }, () => refresh(session.refresh_token)))
  const codes = results.map((res) => res.statusCode)
  t.equal(codes.filter((code) => code === 200).length, 1, `one 200 in ${codes.join(',')}`)
  t.equal(codes.filter((code) => code === 401).length, 19)
  const active = await app.plinthDb.db.select().from(refreshTokens).where(eq(refreshTokens.user_id, user.id))
  t.equal(active.filter((row) => !row.revoked).length, 1, 'exactly one successor was stored')
})

t.test('refreshes of many sessions at once: each its own successor, a spent or inactive one refused alone', async (t) => {
  const accounts = await Promise.all(Array.from({ length: 8 }, () => newUser()))
  const [spent, inactive] = [await newUser(), await newUser()]
  t.equal((await refresh(spent.session.refresh_token)).statusCode, 200)
  await app.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, inactive.user.id))
  const results = await Promise.all([...accounts, spent, inactive].map(({ session }) => refresh(session.refresh_token)))
  t.same(results.map((res) => res.statusCode), [...accounts.map(() => 200), 401, 403])
  for (const [i, { user, session }] of accounts.entries()) {
    const pair = results[i]!.json()
    t.equal(claimsOf(pair.access_token).sub, String(user.id), 'each pair is its own user\'s')
    t.equal(claimsOf(pair.access_token).sid, claimsOf(session.access_token).sid, 'in its own session')
    const rows = await app.plinthDb.db.select().from(refreshTokens).where(eq(refreshTokens.user_id, user.id))
    t.same(rows.map((row) => [row.jti, row.revoked]).sort(), [[claimsOf(pair.refresh_token).jti, false], [claimsOf(session.refresh_token).jti, true]].sort())
  }
  t.equal((await refresh(results[0]!.json().refresh_token)).statusCode, 200, 'a successor rotates in turn')
})

t.test('the new pair carries the user\'s current scopes', async (t) => {
  const { user, session } = await newUser()
  await app.plinthDb.db.update(users).set({ scopes: 'me,reports' }).where(eq(users.id, user.id))
  const pair = (await refresh(session.refresh_token)).json()
  const claims = JSON.parse(Buffer.from(pair.access_token.split('.')[1], 'base64url').toString())
  t.same(claims.scopes, ['me', 'reports'])
})

t.test('refresh refuses what is not a valid refresh token of this server', async (t) => {
  const { user, session } = await newUser()
  const sign = (claims: object, options: object = { expiresIn: 60_000 }) =>
    createSigner({ key: SECRET_KEY, ...options })({ sub: String(user.id), scopes: ['me'], type: 'refresh', jti: randomUUID(), ...claims })
  const cases: Array<[string, string, RegExp]> = [
    ['an access token', session.access_token, /not a refresh token/],
    ['garbage', 'not.a.jwt', /malformed or its signature is invalid/],
    ['an expired token', sign({}, { expiresIn: -10_000 }), /has expired/],
    ['a token whose record does not exist', sign({}), /already used, revoked, or is unknown/],
    ['a token without an expiry', sign({}, {}), /lacks required claims/],
    ['a token of another key', createSigner({ key: 'another-key' })({ sub: String(user.id), scopes: ['me'], type: 'refresh', jti: randomUUID() }), /signature is invalid/],
    ['an alg none token', createSigner({ algorithm: 'none' })({ sub: String(user.id), scopes: ['me'], type: 'refresh', jti: randomUUID() }), /not signed with HS256/],
    ['a subject that is not a user id', sign({ sub: 'admin' }), /not a user id/],
    ['a subject of zero', sign({ sub: '0' }), /not a user id/]
  ]
  for (const [what, token, detail] of cases) {
    const res = await refresh(token)
    t.equal(res.statusCode, 401, what)
    t.match(res.json().detail, detail, what)
  }
})

t.test('refresh of a deleted user is 401, of an inactive user 403', async (t) => {
  const gone = await newUser()
  await app.plinthDb.db.delete(users).where(eq(users.id, gone.user.id))
  assertRefreshRefused(t, await refresh(gone.session.refresh_token), /.+/)

  const sleepy = await newUser()
  await app.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, sleepy.user.id))
  const res = await refresh(sleepy.session.refresh_token)
  t.equal(res.statusCode, 403)
  t.equal(res.json().code, 'AUTH_INACTIVE_USER')
  await app.plinthDb.db.update(users).set({ is_active: true }).where(eq(users.id, sleepy.user.id))
  t.equal((await refresh(sleepy.session.refresh_token)).statusCode, 200, 'the refused refresh did not use the token up')
})

t.test('logout revokes only the presented token', async (t) => {
  const { email, session } = await newUser()
  const other = await login(app, email)
  const res = await logout(session.refresh_token)
  t.equal(res.statusCode, 204)
  t.equal(res.payload, '')
  assertRefreshRefused(t, await refresh(session.refresh_token), /already used, revoked, or is unknown/)
  t.equal((await refresh(other.refresh_token)).statusCode, 200, 'the other session lives on')
  assertRefreshRefused(t, await logout(session.refresh_token), /already used, revoked, or is unknown/)
})

t.test('logout needs a refresh token, not an access token', async (t) => {
  const { session } = await newUser()
  assertRefreshRefused(t, await logout(session.access_token), /not a refresh token/)
  const empty = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: {} })
  t.equal(empty.statusCode, 422)
})

t.test('logout-all revokes every refresh token of the user, and no one else\'s', async (t) => {
  const { email, session } = await newUser()
  const second = await login(app, email)
  const stranger = await newUser()
  const res = await logoutAll(session)
  t.equal(res.statusCode, 204)
  t.equal(res.payload, '')
  assertRefreshRefused(t, await refresh(session.refresh_token), /.+/)
  assertRefreshRefused(t, await refresh(second.refresh_token), /.+/)
  t.equal((await refresh(stranger.session.refresh_token)).statusCode, 200)
  const ended = await me(session.access_token)
  t.equal(ended.statusCode, 401, 'the access tokens die with their sessions, at once')
  t.match(ended.json().detail, /its session has ended/)
  t.equal((await me(second.access_token)).statusCode, 401)
  t.equal((await me(stranger.session.access_token)).statusCode, 200, 'another user\'s session lives on')
})

t.test('logout-all needs an access token', async (t) => {
  const { session } = await newUser()
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/logout-all', headers: { authorization: `Bearer ${session.refresh_token}` } })
  t.equal(res.statusCode, 401)
  t.equal(res.json().code, 'AUTH_INVALID_TOKEN')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/logout-all' })).statusCode, 401)
})

t.test('the purge deletes expired and revoked records, and keeps live ones', async (t) => {
  const { db } = await freshDatabase(t)
  const [user] = await db.insert(users).values({ email: 'purged@example.com', hashed_password: 'x' }).returning()
  const record = (expiresIn: number, revoked: boolean) => {
    const jti = randomUUID()
    return { jti, user_id: user!.id, family_id: jti, expires_at: new Date(Date.now() + expiresIn), revoked }
  }
  const live = record(60_000, false)
  const records = [record(-1000, false), record(-1000, true), record(60_000, true), live]
  await db.insert(sessions).values(records.map((each) => ({ id: each.family_id, user_id: user!.id })))
  await db.insert(refreshTokens).values(records)
  const { createSessionRepository } = await import('../../../../db/sessions.js')
  t.same(await createSessionRepository(db).purge(), { tokens: 3, counters: 0 })
  t.same((await db.select().from(refreshTokens)).map((row) => row.jti), [live.jti], 'only the usable record remains')
  t.same((await db.select().from(sessions)).map((row) => row.id), [live.family_id], 'and the sessions go with their last record')
})

t.test('with reuse detection, the purge keeps revoked records until they expire', async (t) => {
  const { db } = await freshDatabase(t)
  const [user] = await db.insert(users).values({ email: 'evidence@example.com', hashed_password: 'x' }).returning()
  const jti = randomUUID()
  await db.insert(sessions).values({ id: jti, user_id: user!.id })
  await db.insert(refreshTokens).values([
    { jti, user_id: user!.id, family_id: jti, expires_at: new Date(Date.now() + 60_000), revoked: true },
    { jti: randomUUID(), user_id: user!.id, family_id: jti, expires_at: new Date(Date.now() - 1000), revoked: true }
  ])
  const { createSessionRepository } = await import('../../../../db/sessions.js')
  t.same(await createSessionRepository(db, { reuseDetection: true }).purge(), { tokens: 1, counters: 0 }, 'only the expired one')
  t.same((await db.select().from(refreshTokens)).map((row) => row.jti), [jti])
})

t.test('the purge runs by itself on its interval', async (t) => {
  // The interval is ticked by hand: the test waits for the purge, not for the time between two.
  mock.timers.enable({ apis: ['setInterval'] })
  t.teardown(() => mock.timers.reset())
  const purges: Array<Record<string, unknown>> = []
  const database = await freshDatabase(t)
  const own = Fastify({ logger: { level: 'debug', stream: { write: (line: string) => { if (line.includes('purged')) purges.push(JSON.parse(line)) } } } })
  await own.register(dbPlugin, { client: database })
  await own.register(authPlugin, { secret: 'purge-test-secret-of-32-bytes-or-more' })
  await own.register(accountsPlugin, { prefix: '/api/v1', purgeIntervalMs: 1000 })
  t.teardown(() => own.close())
  await own.ready()
  const [user] = await database.db.insert(users).values({ email: 'purge@example.com', hashed_password: 'x' }).returning()
  const jti = randomUUID()
  await database.db.insert(sessions).values({ id: jti, user_id: user!.id })
  await database.db.insert(refreshTokens).values({ jti, user_id: user!.id, family_id: jti, expires_at: new Date(Date.now() - 1000) })
  mock.timers.tick(1000)
  t.match(await until('the purge', () => purges[0], 10_000), { tokens: 1 })
  t.same(await database.db.select().from(refreshTokens).where(eq(refreshTokens.jti, jti)), [], 'the expired record is gone without anyone asking')
})

t.test('bad plugin options fail the boot with a clear message', async (t) => {
  const database = await freshDatabase(t)
  const own = Fastify({ logger: false })
  await own.register(dbPlugin, { client: database })
  await own.register(authPlugin, {})
  own.register(accountsPlugin, { purgeIntervalMs: 5 })
  await t.rejects(async () => { await own.ready() }, { code: 'ACCOUNTS_INVALID_OPTIONS', message: 'accounts plugin: purgeIntervalMs must be an integer of at least 1000 (got 5)' })
})

t.test('superusers are not special for refresh', async (t) => {
  const { session } = await superuser(app, 'root-sessions@example.com')
  t.equal((await refresh(session.refresh_token)).statusCode, 200)
})
