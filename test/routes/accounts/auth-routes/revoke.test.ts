import { eq } from 'drizzle-orm'
import t from 'tap'
import { refreshTokens } from '../../../../db/schema.js'
import { build, claimsOf, login, newAccount } from '../../../support/app.js'

const app = await build(t, { LOGIN_MAX_FAILURES: 0, REFRESH_REUSE_DETECTION: true, REFRESH_REUSE_INTERVAL_SECONDS: 0 })

const revoke = (fields: Record<string, string>, headers: Record<string, string> = {}) => app.inject({
  method: 'POST',
  url: '/api/v1/auth/revoke',
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  payload: new URLSearchParams(fields).toString()
})
const refresh = (token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })

const stored = async (token: string) =>
  (await app.plinthDb.db.select().from(refreshTokens).where(eq(refreshTokens.jti, String(claimsOf(token).jti))))[0]

t.test('a refresh token is revoked: 200 with no body, and it no longer refreshes', async (t) => {
  const { session } = await newAccount(app)
  const res = await revoke({ token: session.refresh_token, token_type_hint: 'refresh_token' })
  t.equal(res.statusCode, 200)
  t.equal(res.payload, '')
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal((await stored(session.refresh_token))?.revoked, true)
  t.equal((await refresh(session.refresh_token)).statusCode, 401)
})

t.test('the hint is only a hint: a refresh token sent as an access token is revoked all the same', async (t) => {
  const { session } = await newAccount(app)
  t.equal((await revoke({ token: session.refresh_token, token_type_hint: 'access_token' })).statusCode, 200)
  t.equal((await stored(session.refresh_token))?.revoked, true)
})

t.test('an access token ends its session: its refresh token and every access token of it stop working', async (t) => {
  const { email, session } = await newAccount(app)
  const other = await login(app, email)
  const res = await revoke({ token: session.access_token, token_type_hint: 'access_token' })
  t.equal(res.statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })).statusCode, 401, 'the access token')
  t.equal((await stored(session.refresh_token))?.revoked, true, 'the refresh token of its session')
  t.equal((await refresh(session.refresh_token)).statusCode, 401)
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: other.headers })).statusCode, 200, 'another session of the user lives on')
})

t.test('anything else is 200 too, and revokes nothing: garbage, an unknown hint, a spent token', async (t) => {
  const { session } = await newAccount(app)
  for (const fields of <Array<Record<string, string>>>[
    { token: 'not-a-token' },
    { token: 'not-a-token', token_type_hint: 'id_token' }
  ]) {
    t.equal((await revoke(fields)).statusCode, 200, JSON.stringify(fields).slice(0, 40))
  }
  t.equal((await stored(session.refresh_token))?.revoked, false, 'the session goes on')
  const next = (await refresh(session.refresh_token)).json()
  t.equal((await revoke({ token: session.refresh_token })).statusCode, 200, 'a spent token')
  t.equal((await refresh(next.refresh_token)).statusCode, 401, 'with reuse detection, a spent token revoked again ends its login')
})

t.test('a missing token is the only invalid_request; clients authenticate as at the token endpoint', async (t) => {
  const missing = await revoke({ token_type_hint: 'refresh_token' })
  t.equal(missing.statusCode, 400)
  t.match(missing.json(), { error: 'invalid_request', error_description: 'token is required' })
  t.equal(missing.headers['content-type'], 'application/json; charset=utf-8')
  const bad = await revoke({ token: 'x' }, { authorization: 'Basic %%%' })
  t.equal(bad.statusCode, 401)
  t.equal(bad.json().error, 'invalid_client')
  const { session } = await newAccount(app)
  const basic = `Basic ${Buffer.from('my-app:secret').toString('base64')}`
  t.equal((await revoke({ token: session.refresh_token }, { authorization: basic })).statusCode, 200)
})
