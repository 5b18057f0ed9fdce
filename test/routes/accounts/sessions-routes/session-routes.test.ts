import { randomUUID } from 'node:crypto'
import t from 'tap'
import { PASSWORD, bearer, build, claimsOf, movableClock, newAccount, superuser } from '../../../support/app.js'
import { assertProblem } from '../../../support/responses.js'

// The sessions a user can see and end: GET /users/me/sessions, DELETE one, logout-others, and the superuser's view.
const time = movableClock()
const app = await build(t, { SECRET_KEY: 'the session routes test secret, 32 bytes or more' }, { clock: time.clock })
const get = (url: string, headers: Record<string, string>) => app.inject({ method: 'GET', url: `/api/v1${url}`, headers })
const del = (url: string, headers: Record<string, string>) => app.inject({ method: 'DELETE', url: `/api/v1${url}`, headers })
const me = (headers: Record<string, string>) => get('/users/me', headers)
const sidOf = (token: string) => claimsOf(token).sid as string

/** Logs in from a browser of that name. */
async function loginAs (email: string, userAgent: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'user-agent': userAgent },
    payload: { username: email, password: PASSWORD }
  })
  if (res.statusCode !== 200) throw new Error(`login from ${userAgent}: ${res.statusCode} ${res.payload}`)
  const pair = res.json() as { access_token: string, refresh_token: string }
  return { ...pair, headers: bearer(pair.access_token), sid: sidOf(pair.access_token) }
}

t.test('two sessions with different User-Agents are listed, then ended one by one', async (t) => {
  const { email, session: first } = await newAccount(app)
  await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: first.refresh_token } })
  const firefox = await loginAs(email, 'Firefox/140.0')
  const safari = await loginAs(email, 'Safari/19.0')

  const listed = await get('/users/me/sessions', firefox.headers)
  t.equal(listed.statusCode, 200)
  const body = listed.json()
  t.match(body, { total: 2, offset: 0, limit: 20, has_next: false })
  t.same(body.items.map((item: { user_agent: string }) => item.user_agent), ['Safari/19.0', 'Firefox/140.0'], 'newest first; the ended login is not listed')
  const [newest, oldest] = body.items
  t.same(Object.keys(newest).sort(), ['created_at', 'current', 'id', 'ip', 'last_used_at', 'user_agent'])
  t.match(newest, { id: safari.sid, current: false, ip: '127.0.0.1' })
  t.match(oldest, { id: firefox.sid, current: true })
  t.ok(Date.parse(newest.created_at) >= Date.parse(oldest.created_at), 'created_at is an instant')
  t.equal(newest.last_used_at, newest.created_at, 'last used at its login until its first refresh')
  t.equal((await get('/users/me/sessions', safari.headers)).json().items.find((item: { current: boolean }) => item.current).id, safari.sid,
    'current follows the caller')

  t.equal((await del(`/users/me/sessions/${safari.sid}`, firefox.headers)).statusCode, 204, 'Firefox ends Safari')
  t.equal((await me(safari.headers)).statusCode, 401, 'Safari\'s access token is dead')
  const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: safari.refresh_token } })
  t.equal(refreshed.statusCode, 401, 'and its refresh token')
  t.same((await get('/users/me/sessions', firefox.headers)).json().items.map((item: { id: string }) => item.id), [firefox.sid])
  assertProblem(t, await del(`/users/me/sessions/${safari.sid}`, firefox.headers), 404, 'ACCOUNT_SESSION_NOT_FOUND', 'ending it twice')

  t.equal((await del(`/users/me/sessions/${firefox.sid}`, firefox.headers)).statusCode, 204, 'Firefox ends itself')
  t.equal((await me(firefox.headers)).statusCode, 401)
})

t.test('a refresh moves last_used_at, and the listed session keeps its id', async (t) => {
  const { session } = await newAccount(app)
  const before = (await get('/users/me/sessions', session.headers)).json().items[0]
  time.advance(1000)
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  const pair = res.json()
  const after = (await get('/users/me/sessions', bearer(pair.access_token))).json()
  t.equal(after.total, 1, 'a rotation is not a new session')
  t.equal(after.items[0].id, before.id)
  t.equal(after.items[0].created_at, before.created_at)
  t.ok(Date.parse(after.items[0].last_used_at) > Date.parse(before.last_used_at), 'last_used_at moved')
  t.equal(after.items[0].current, true, 'the rotated access token names the same session')
})

t.test('the list is paged and clamped like every list', async (t) => {
  const { email, session } = await newAccount(app)
  for (let i = 0; i < 3; i++) await loginAs(email, `agent ${i}`)
  const page = (await get('/users/me/sessions?offset=1&limit=2', session.headers)).json()
  t.match(page, { total: 4, offset: 1, limit: 2, has_next: true })
  t.same(page.items.map((item: { user_agent: string }) => item.user_agent), ['agent 1', 'agent 0'])
  t.match((await get('/users/me/sessions?limit=1000', session.headers)).json(), { limit: 100, total: 4, has_next: false })
  assertProblem(t, await get('/users/me/sessions?limit=0', session.headers), 422, 'VALIDATION_FAILED', 'limit 0')
})

