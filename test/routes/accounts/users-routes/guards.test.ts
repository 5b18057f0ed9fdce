import { eq } from 'drizzle-orm'
import { createSigner } from 'fast-jwt'
import t from 'tap'
import { users } from '../../../../db/schema.js'
import { build, login, newAccount, superuser } from '../../../support/app.js'

const SECRET_KEY = 'the guards test secret, 32 bytes or more'
const app = await build(t, { SECRET_KEY })
// A host app's own routes, protected with the same guards.
app.register(async (host) => {
  host.get('/reports', { onRequest: host.requireScopes('reports', 'me') }, async (request) => ({ email: request.account.email }))
  host.get('/whoami', { onRequest: host.authenticate }, async (request) => ({ id: request.account.id, jti: request.tokenClaims?.jti }))
}, { prefix: '/host' })

const get = (url: string, authorization?: string) =>
  app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} })

const newUser = () => newAccount(app)

t.test('no token: 401 with a bare Bearer challenge', async (t) => {
  const res = await get('/api/v1/users/me')
  t.equal(res.statusCode, 401)
  t.equal(res.headers['www-authenticate'], 'Bearer')
  t.equal(res.json().code, 'AUTH_NOT_AUTHENTICATED')
})

t.test('a bad token: 401 with error="invalid_token"', async (t) => {
  const { user, session } = await newUser()
  const sign = (claims: object, options: object = { expiresIn: 60_000 }) =>
    createSigner({ key: SECRET_KEY, ...options })({ sub: String(user.id), scopes: ['me'], type: 'access', jti: 'x', ...claims })
  const other = createSigner({ key: 'not-our-key', expiresIn: 60_000 })
  const cases: Array<[string, string, RegExp]> = [
    ['another scheme', `Basic ${session.access_token}`, /expected "Authorization: Bearer <token>"/],
    ['a bearer without token', 'Bearer', /expected "Authorization: Bearer <token>"/],
    ['garbage', 'Bearer abc.def.ghi', /malformed or its signature is invalid/],
    ['a refresh token', `Bearer ${session.refresh_token}`, /this is not an access token/],
    ['an expired token', `Bearer ${sign({}, { expiresIn: -5_000 })}`, /the token has expired/],
    ['another key', `Bearer ${other({ sub: String(user.id), scopes: ['me'], type: 'access', jti: 'x' })}`, /signature is invalid/],
    ['alg none', `Bearer ${createSigner({ algorithm: 'none' })({ sub: String(user.id), scopes: ['me'], type: 'access', jti: 'x', exp: 9999999999 })}`, /not signed with HS256/],
    ['HS512 with our key', `Bearer ${createSigner({ key: 'irrelevant', algorithm: 'HS512' })({ sub: String(user.id), type: 'access' })}`, /not signed with HS256/],
    ['a subject that is not a number', `Bearer ${sign({ sub: 'admin' })}`, /not a user id/],
    ['a subject of 0', `Bearer ${sign({ sub: '0' })}`, /not a user id/],
    ['a subject with a leading zero', `Bearer ${sign({ sub: `0${user.id}` })}`, /not a user id/],
    ['a subject past PostgreSQL integer', `Bearer ${sign({ sub: '2147483648' })}`, /not a user id/],
    ['a numeric subject', `Bearer ${sign({ sub: user.id })}`, /not a user id/],
    ['a token without scopes', `Bearer ${sign({ scopes: undefined })}`, /lacks required claims/]
  ]
  for (const [what, authorization, detail] of cases) {
    const res = await get('/api/v1/users/me', authorization)
    t.equal(res.statusCode, 401, what)
    t.equal(res.json().code, 'AUTH_INVALID_TOKEN', what)
    t.match(res.json().detail, detail, what)
    t.match(res.headers['www-authenticate'], /^Bearer error="invalid_token", error_description="[^"]+"$/, what)
  }
})

t.test('the token of a deleted user: 401', async (t) => {
  const { user, session } = await newUser()
  await app.plinthDb.db.delete(users).where(eq(users.id, user.id))
  const res = await get('/api/v1/users/me', `Bearer ${session.access_token}`)
  t.equal(res.statusCode, 401)
  t.equal(res.json().detail, 'Invalid access token: the user no longer exists')
})

