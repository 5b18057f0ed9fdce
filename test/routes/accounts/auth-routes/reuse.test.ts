import { eq, sql } from 'drizzle-orm'
import t from 'tap'
import { refreshTokens } from '../../../../db/schema.js'
import type { App } from '../../../../app.js'
import { PASSWORD, build, captureLogs, login, newAccount } from '../../../support/app.js'

// REFRESH_REUSE_DETECTION=true: RFC 9700 section 4.14.2. A refresh token that was already rotated
// (or logged out) and is presented again means two parties hold the chain: revoke all of it.

const REUSED = /already used; every token of its login has been revoked/
const refresh = (app: App, token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })
const logout = (app: App, token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: token } })
const rotate = async (app: App, token: string): Promise<string> => {
  const res = await refresh(app, token)
  if (res.statusCode !== 200) throw new Error(`refresh: ${res.statusCode} ${res.payload}`)
  return res.json().refresh_token
}
const familyRows = async (app: App, userId: number) =>
  app.plinthDb.db.select({ revoked: refreshTokens.revoked, family: refreshTokens.family_id }).from(refreshTokens).where(eq(refreshTokens.user_id, userId))

t.test('a replayed rotated token revokes its whole family, and the revocation outlives the 401', async (t) => {
  const logs = captureLogs()
  const app = await build(t, { REFRESH_REUSE_DETECTION: true, REFRESH_REUSE_INTERVAL_SECONDS: 0 }, { logger: logs.logger })
  const { user, email, session } = await newAccount(app)
  const other = await login(app, email) // a second login: another family, which must survive
  const second = await rotate(app, session.refresh_token)
  const third = await rotate(app, second)

  const replay = await refresh(app, session.refresh_token)
  t.equal(replay.statusCode, 401)
  t.equal(replay.json().code, 'AUTH_INVALID_REFRESH_TOKEN')
  t.match(replay.json().detail, REUSED)

  const stolen = await refresh(app, third)
  t.equal(stolen.statusCode, 401, 'the newest token of the family is revoked too')
  const rows = await familyRows(app, user.id)
  const families = new Map<string, boolean[]>()
  for (const row of rows) families.set(row.family, [...(families.get(row.family) ?? []), row.revoked])
  t.equal(families.size, 2)
  t.ok([...families.values()].some((revoked) => revoked.length === 3 && revoked.every(Boolean)), 'the replayed family: three records, all revoked, committed')
  t.equal((await refresh(app, other.refresh_token)).statusCode, 200, 'the other login is untouched')

  const warning = logs.lines.find((line) => line.level === 40 && /presented again/.test(String(line.msg)))
  t.equal(warning?.userId, user.id, 'the replay is logged with the account')
  t.notMatch(JSON.stringify(logs.lines), session.refresh_token.split('.')[2] as string, 'never the token itself')
})

t.test('a logged-out token presented again at logout revokes its family', async (t) => {
  const app = await build(t, { REFRESH_REUSE_DETECTION: true, REFRESH_REUSE_INTERVAL_SECONDS: 0 })
  const { user, session } = await newAccount(app)
  const next = await rotate(app, session.refresh_token)
  t.equal((await logout(app, session.refresh_token)).statusCode, 401)
  t.match((await logout(app, session.refresh_token)).json().detail, REUSED)
  t.equal((await refresh(app, next)).statusCode, 401)
  t.ok((await familyRows(app, user.id)).every((row) => row.revoked))
})

t.test('an unknown or forged jti is an ordinary 401 and revokes nothing', async (t) => {
  const app = await build(t, { REFRESH_REUSE_DETECTION: true })
  const { user, session } = await newAccount(app)
  await app.plinthDb.db.delete(refreshTokens).where(eq(refreshTokens.user_id, user.id))
  const again = await login(app, (await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })).json().email)
  const res = await refresh(app, session.refresh_token)
  t.equal(res.statusCode, 401)
  t.match(res.json().detail, /already used, revoked, or is unknown/)
  t.equal((await refresh(app, again.refresh_token)).statusCode, 200)
})

