import { eq } from 'drizzle-orm'
import t from 'tap'
import { users } from '../../../../db/schema.js'
import { PASSWORD, build, login, newAccount, superuser } from '../../../support/app.js'

const app = await build(t, { DEFAULT_PAGE_LIMIT: 2, MAX_PAGE_LIMIT: 3 })
// Every response this file provokes, checked at the end for passwords and hashes.
const leaks: string[] = []
app.addHook('onSend', async (request, _reply, payload) => {
  if (typeof payload === 'string' && /"(hashed_|current_)?password"\s*:|\$argon2/.test(payload)) leaks.push(`${request.method} ${request.url}: ${payload}`)
})
const root = await superuser(app, 'root@example.com')
const asRoot = root.session.headers

const newUser = () => newAccount(app)

t.test('GET /users/me returns the public profile, nothing more', async (t) => {
  const { user, session } = await newUser()
  const res = await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })
  t.equal(res.statusCode, 200)
  t.same(res.json(), user)
  t.notMatch(res.payload, /password/)
})

// The whole email change, through its mailed link, is in email-change.test.ts.
t.test('PATCH /users/me asks to change the email (202), which stays until confirmed; a taken email is 409', async (t) => {
  const { email, session } = await newUser()
  const other = await newUser()
  const patch = (payload: object) => app.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload })
  const taken = await patch({ email: other.email.toUpperCase(), current_password: PASSWORD })
  t.equal(taken.statusCode, 409)
  t.equal(taken.json().code, 'ACCOUNT_EMAIL_TAKEN')
  const res = await patch({ email: `New.${email}`, current_password: PASSWORD })
  t.equal(res.statusCode, 202)
  t.match(res.json().detail, `A link to confirm new.${email} has been sent to it`)
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })).json().email, email)
  t.ok(await login(app, email), 'logs in with the old email until then')
})

t.test('PATCH /users/me ignores privileged fields', async (t) => {
  const { user, session } = await newUser()
  const res = await app.inject({
    method: 'PATCH',
    url: '/api/v1/users/me',
    headers: session.headers,
    payload: { is_superuser: true, is_active: false, scopes: ['admin'], id: 1, hashed_password: 'x' }
  })
  t.equal(res.statusCode, 200)
  t.same(res.json(), user, 'nothing changed')
})

t.test('an empty PATCH /users/me returns the profile unchanged', async (t) => {
  const { user, session } = await newUser()
  const res = await app.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: {} })
  t.equal(res.statusCode, 200)
  t.same(res.json(), user)
})

t.test('a new password needs the current one, and ends every session', async (t) => {
  const { email, session } = await newUser()
  const other = await login(app, email)
  const patch = (payload: object) => app.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload })

  const missing = await patch({ password: 'a brand new password' })
  t.equal(missing.statusCode, 422)
  t.same(missing.json().errors, [{ path: '/body', message: 'must have property current_password when property password is present' }])

  const wrong = await patch({ password: 'a brand new password', current_password: 'not it' })
  t.equal(wrong.statusCode, 403)
  t.equal(wrong.json().code, 'ACCOUNT_WRONG_PASSWORD')

  const short = await patch({ password: 'short', current_password: PASSWORD })
  t.equal(short.statusCode, 422)

  const ok = await patch({ password: 'a brand new password', current_password: PASSWORD })
  t.equal(ok.statusCode, 200)
  for (const token of [session.refresh_token, other.refresh_token]) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })
    t.equal(res.statusCode, 401, 'every refresh token is revoked')
  }
  await t.rejects(login(app, email), /400 .*AUTH_INVALID_CREDENTIALS/, 'the old password no longer works')
  t.ok(await login(app, email, 'a brand new password'))
})

t.test('GET /users: a page envelope, clamped to MAX_PAGE_LIMIT', async (t) => {
  await Promise.all([newUser(), newUser(), newUser()])
  const total = (await app.plinthDb.db.select().from(users)).length
  const first = await app.inject({ method: 'GET', url: '/api/v1/users', headers: asRoot })
  t.equal(first.statusCode, 200)
  const body = first.json()
  t.same(Object.keys(body).sort(), ['has_next', 'items', 'limit', 'offset', 'total'])
  t.equal(body.limit, 2, 'DEFAULT_PAGE_LIMIT')
  t.equal(body.offset, 0)
  t.equal(body.total, total)
  t.equal(body.has_next, true)
  t.same(body.items[0], { ...root.user }, 'ordered by id: the superuser came first')
  t.notMatch(first.payload, /password/)

  const clamped = (await app.inject({ method: 'GET', url: '/api/v1/users?limit=1000', headers: asRoot })).json()
  t.equal(clamped.limit, 3)
  t.equal(clamped.items.length, 3)

  const last = (await app.inject({ method: 'GET', url: `/api/v1/users?offset=${total - 1}&limit=3`, headers: asRoot })).json()
  t.equal(last.items.length, 1)
  t.equal(last.has_next, false)

  for (const query of ['limit=0', 'offset=-1', 'limit=abc', 'offset=1e400', 'limit=Infinity']) {
    t.equal((await app.inject({ method: 'GET', url: `/api/v1/users?${query}`, headers: asRoot })).statusCode, 422, query)
  }
})