t.test('an inactive account: 403 on every protected route', async (t) => {
  const { user, session } = await newUser()
  await app.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, user.id))
  for (const [method, url] of [['GET', '/api/v1/users/me'], ['PATCH', '/api/v1/users/me'], ['GET', '/api/v1/users/me/scopes'], ['POST', '/api/v1/auth/logout-all'], ['GET', '/host/whoami']] as const) {
    const res = await app.inject({ method, url, headers: session.headers, payload: method === 'PATCH' ? {} : undefined })
    t.equal(res.statusCode, 403, `${method} ${url}`)
    t.equal(res.json().code, 'AUTH_INACTIVE_USER')
  }
})

t.test('a deactivated account\'s unexpired access token gets 403 AUTH_INACTIVE_USER, before the session check', async (t) => {
  const root = await superuser(app, 'root-deactivates@example.com')
  const { user, session } = await newUser()
  const setActive = (active: boolean) =>
    app.inject({ method: 'PATCH', url: `/api/v1/users/${user.id}`, headers: root.session.headers, payload: { is_active: active } })
  t.equal((await setActive(false)).statusCode, 200)
  const refused = await get('/api/v1/users/me', session.headers.authorization)
  t.equal(refused.statusCode, 403, 'deactivation ended the session, yet the account says it is inactive')
  t.equal(refused.json().code, 'AUTH_INACTIVE_USER')
  t.equal((await get('/host/whoami', session.headers.authorization)).statusCode, 403, 'on a host route too')

  t.equal((await setActive(true)).statusCode, 200)
  const ended = await get('/api/v1/users/me', session.headers.authorization)
  t.equal(ended.statusCode, 401, 'once active again, the session deactivation ended stays ended')
  t.equal(ended.json().detail, 'Invalid access token: its session has ended')
})

t.test('the superuser guard: 403 for a regular account, 200 for a superuser', async (t) => {
  const { session } = await newUser()
  const refused = await get('/api/v1/users', session.headers.authorization)
  t.equal(refused.statusCode, 403)
  t.same(refused.json(), { type: 'about:blank', title: 'Forbidden', status: 403, detail: 'This needs a superuser account', code: 'AUTH_NOT_SUPERUSER' })
  const root = await superuser(app, 'root-guards@example.com')
  t.equal((await get('/api/v1/users', root.session.headers.authorization)).statusCode, 200)
})

t.test('an inactive superuser is refused like any inactive account', async (t) => {
  const root = await superuser(app, 'root-inactive@example.com')
  await app.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, root.user.id))
  t.equal((await get('/api/v1/users', root.session.headers.authorization)).statusCode, 403)
})

t.test('the scope guard: the scope must be in the token and on the user', async (t) => {
  const { user, email, session } = await newUser()
  const ok = await get('/api/v1/users/me/scopes', session.headers.authorization)
  t.equal(ok.statusCode, 200)
  t.same(ok.json(), { scopes: ['me'] })

  await app.plinthDb.db.update(users).set({ scopes: '' }).where(eq(users.id, user.id))
  const removed = await get('/api/v1/users/me/scopes', session.headers.authorization)
  t.equal(removed.statusCode, 403, 'a scope removed from the user takes effect on the next request')
  t.equal(removed.json().code, 'AUTH_INSUFFICIENT_SCOPE')
  t.equal(removed.json().detail, 'This needs the scope(s): me')
  t.equal(removed.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="me"')

  await app.plinthDb.db.update(users).set({ scopes: 'me,reports' }).where(eq(users.id, user.id))
  const notInToken = await get('/host/reports', session.headers.authorization)
  t.equal(notInToken.statusCode, 403, 'a scope granted after login is not in the old token')
  t.equal(notInToken.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="reports me"')
  const fresh = await login(app, email)
  const granted = await get('/host/reports', fresh.headers.authorization)
  t.equal(granted.statusCode, 200, 'a new token carries it')
  t.same(granted.json(), { email })
})

t.test('a host app route sees the user and the token claims', async (t) => {
  const { user, session } = await newUser()
  const res = await get('/host/whoami', session.headers.authorization)
  t.equal(res.statusCode, 200)
  t.equal(res.json().id, user.id)
  t.type(res.json().jti, 'string')
})

t.test('the scheme name is case-insensitive', async (t) => {
  const { session } = await newUser()
  t.equal((await get('/api/v1/users/me', `bearer ${session.access_token}`)).statusCode, 200)
})