t.test('within REFRESH_REUSE_INTERVAL_SECONDS of its rotation a replay is refused and the family kept; after it, the family ends', async (t) => {
  const app = await build(t, { REFRESH_REUSE_DETECTION: true, REFRESH_REUSE_INTERVAL_SECONDS: 10 })
  const { user, session } = await newAccount(app)
  const first = session.refresh_token
  const second = await rotate(app, first)
  const jtiOf = (token: string) => String(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).jti)
  const stored = async (token: string, age: string) =>
    app.plinthDb.db.update(refreshTokens).set({ created_at: sql`now() - ${age}::interval` }).where(eq(refreshTokens.jti, jtiOf(token)))

  const twin = await refresh(app, first)
  t.equal(twin.statusCode, 401, 'the second tab of two refreshing at once')
  t.match(twin.json().detail, /another request rotated it a moment ago; use the pair that request received/)
  t.ok((await familyRows(app, user.id)).some((row) => !row.revoked), 'the family lives')

  // The rotation is when the successor was stored: at the edges, just inside and just outside.
  await stored(first, '60 seconds')
  await stored(second, '9.5 seconds')
  t.match((await refresh(app, first)).json().detail, /a moment ago/, '9.5 s after its rotation: inside')
  await stored(second, '10.5 seconds')
  t.match((await refresh(app, first)).json().detail, REUSED, '10.5 s after: a replay, the family ends')
  t.equal((await refresh(app, second)).statusCode, 401)
  t.ok((await familyRows(app, user.id)).every((row) => row.revoked))
})

t.test('at the token endpoint the second tab reads invalid_grant, and its sibling keeps refreshing', async (t) => {
  const app = await build(t, { REFRESH_REUSE_DETECTION: true })
  const { session } = await newAccount(app)
  const grant = (token: string) => app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }).toString()
  })
  const [a, b] = await Promise.all([grant(session.refresh_token), grant(session.refresh_token)])
  const [won, lost] = a.statusCode === 200 ? [a, b] : [b, a]
  t.same([won.statusCode, lost.statusCode], [200, 400])
  t.equal(lost.json().error, 'invalid_grant')
  t.equal((await grant(won.json().refresh_token)).statusCode, 200, 'the winner\'s pair still works')
})

t.test('off by default: a replay is refused but the rest of the chain lives on, as SPEC.md says', async (t) => {
  const app = await build(t)
  const { session } = await newAccount(app)
  const second = await rotate(app, session.refresh_token)
  const replay = await refresh(app, session.refresh_token)
  t.equal(replay.statusCode, 401)
  t.match(replay.json().detail, /already used, revoked, or is unknown/)
  t.equal((await refresh(app, second)).statusCode, 200)
})

t.test('a replay that asks for a scope is still a replay: it ends the family, whatever the scope', async (t) => {
  const app = await build(t, { REFRESH_REUSE_DETECTION: true, REFRESH_REUSE_INTERVAL_SECONDS: 0 })
  const { email } = await newAccount(app)
  const narrowed = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ username: email, password: PASSWORD, scope: 'me' }).toString()
  })
  const first = narrowed.json().refresh_token
  const next = await rotate(app, first)
  const grant = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first, scope: 'me admin' }).toString()
  })
  t.match(grant.json(), { error: 'invalid_grant', code: 'AUTH_INVALID_REFRESH_TOKEN', detail: REUSED }, 'at the token URL: a replay, not invalid_scope')
  t.equal((await refresh(app, next)).statusCode, 401, 'the family has ended')
  const again = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: first, scope: 'admin' } })
  t.match(again.json(), { status: 401, code: 'AUTH_INVALID_REFRESH_TOKEN' }, 'and at /auth/refresh')
})