t.test('GET, PATCH and DELETE /users/{user_id} for a superuser', async (t) => {
  const { user, session, email } = await newUser()
  const url = `/api/v1/users/${user.id}`
  t.same((await app.inject({ method: 'GET', url, headers: asRoot })).json(), user)

  const patched = await app.inject({ method: 'PATCH', url, headers: asRoot, payload: { scopes: ['me', 'reports', 'me'], is_superuser: true } })
  t.equal(patched.statusCode, 200)
  t.same(patched.json(), { ...user, scopes: ['me', 'reports'], is_superuser: true })

  const bad = await app.inject({ method: 'PATCH', url, headers: asRoot, payload: { scopes: ['has,comma'] } })
  t.equal(bad.statusCode, 422)

  const deactivated = await app.inject({ method: 'PATCH', url, headers: asRoot, payload: { is_active: false } })
  t.equal(deactivated.json().is_active, false)
  const refresh = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  t.equal(refresh.statusCode, 403, 'deactivated: refresh is refused')
  await app.inject({ method: 'PATCH', url, headers: asRoot, payload: { is_active: true } })
  const revoked = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  t.equal(revoked.statusCode, 401, 'and its sessions were revoked with the deactivation')

  const deleted = await app.inject({ method: 'DELETE', url, headers: asRoot })
  t.equal(deleted.statusCode, 204)
  t.equal(deleted.payload, '')
  t.equal((await app.inject({ method: 'GET', url, headers: asRoot })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })).statusCode, 401, 'the deleted user\'s token is refused')
  await t.rejects(login(app, email), /400 .*AUTH_INVALID_CREDENTIALS/)
})

t.test('a superuser can set another user\'s password, which ends that user\'s sessions', async (t) => {
  const { user, email, session } = await newUser()
  const res = await app.inject({ method: 'PATCH', url: `/api/v1/users/${user.id}`, headers: asRoot, payload: { password: 'set by the admin' } })
  t.equal(res.statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })).statusCode, 401)
  t.ok(await login(app, email, 'set by the admin'))
})

t.test('missing users are 404, bad ids 422', async (t) => {
  for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
    const missing = await app.inject({ method, url: '/api/v1/users/2147483647', headers: asRoot, payload: method === 'PATCH' ? { is_active: true } : undefined })
    t.equal(missing.statusCode, 404, method)
    t.same(missing.json(), { type: 'about:blank', title: 'Not Found', status: 404, detail: 'user 2147483647 not found', code: 'ACCOUNT_USER_NOT_FOUND' })
    for (const id of ['0', 'abc', '1.5', '2147483648', '1e400', 'Infinity']) {
      const bad = await app.inject({ method, url: `/api/v1/users/${id}`, headers: asRoot, payload: method === 'PATCH' ? {} : undefined })
      t.equal(bad.statusCode, 422, `${method} ${id}`)
      t.equal(bad.json().errors[0].path, '/params/user_id')
    }
  }
})

t.test('a regular account gets 403 on every superuser route', async (t) => {
  const { user, session } = await newUser()
  for (const [method, url] of [['GET', '/api/v1/users'], ['GET', `/api/v1/users/${user.id}`], ['PATCH', `/api/v1/users/${user.id}`], ['DELETE', `/api/v1/users/${user.id}`]] as const) {
    const res = await app.inject({ method, url, headers: session.headers, payload: method === 'PATCH' ? { is_superuser: true } : undefined })
    t.equal(res.statusCode, 403, `${method} ${url}`)
  }
  const [row] = await app.plinthDb.db.select().from(users).where(eq(users.id, user.id))
  t.equal(row?.is_superuser, false)
})

t.test('no response of this file contained a password or a hash', async (t) => {
  t.same(leaks, [])
})