t.test('another user\'s session id is 404, and that session lives on', async (t) => {
  const mallory = await newAccount(app)
  const alice = await newAccount(app)
  const aliceSid = sidOf(alice.session.access_token)
  const res = await del(`/users/me/sessions/${aliceSid}`, mallory.session.headers)
  assertProblem(t, res, 404, 'ACCOUNT_SESSION_NOT_FOUND')
  t.match(res.json().detail, aliceSid)
  t.equal((await me(alice.session.headers)).statusCode, 200)
  assertProblem(t, await del(`/users/me/sessions/${randomUUID()}`, mallory.session.headers), 404, 'ACCOUNT_SESSION_NOT_FOUND', 'one that never was')
  assertProblem(t, await del('/users/me/sessions/not-a-uuid', mallory.session.headers), 422, 'VALIDATION_FAILED', 'not a uuid')
  t.notOk((await get('/users/me/sessions', mallory.session.headers)).json().items.some((item: { id: string }) => item.id === aliceSid),
    'nor is it listed')
})

t.test('logout-others ends every session but the caller\'s', async (t) => {
  const { email, session: laptop } = await newAccount(app)
  const phone = await loginAs(email, 'phone')
  const tablet = await loginAs(email, 'tablet')
  const stranger = await newAccount(app)
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/logout-others', headers: phone.headers })
  t.equal(res.statusCode, 204)
  t.equal(res.payload, '')
  t.equal((await me(phone.headers)).statusCode, 200, 'the caller lives')
  t.equal((await me(laptop.headers)).statusCode, 401, 'the laptop is out')
  t.equal((await me(tablet.headers)).statusCode, 401, 'the tablet is out')
  t.equal((await me(stranger.session.headers)).statusCode, 200, 'another user is untouched')
  const listed = (await get('/users/me/sessions', phone.headers)).json()
  t.same(listed.items.map((item: { id: string, current: boolean }) => [item.id, item.current]), [[phone.sid, true]])
  const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: phone.refresh_token } })
  t.equal(refreshed.statusCode, 200, 'the caller can still refresh')
  assertProblem(t, await app.inject({ method: 'POST', url: '/api/v1/auth/logout-others' }), 401, 'AUTH_NOT_AUTHENTICATED')
})

t.test('superusers list and end any account\'s sessions; others cannot', async (t) => {
  const root = await superuser(app, 'sessions-root@example.com')
  const { user, email, session } = await newAccount(app)
  const other = await loginAs(email, 'second device')

  const listed = await get(`/users/${user.id}/sessions`, root.session.headers)
  t.equal(listed.statusCode, 200)
  t.match(listed.json(), { total: 2, has_next: false })
  t.same(listed.json().items.map((item: { id: string, current: boolean }) => [item.id, item.current]),
    [[other.sid, false], [sidOf(session.access_token), false]], 'neither is the superuser\'s own')
  t.equal((await get(`/users/${root.user.id}/sessions`, root.session.headers)).json().items[0].current, true, 'the superuser\'s own is current')

  t.equal((await del(`/users/${user.id}/sessions/${other.sid}`, root.session.headers)).statusCode, 204)
  t.equal((await me(other.headers)).statusCode, 401, 'the ended one is dead')
  t.equal((await me(session.headers)).statusCode, 200, 'the other lives')
  assertProblem(t, await del(`/users/${root.user.id}/sessions/${sidOf(session.access_token)}`, root.session.headers), 404,
    'ACCOUNT_SESSION_NOT_FOUND', 'a session under the wrong account')
  t.equal((await me(session.headers)).statusCode, 200, 'and it lives on')

  assertProblem(t, await get('/users/999999/sessions', root.session.headers), 404, 'ACCOUNT_USER_NOT_FOUND', 'an unknown account')
  assertProblem(t, await get(`/users/${root.user.id}/sessions`, session.headers), 403, 'AUTH_NOT_SUPERUSER', 'a plain user lists')
  assertProblem(t, await del(`/users/${root.user.id}/sessions/${sidOf(root.session.access_token)}`, session.headers), 403, 'AUTH_NOT_SUPERUSER',
    'a plain user ends')
  t.equal((await me(root.session.headers)).statusCode, 200)
  assertProblem(t, await get(`/users/${user.id}/sessions`, {}), 401, 'AUTH_NOT_AUTHENTICATED')
})

t.test('the session routes are in the OpenAPI document with their schemas and problems', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const paths = doc.paths
  t.match(paths['/api/v1/users/me/sessions'].get, { operationId: 'listMySessions', security: [{ OAuth2PasswordBearer: [] }] })
  t.ok(paths['/api/v1/users/me/sessions'].get.responses['200'].content['application/json'].schema.$ref.endsWith('SessionPage'))
  t.same(Object.keys(paths['/api/v1/users/me/sessions/{session_id}'].delete.responses).sort(), ['204', '400', '401', '403', '404', '413', '414', '415', '422', '500', '503'])
  t.same(Object.keys(paths['/api/v1/auth/logout-others'].post.responses).sort(), ['204', '400', '401', '403', '413', '415', '500', '503'])
  t.match(paths['/api/v1/users/{user_id}/sessions'].get, { operationId: 'listUserSessions' })
  t.match(paths['/api/v1/users/{user_id}/sessions/{session_id}'].delete, { operationId: 'endUserSession' })
  t.match(doc.components.schemas.Session.properties, { id: { format: 'uuid' }, current: { type: 'boolean' }, last_used_at: { format: 'date-time' } })
})
