import { eq } from 'drizzle-orm'
import { createSigner } from 'fast-jwt'
import t from 'tap'
import type { App } from '../../../../app.js'
import { refreshTokens, sessions } from '../../../../db/schema.js'
import { build, claimsOf, login, newAccount, superuser, type Session } from '../../../support/app.js'
import { countingDatabase, freshDatabase } from '../../../support/database.js'

// A session is a refresh-token family; its access tokens name it (sid) and die with it.
const SECRET_KEY = 'the session check test secret, 32 bytes or more'
const me = (app: App, session: Session) => app.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })
const post = (app: App, url: string, payload: object, headers: Record<string, string> = {}) => app.inject({ method: 'POST', url, payload, headers })

t.test('each way a session ends kills its access tokens at once', async (t) => {
  const app = await build(t, { SECRET_KEY, REFRESH_REUSE_DETECTION: true, REFRESH_REUSE_INTERVAL_SECONDS: 0 })
  const root = await superuser(app)
  const ways: Array<[string, (account: Awaited<ReturnType<typeof newAccount>>) => Promise<unknown>]> = [
    ['logout', async ({ session }) => post(app, '/api/v1/auth/logout', { refresh_token: session.refresh_token })],
    ['logout-all', async ({ session }) => post(app, '/api/v1/auth/logout-all', {}, session.headers)],
    ['a password change', async ({ session }) => app.inject({
      method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: { current_password: 'correct horse battery', password: 'a brand new password' }
    })],
    // Active again afterwards, so the ended session answers rather than the inactive account (403).
    ['a deactivation', async ({ user }) => {
      const setActive = (active: boolean) => app.inject({ method: 'PATCH', url: `/api/v1/users/${user.id}`, headers: root.session.headers, payload: { is_active: active } })
      await setActive(false)
      return setActive(true)
    }],
    ['reuse detection', async ({ session }) => {
      await post(app, '/api/v1/auth/refresh', { refresh_token: session.refresh_token })
      return post(app, '/api/v1/auth/refresh', { refresh_token: session.refresh_token })
    }],
    ['revoking the access token', async ({ session }) => app.inject({
      method: 'POST', url: '/api/v1/auth/revoke', payload: { token: session.access_token }
    })],
    ['logout-others from another session', async ({ email }) => post(app, '/api/v1/auth/logout-others', {}, (await login(app, email)).headers)],
    ['ending it from the session list', async ({ session }) => app.inject({
      method: 'DELETE', url: `/api/v1/users/me/sessions/${claimsOf(session.access_token).sid}`, headers: session.headers
    })],
    ['a superuser ending it', async ({ user, session }) => app.inject({
      method: 'DELETE', url: `/api/v1/users/${user.id}/sessions/${claimsOf(session.access_token).sid}`, headers: root.session.headers
    })]
  ]
  for (const [way, end] of ways) {
    const account = await newAccount(app)
    t.equal((await me(app, account.session)).statusCode, 200, `${way}: live before`)
    await end(account)
    const res = await me(app, account.session)
    t.equal(res.statusCode, 401, `${way}: 401 after`)
    t.match(res.headers['www-authenticate'], /error="invalid_token"/, way)
  }
})

t.test('the check is in the user lookup: one statement per request, one for concurrent ones', async (t) => {
  const client = await freshDatabase(t)
  const counted = countingDatabase(client)
  const app = await build(t, { SECRET_KEY }, { database: { ...client, db: counted.db } })
  const accounts = await Promise.all(Array.from({ length: 5 }, () => newAccount(app)))
  const before = counted.queries()
  t.equal((await me(app, accounts[0]!.session)).statusCode, 200)
  t.equal(counted.queries() - before, 1, 'one statement reads the user and the session')
  const again = counted.queries()
  const answers = await Promise.all(accounts.map(({ session }) => me(app, session)))
  t.same(answers.map((res) => res.statusCode), [200, 200, 200, 200, 200])
  t.equal(counted.queries() - again, 1, 'five guards, one statement')
  await post(app, '/api/v1/auth/logout', { refresh_token: accounts[1]!.session.refresh_token })
  const mixed = await Promise.all(accounts.map(({ session }) => me(app, session)))
  t.same(mixed.map((res) => res.statusCode), [200, 401, 200, 200, 200], 'the ended session is refused among live ones')
})

t.test('a session records its client, and its last refresh', async (t) => {
  const app = await build(t, { SECRET_KEY, TRUST_PROXY: true })
  const { email } = await newAccount(app)
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': `Firefox/140 ${'x'.repeat(600)}`, 'x-forwarded-for': '203.0.113.9' },
    payload: new URLSearchParams({ username: email, password: 'correct horse battery' }).toString()
  })
  const sid = String(claimsOf(res.json().access_token).sid)
  t.equal(sid, String(claimsOf(res.json().refresh_token).jti), 'the session is the family of the first refresh token')
  const [row] = await app.plinthDb.db.select().from(sessions).where(eq(sessions.id, sid))
  t.match(row, { user_agent: /^Firefox\/140 x+$/, ip: '203.0.113.9', ended_at: null })
  t.equal(row!.user_agent!.length, 512, 'a User-Agent is cut at 512 characters')
  await app.plinthDb.db.update(refreshTokens).set({ created_at: new Date(Date.now() - 60_000) }).where(eq(refreshTokens.family_id, sid))
  const next = (await post(app, '/api/v1/auth/refresh', { refresh_token: res.json().refresh_token })).json()
  t.equal(claimsOf(next.access_token).sid, sid, 'a refresh stays in the session')
  const listed = await app.inject({ url: '/api/v1/users/me/sessions', headers: { authorization: `Bearer ${next.access_token}` } })
  const used = listed.json().items.find((item: { id: string }) => item.id === sid)
  t.ok(Date.parse(used.last_used_at) > Date.now() - 30_000, 'last_used_at is the refresh')
})

t.test('a token naming no session is refused; SESSION_CHECK=false makes access tokens stateless again', async (t) => {
  const app = await build(t, { SECRET_KEY })
  const { user, session } = await newAccount(app)
  const now = Math.floor(Date.now() / 1000)
  const sessionless = createSigner({ key: SECRET_KEY })({ sub: String(user.id), scopes: ['me'], type: 'access', jti: 'x', iat: now, exp: now + 60 })
  const res = await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: { authorization: `Bearer ${sessionless}` } })
  t.equal(res.statusCode, 401)
  t.match(res.json().detail, /names no session/)

  const stateless = await build(t, { SECRET_KEY, SESSION_CHECK: false }, { database: app.plinthDb })
  t.equal((await post(stateless, '/api/v1/auth/logout-all', {}, session.headers)).statusCode, 204)
  t.equal((await me(stateless, session)).statusCode, 200, 'without the check an access token lives until it expires')
  t.equal((await me(app, session)).statusCode, 401, 'with it, it died with the logout')

  // Without the check the guard lets a sessionless token in, but logout-others cannot tell which session to keep.
  const others = await post(stateless, '/api/v1/auth/logout-others', {}, { authorization: `Bearer ${sessionless}` })
  t.equal(others.statusCode, 401)
  t.match(others.json().detail, /names no session/)
})
