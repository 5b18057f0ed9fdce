import { and, eq, isNull } from 'drizzle-orm'
import t from 'tap'
import type { App } from '../../../../app.js'
import { refreshTokens, sessions } from '../../../../db/schema.js'
import { build, claimsOf, login, newAccount, superuser, type Session } from '../../../support/app.js'

// A session that has ended can never be refreshed again, and ending sessions leaves none of their
// refresh tokens usable, whatever refreshes run meanwhile: with SESSION_CHECK=false the access
// token of such a refresh would live on, so the rotation itself must refuse it.

const SECRET_KEY = 'the refresh race test secret, 32 bytes or more'
const refresh = (app: App, token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })
const me = (app: App, headers: Record<string, string>) => app.inject({ method: 'GET', url: '/api/v1/users/me', headers })
const logoutAll = (app: App, session: Session) => app.inject({ method: 'POST', url: '/api/v1/auth/logout-all', headers: session.headers })

/** The refresh tokens of the user that are not revoked, in sessions that have ended or not. */
async function unrevoked (app: App, userId: number) {
  return app.plinthDb.db.select({ jti: refreshTokens.jti, ended_at: sessions.ended_at }).from(refreshTokens)
    .innerJoin(sessions, eq(sessions.id, refreshTokens.family_id))
    .where(and(eq(refreshTokens.user_id, userId), eq(refreshTokens.revoked, false)))
}

for (const check of [true, false]) {
  t.test(`SESSION_CHECK=${check}: a refresh token whose session has ended is refused, even while the token itself is not yet revoked`, async (t) => {
    const app = await build(t, { SECRET_KEY, SESSION_CHECK: check })
    const { email } = await newAccount(app)
    const session = await login(app, email)
    const sid = String(claimsOf(session.access_token).sid)
    // The state a logout-all leaves between ending the session and revoking its tokens, or that a
    // rotation racing it sees: the session has ended, its refresh token is still unrevoked.
    await app.plinthDb.db.update(sessions).set({ ended_at: new Date() }).where(eq(sessions.id, sid))

    const res = await refresh(app, session.refresh_token)
    t.equal(res.statusCode, 401, 'no successor for an ended session')
    t.match(res.json(), { code: 'AUTH_INVALID_REFRESH_TOKEN', detail: /already used, revoked, or is unknown/ })
    const grant = await app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: session.refresh_token }).toString()
    })
    t.match(grant.json(), { error: 'invalid_grant', code: 'AUTH_INVALID_REFRESH_TOKEN' }, 'nor at the token URL')
    if (res.statusCode === 200) t.equal((await me(app, { authorization: `Bearer ${res.json().access_token}` })).statusCode, 401, 'its access token')
  })

  t.test(`SESSION_CHECK=${check}: refreshes racing a logout-all leave no usable successor`, async (t) => {
    // Two instances on one database: the refreshes and the logout-all run on connections of their own.
    const app = await build(t, { SECRET_KEY, SESSION_CHECK: check })
    const other = await build(t, { SECRET_KEY, SESSION_CHECK: check }, { database: app.plinthDb })
    const { user, email } = await newAccount(app)
    for (let round = 0; round < 8; round++) {
      const logins = await Promise.all(Array.from({ length: 6 }, () => login(app, email)))
      const [ended, ...refreshed] = await Promise.all([
        logoutAll(other, logins[0]!),
        ...logins.map((session, i) => refresh(i % 2 === 0 ? app : other, session.refresh_token))
      ])
      t.equal(ended!.statusCode, 204)
      t.same(await unrevoked(app, user.id), [], `round ${round}: every refresh token of the ended sessions is revoked`)
      const live = await app.plinthDb.db.select({ id: sessions.id }).from(sessions).where(and(eq(sessions.user_id, user.id), isNull(sessions.ended_at)))
      t.same(live, [], `round ${round}: every session has ended`)
      for (const res of refreshed.filter((res) => res.statusCode === 200)) {
        t.equal((await refresh(app, res.json().refresh_token)).statusCode, 401, `round ${round}: a successor issued in the race cannot be refreshed`)
      }
    }
  })
}

t.test('refreshes racing the deletion of their account end in 200 or 401, never in a deadlock\'s 500', async (t) => {
  const app = await build(t, { SECRET_KEY })
  const other = await build(t, { SECRET_KEY }, { database: app.plinthDb })
  const admin = await superuser(app)
  for (let round = 0; round < 6; round++) {
    const { user, email } = await newAccount(app)
    const logins = await Promise.all(Array.from({ length: 6 }, () => login(app, email)))
    const [deleted, ...refreshed] = await Promise.all([
      other.inject({ method: 'DELETE', url: `/api/v1/users/${user.id}`, headers: admin.session.headers }),
      ...logins.map((session, i) => refresh(i % 2 === 0 ? app : other, session.refresh_token))
    ])
    t.equal(deleted!.statusCode, 204, `round ${round}: the account is deleted`)
    t.same(refreshed.map((res) => res.statusCode).filter((status) => status !== 200 && status !== 401), [], `round ${round}: each refresh is 200 or 401`)
    t.same(await unrevoked(app, user.id), [], `round ${round}: no refresh token outlives the account`)
  }
})
