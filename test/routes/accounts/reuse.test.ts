import { eq } from 'drizzle-orm'
import t from 'tap'
import { refreshTokens } from '../../../db/schema.js'
import type { App } from '../../../app.js'
import { build, captureLogs, login, newAccount } from '../../support/app.js'

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
  const app = await build(t, { REFRESH_REUSE_DETECTION: true }, { logger: logs.logger })
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
  const app = await build(t, { REFRESH_REUSE_DETECTION: true })
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

t.test('off by default: a replay is refused but the rest of the chain lives on, as SPEC.md says', async (t) => {
  const app = await build(t)
  const { session } = await newAccount(app)
  const second = await rotate(app, session.refresh_token)
  const replay = await refresh(app, session.refresh_token)
  t.equal(replay.statusCode, 401)
  t.match(replay.json().detail, /already used, revoked, or is unknown/)
  t.equal((await refresh(app, second)).statusCode, 200)
})
