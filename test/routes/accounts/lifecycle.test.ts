import { and, eq } from 'drizzle-orm'
import t from 'tap'
import { API_PREFIX, type App } from '../../../app.js'
import { accountTokens, sessions, users } from '../../../db/schema.js'
import { resourcePlugin } from '../../../index.js'
import { PASSWORD, build, captureLogs, claimsOf, login, newAccount, register, superuser, type Session } from '../../support/app.js'
import { assertProblem, validationProblem } from '../../support/responses.js'
import { until } from '../../support/until.js'
import { TaskFields, createTask } from '../../support/tasks.js'

// The account lifecycle: a superuser creates accounts, a user deletes their own, and the
// service always keeps one active superuser.

const USERS = `${API_PREFIX}/users`
const ME = `${USERS}/me`
const TASKS = `${API_PREFIX}/tasks/`
const PUBLIC_KEYS = ['email', 'id', 'is_active', 'is_superuser', 'is_verified', 'scopes']

const { lines, logger } = captureLogs()
const app = await build(t, {}, { logger })
await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, owner: true })
// Every response this file provokes, checked at the end for passwords and hashes.
const leaks: string[] = []
app.addHook('onSend', async (request, _reply, payload) => {
  if (typeof payload === 'string' && /"(hashed_|current_)?password"\s*:|\$argon2/.test(payload)) leaks.push(`${request.method} ${request.url}: ${payload}`)
})
const root = await superuser(app, 'root@example.com')
const asRoot = root.session.headers

const createUser = (payload: unknown, headers: Record<string, string> = asRoot) =>
  app.inject({ method: 'POST', url: USERS, headers, payload: payload as object })
const deleteMe = (on: App, headers: Record<string, string>, payload?: unknown) =>
  on.inject({ method: 'DELETE', url: ME, headers, ...(payload === undefined ? {} : { payload: payload as object }) })
const getMe = (on: App, session: Session) => on.inject({ method: 'GET', url: ME, headers: session.headers })
const refresh = (on: App, session: Session) =>
  on.inject({ method: 'POST', url: `${API_PREFIX}/auth/refresh`, payload: { refresh_token: session.refresh_token } })
const passwordGrant = (on: App, email: string, password = PASSWORD) =>
  on.inject({ method: 'POST', url: `${API_PREFIX}/auth/login`, payload: { grant_type: 'password', username: email, password } })
const rowOf = async (on: App, email: string) => (await on.plinthDb.db.select().from(users).where(eq(users.email, email)))[0]
const userCount = async (on: App) => (await on.plinthDb.db.select({ id: users.id }).from(users)).length
const activeSuperusers = async (on: App) => (await on.plinthDb.db.select({ id: users.id }).from(users)
  .where(and(eq(users.is_superuser, true), eq(users.is_active, true)))).map((row) => row.id).sort((a, b) => a - b)
const mailsTo = (email: string) => lines.filter((line) => /written to the log/.test(String(line.msg)) && line.to === email)

t.test('POST /users with no flags: 201, the public user with the defaults, a hashed password', async (t) => {
  const res = await createUser({ email: 'Plain.Created@Example.COM', password: PASSWORD })
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.same(Object.keys(body).sort(), PUBLIC_KEYS, 'the public user, nothing more')
  t.match(body, { email: 'plain.created@example.com', is_active: true, is_superuser: false, scopes: ['me'], is_verified: false })
  t.notMatch(res.payload, /password|argon2/)
  t.same((await app.inject({ method: 'GET', url: `${USERS}/${body.id}`, headers: asRoot })).json(), body, 'GET shows what POST answered')

  const row = await rowOf(app, 'plain.created@example.com')
  t.ok(row, 'stored lower-cased')
  t.not(row?.hashed_password, PASSWORD, 'the password is stored hashed')
  t.match(row?.hashed_password, /^\$argon2/)

  const session = await login(app, 'PLAIN.created@example.com')
  t.same((await getMe(app, session)).json(), body, 'the new account logs in with its password, any case of its email')
})

t.test('POST /users stores and shows every flag it is given', async (t) => {
  const res = await createUser({ email: 'Flags@Example.com', password: PASSWORD, is_superuser: true, scopes: ['me', 'items:write'], is_verified: true, is_active: true })
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.same(body, { id: body.id, email: 'flags@example.com', is_active: true, is_superuser: true, scopes: ['me', 'items:write'], is_verified: true })
  t.match(await rowOf(app, 'flags@example.com'), { is_superuser: true, is_verified: true, is_active: true, scopes: 'me,items:write' })

  const session = await login(app, 'flags@example.com')
  t.same(claimsOf(session.access_token).scopes, ['me', 'items:write'], 'its tokens carry its scopes')
  t.same((await getMe(app, session)).json(), body)
  t.same((await app.inject({ method: 'GET', url: `${ME}/scopes`, headers: session.headers })).json(), { scopes: ['me', 'items:write'] })
  t.equal((await app.inject({ method: 'GET', url: USERS, headers: session.headers })).statusCode, 200, 'the new superuser can use superuser routes')

  const plain = await createUser({ email: 'flags-off@example.com', password: PASSWORD, is_superuser: false, scopes: [], is_verified: false })
  t.equal(plain.statusCode, 201)
  t.match(plain.json(), { is_superuser: false, scopes: [], is_verified: false, is_active: true })
})

t.test('POST /users with is_active false: stored and shown, and login is refused', async (t) => {
  const res = await createUser({ email: 'Inactive.Created@example.com', password: PASSWORD, is_active: false })
  t.equal(res.statusCode, 201)
  t.match(res.json(), { email: 'inactive.created@example.com', is_active: false, is_superuser: false })
  t.equal((await rowOf(app, 'inactive.created@example.com'))?.is_active, false)
  const refused = await passwordGrant(app, 'inactive.created@example.com')
  t.equal(refused.statusCode, 400)
  t.match(refused.json(), { error: 'invalid_grant', code: 'AUTH_INACTIVE_USER' })
  t.equal((await app.plinthDb.db.select().from(sessions).where(eq(sessions.user_id, res.json().id))).length, 0, 'no session was opened')
})

t.test('POST /users with a taken email, in any case, is 409 and changes nothing', async (t) => {
  const { user, email, session } = await newAccount(app)
  const before = await rowOf(app, email)
  const count = await userCount(app)
  for (const taken of [email, email.toUpperCase(), `${email[0]!.toUpperCase()}${email.slice(1)}`]) {
    const res = await createUser({ email: taken, password: 'another password entirely', is_superuser: true, scopes: ['admin'], is_verified: true })
    assertProblem(t, res, 409, 'ACCOUNT_EMAIL_TAKEN', taken)
    t.equal(res.json().detail, `The email ${email} is already registered`)
  }
  t.equal(await userCount(app), count, 'no account was added')
  t.same(await rowOf(app, email), before, 'the existing account is untouched')
  t.same((await getMe(app, session)).json(), user, 'its session still works')
  t.ok(await login(app, email), 'it still logs in with its own password')
  t.equal((await passwordGrant(app, email, 'another password entirely')).statusCode, 400, 'not with the one POST /users was given')
})

t.test('POST /users: 401 without a token, 403 for a regular account, and nothing is created', async (t) => {
  const count = await userCount(app)
  const anonymous = await app.inject({ method: 'POST', url: USERS, payload: { email: 'anon-made@example.com', password: PASSWORD } })
  assertProblem(t, anonymous, 401, 'AUTH_NOT_AUTHENTICATED')
  const { session } = await newAccount(app)
  const regular = await createUser({ email: 'regular-made@example.com', password: PASSWORD, is_superuser: true }, session.headers)
  assertProblem(t, regular, 403, 'AUTH_NOT_SUPERUSER')
  const bogus = await createUser({ email: 'bogus-made@example.com', password: PASSWORD }, { authorization: 'Bearer not.a.token' })
  t.equal(bogus.statusCode, 401, 'a bad token')
  t.equal(await userCount(app), count + 1, 'only the regular account itself was added')
  t.notOk(await rowOf(app, 'anon-made@example.com'))
  t.notOk(await rowOf(app, 'regular-made@example.com'))
})

t.test('POST /users: bad bodies are 422 with the failing field, and nothing is created', async (t) => {
  const count = await userCount(app)
  const cases: Array<[unknown, string, string]> = [
    [{ email: 'nopass@example.com' }, '/body/password', 'is required'],
    [{ password: PASSWORD }, '/body/email', 'is required'],
    [{ email: 'short@example.com', password: 'short77' }, '/body/password', 'must NOT have fewer than 8 characters'],
    [{ email: 'not-an-email', password: PASSWORD }, '/body/email', 'must match format "email"'],
    [{ email: 'scope1@example.com', password: PASSWORD, scopes: ['has space'] }, '/body/scopes/0', 'must match pattern "^[a-z][a-z0-9:_.-]{0,63}$"'],
    [{ email: 'scope2@example.com', password: PASSWORD, scopes: ['me', 'has,comma'] }, '/body/scopes/1', 'must match pattern "^[a-z][a-z0-9:_.-]{0,63}$"'],
    [{ email: 'scope3@example.com', password: PASSWORD, scopes: ['Admin'] }, '/body/scopes/0', 'must match pattern "^[a-z][a-z0-9:_.-]{0,63}$"'],
    [{ email: 'scope4@example.com', password: PASSWORD, scopes: 'me' }, '/body/scopes', 'must be array'],
    [{ email: 'flag@example.com', password: PASSWORD, is_superuser: 'yes' }, '/body/is_superuser', 'must be boolean']
  ]
  for (const [payload, path, message] of cases) {
    const res = await createUser(payload)
    t.same(res.json(), validationProblem([path, message]), JSON.stringify(payload).slice(0, 70))
  }
  t.equal((await createUser(undefined)).statusCode, 422, 'no body')
  t.equal(await userCount(app), count, 'none of them made an account')
})

t.test('POST /users: unknown fields are dropped, never stored (the app strips them rather than refusing)', async (t) => {
  const res = await createUser({ email: 'extra@example.com', password: PASSWORD, id: 999999, hashed_password: 'plain', created_at: '2000-01-01T00:00:00Z', role: 'admin' })
  t.equal(res.statusCode, 201)
  t.not(res.json().id, 999999)
  t.same(Object.keys(res.json()).sort(), PUBLIC_KEYS)
  const row = await rowOf(app, 'extra@example.com')
  t.match(row?.hashed_password, /^\$argon2/, 'the hash is of the password, not the field')
  t.ok(row && row.created_at.getFullYear() > 2000)
  t.ok(await login(app, 'extra@example.com'))
})

t.test('an account created unverified is mailed a link that verifies it; one created verified is mailed nothing', async (t) => {
  const verified = await createUser({ email: 'Mail.Verified@example.com', password: PASSWORD, is_verified: true })
  t.equal(verified.statusCode, 201)
  const unverified = await createUser({ email: 'Mail.Unverified@example.com', password: PASSWORD })
  t.equal(unverified.statusCode, 201)
  const mail = await until('the verification mail in the log', () => mailsTo('mail.unverified@example.com')[0])
  t.match(mail, { level: 30, mail: 'verify-email', to: 'mail.unverified@example.com', link: /\/verify-email\?token=/ })
  t.equal(mailsTo('mail.unverified@example.com').length, 1, 'one mail')
  t.same(mailsTo('mail.verified@example.com'), [], 'none to the account created verified')
  t.same(lines.filter((line) => JSON.stringify(line).includes(PASSWORD)), [], 'the password is never logged')

  const token = new URL(String(mail.link)).searchParams.get('token')
  const done = await app.inject({ method: 'POST', url: `${API_PREFIX}/auth/verify`, payload: { token } })
  t.equal(done.statusCode, 200)
  t.same(done.json(), { ...unverified.json(), is_verified: true }, 'the link verifies that account')
})

t.test('DELETE /users/me: a wrong or missing current_password refuses, and the account still works', async (t) => {
  const { user, email, session } = await newAccount(app)
  const wrong = await deleteMe(app, session.headers, { current_password: 'not the password' })
  assertProblem(t, wrong, 403, 'ACCOUNT_WRONG_PASSWORD')
  t.same(wrong.json().detail, 'current_password is incorrect')
  const empty = await deleteMe(app, session.headers, { current_password: '' })
  assertProblem(t, empty, 403, 'ACCOUNT_WRONG_PASSWORD', 'an empty password')

  t.same((await deleteMe(app, session.headers, {})).json(), validationProblem(['/body/current_password', 'is required']))
  t.same((await deleteMe(app, session.headers, { password: PASSWORD })).json(), validationProblem(['/body/current_password', 'is required']), 'password is not current_password')
  t.same((await deleteMe(app, session.headers, { current_password: 12345678 })).json(), validationProblem(['/body/current_password', 'must be string']))
  t.equal((await deleteMe(app, session.headers)).statusCode, 422, 'no body')
  assertProblem(t, await deleteMe(app, {}, { current_password: PASSWORD }), 401, 'AUTH_NOT_AUTHENTICATED', 'no token')

  t.same((await getMe(app, session)).json(), user, 'the account is still there')
  t.equal((await refresh(app, session)).statusCode, 200, 'its refresh token still works')
  t.ok(await login(app, email), 'and its password')
})

t.test('DELETE /users/me: 204, then every session, the password and the owned rows are gone; the email is free', async (t) => {
  const ada = await newAccount(app)
  const bob = await newAccount(app)
  const second = await login(app, ada.email)
  await createTask(app, { title: 'ada one' }, ada.session.headers)
  await createTask(app, { title: 'ada two' }, second.headers)
  await createTask(app, { title: 'bob one' }, bob.session.headers)
  const titles = async () => (await app.inject({ method: 'GET', url: TASKS, headers: asRoot })).json().map((task: { title: string }) => task.title).sort()
  t.same(await titles(), ['ada one', 'ada two', 'bob one'])
  t.ok((await app.plinthDb.db.select().from(accountTokens).where(eq(accountTokens.user_id, ada.user.id))).length > 0, 'ada has a verification token')

  const res = await deleteMe(app, ada.session.headers, { current_password: PASSWORD })
  t.equal(res.statusCode, 204)
  t.equal(res.payload, '')

  for (const [name, session] of [['the deleting session', ada.session], ['another login', second]] as const) {
    assertProblem(t, await getMe(app, session), 401, 'AUTH_INVALID_TOKEN', `${name}: its access token`)
    assertProblem(t, await refresh(app, session), 401, 'AUTH_INVALID_REFRESH_TOKEN', `${name}: its refresh token`)
  }
  const relogin = await passwordGrant(app, ada.email)
  t.equal(relogin.statusCode, 400)
  t.match(relogin.json(), { error: 'invalid_grant', code: 'AUTH_INVALID_CREDENTIALS' })
  t.equal((await app.inject({ method: 'GET', url: `${USERS}/${ada.user.id}`, headers: asRoot })).statusCode, 404)

  t.same(await titles(), ['bob one'], 'ada\'s rows went with her; bob\'s stayed')
  t.equal((await app.inject({ method: 'GET', url: TASKS, headers: bob.session.headers })).json().length, 1)
  t.same(await app.plinthDb.db.select().from(sessions).where(eq(sessions.user_id, ada.user.id)), [], 'her sessions are deleted')
  t.same(await app.plinthDb.db.select().from(accountTokens).where(eq(accountTokens.user_id, ada.user.id)), [], 'and her mailed tokens')
  t.same((await getMe(app, bob.session)).json(), bob.user, 'bob is untouched')

  const again = await register(app, ada.email, 'a new password for a new account')
  t.not(again.id, ada.user.id, 'the email registers again, as a new account')
  const fresh = await login(app, ada.email, 'a new password for a new account')
  t.same((await app.inject({ method: 'GET', url: TASKS, headers: fresh.headers })).json(), [], 'which inherits nothing')
  assertProblem(t, await getMe(app, ada.session), 401, 'AUTH_INVALID_TOKEN', 'the old token does not reach the new account')
})

t.test('DELETE /users/{user_id} of a regular account: 204 and its rows go too; an unknown id is 404', async (t) => {
  const carl = await newAccount(app)
  await createTask(app, { title: 'carl one' }, carl.session.headers)
  const before = (await app.inject({ method: 'GET', url: TASKS, headers: asRoot })).json().length
  t.equal((await app.inject({ method: 'DELETE', url: `${USERS}/${carl.user.id}`, headers: asRoot })).statusCode, 204)
  t.equal((await app.inject({ method: 'GET', url: TASKS, headers: asRoot })).json().length, before - 1)
  assertProblem(t, await getMe(app, carl.session), 401, 'AUTH_INVALID_TOKEN')
  assertProblem(t, await app.inject({ method: 'DELETE', url: `${USERS}/${carl.user.id}`, headers: asRoot }), 404, 'ACCOUNT_USER_NOT_FOUND', 'twice')
  assertProblem(t, await app.inject({ method: 'DELETE', url: `${USERS}/2147483647`, headers: asRoot }), 404, 'ACCOUNT_USER_NOT_FOUND', 'unknown')
})

t.test('the last active superuser cannot delete itself, by /me or by id', async (t) => {
  const own = await build(t)
  const admin = await superuser(own, 'only-admin@example.com')
  const regular = await register(own, 'regular@example.com')
  t.same(await activeSuperusers(own), [admin.user.id])

  const byMe = await deleteMe(own, admin.session.headers, { current_password: PASSWORD })
  assertProblem(t, byMe, 409, 'ACCOUNT_LAST_SUPERUSER', 'DELETE /users/me')
  t.match(byMe.json().detail, /last active superuser.*another account/)
  const byId = await own.inject({ method: 'DELETE', url: `${USERS}/${admin.user.id}`, headers: admin.session.headers })
  assertProblem(t, byId, 409, 'ACCOUNT_LAST_SUPERUSER', 'DELETE /users/{own id}')
  t.equal(byId.json().detail, byMe.json().detail)

  t.same((await getMe(own, admin.session)).json(), admin.user, 'still there, still signed in')
  t.ok(await login(own, admin.user.email), 'and can log in')
  t.same(await activeSuperusers(own), [admin.user.id])

  assertProblem(t, await deleteMe(own, admin.session.headers, { current_password: 'wrong' }), 403, 'ACCOUNT_WRONG_PASSWORD', 'the password is checked first')
  t.equal((await own.inject({ method: 'DELETE', url: `${USERS}/${regular.id}`, headers: admin.session.headers })).statusCode, 204, 'other accounts still go')
  assertProblem(t, await own.inject({ method: 'DELETE', url: `${USERS}/2147483647`, headers: admin.session.headers }), 404, 'ACCOUNT_USER_NOT_FOUND')
})

t.test('an inactive superuser does not count; once active it does, and then the other may go', async (t) => {
  const own = await build(t)
  const admin = await superuser(own, 'first-admin@example.com')
  const dormant = await own.inject({
    method: 'POST', url: USERS, headers: admin.session.headers, payload: { email: 'dormant@example.com', password: PASSWORD, is_superuser: true, is_active: false }
  })
  t.equal(dormant.statusCode, 201)
  t.match(dormant.json(), { is_superuser: true, is_active: false })

  assertProblem(t, await deleteMe(own, admin.session.headers, { current_password: PASSWORD }), 409, 'ACCOUNT_LAST_SUPERUSER', 'with only an inactive other')
  assertProblem(t, await own.inject({ method: 'DELETE', url: `${USERS}/${admin.user.id}`, headers: admin.session.headers }), 409, 'ACCOUNT_LAST_SUPERUSER', 'by id too')

  const woken = await own.inject({ method: 'PATCH', url: `${USERS}/${dormant.json().id}`, headers: admin.session.headers, payload: { is_active: true } })
  t.equal(woken.statusCode, 200)
  t.same(await activeSuperusers(own), [admin.user.id, dormant.json().id].sort((a, b) => a - b))

  t.equal((await deleteMe(own, admin.session.headers, { current_password: PASSWORD })).statusCode, 204, 'two active superusers: one may delete itself')
  t.same(await activeSuperusers(own), [dormant.json().id])
  t.notOk(await rowOf(own, 'first-admin@example.com'))

  const next = await login(own, 'dormant@example.com')
  assertProblem(t, await deleteMe(own, next.headers, { current_password: PASSWORD }), 409, 'ACCOUNT_LAST_SUPERUSER', 'and now it is the last one')
})

t.test('with two superusers, one deletes the other by id, and then cannot delete itself', async (t) => {
  const own = await build(t)
  const a = await superuser(own, 'a-admin@example.com')
  const b = await superuser(own, 'b-admin@example.com')
  t.equal((await own.inject({ method: 'DELETE', url: `${USERS}/${b.user.id}`, headers: a.session.headers })).statusCode, 204)
  assertProblem(t, await getMe(own, b.session), 401, 'AUTH_INVALID_TOKEN')
  assertProblem(t, await own.inject({ method: 'DELETE', url: `${USERS}/${a.user.id}`, headers: a.session.headers }), 409, 'ACCOUNT_LAST_SUPERUSER')
  t.same(await activeSuperusers(own), [a.user.id])
})

t.test('superusers deleting themselves at the same time: exactly one stays, every round', async (t) => {
  const own = await build(t)
  let survivor = await superuser(own, 'race-0@example.com')
  for (let round = 1; round <= 5; round++) {
    const rival = await superuser(own, `race-${round}@example.com`)
    const contenders = [survivor, rival]
    const answers = await Promise.all(contenders.map((one) => deleteMe(own, one.session.headers, { current_password: PASSWORD })))
    t.same(answers.map((res) => res.statusCode).sort(), [204, 409], `round ${round}: one 204, one 409`)
    const refused = answers.findIndex((res) => res.statusCode === 409)
    if (refused < 0) return
    t.equal(answers[refused]?.json().code, 'ACCOUNT_LAST_SUPERUSER')
    const kept = contenders[refused]!
    t.same(await activeSuperusers(own), [kept.user.id], `round ${round}: exactly one active superuser, the refused one`)
    t.equal((await getMe(own, kept.session)).statusCode, 200)
    survivor = kept
  }

  const three = [survivor, await superuser(own, 'race-x@example.com'), await superuser(own, 'race-y@example.com')]
  const answers = await Promise.all(three.map((one) => deleteMe(own, one.session.headers, { current_password: PASSWORD })))
  t.same(answers.map((res) => res.statusCode).sort(), [204, 204, 409], 'three at once: two go, one stays')
  t.equal((await activeSuperusers(own)).length, 1)
})

t.test('two superusers deleting each other by id at the same time: one stays', async (t) => {
  const own = await build(t)
  for (let round = 1; round <= 3; round++) {
    const a = await superuser(own, `cross-a${round}@example.com`)
    const b = await superuser(own, `cross-b${round}@example.com`)
    // Leave only these two as active superusers.
    await own.plinthDb.db.update(users).set({ is_superuser: false }).where(eq(users.is_superuser, true))
    await own.plinthDb.db.update(users).set({ is_superuser: true }).where(eq(users.id, a.user.id))
    await own.plinthDb.db.update(users).set({ is_superuser: true }).where(eq(users.id, b.user.id))
    const answers = await Promise.all([
      own.inject({ method: 'DELETE', url: `${USERS}/${b.user.id}`, headers: a.session.headers }),
      own.inject({ method: 'DELETE', url: `${USERS}/${a.user.id}`, headers: b.session.headers })
    ])
    t.same(answers.map((res) => res.statusCode).sort(), [204, 409], `round ${round}`)
    t.equal((await activeSuperusers(own)).length, 1, `round ${round}: one active superuser left`)
  }
})

t.test('the last active superuser cannot be demoted or deactivated either; with another one it can', async (t) => {
  const own = await build(t)
  const admin = await superuser(own, 'keeper@example.com')
  const patch = (id: number, payload: object) => own.inject({ method: 'PATCH', url: `${USERS}/${id}`, headers: admin.session.headers, payload })
  for (const payload of [{ is_superuser: false }, { is_active: false }, { is_superuser: false, email: 'moved-keeper@example.com' }]) {
    assertProblem(t, await patch(admin.user.id, payload), 409, 'ACCOUNT_LAST_SUPERUSER', JSON.stringify(payload))
  }
  t.same(await activeSuperusers(own), [admin.user.id], 'still the active superuser')
  t.equal((await rowOf(own, 'keeper@example.com'))?.email, 'keeper@example.com', 'and nothing of the refused change was written')
  const other = await superuser(own, 'second-keeper@example.com')
  const taken = await patch(admin.user.id, { is_superuser: false, email: 'second-keeper@example.com' })
  assertProblem(t, taken, 409, 'ACCOUNT_EMAIL_TAKEN', 'a demotion with a taken email')
  t.same(await activeSuperusers(own), [admin.user.id, other.user.id], 'the refused demotion was not written')
  const demoted = await patch(admin.user.id, { is_superuser: false })
  t.equal(demoted.statusCode, 200)
  t.equal(demoted.json().is_superuser, false)
  t.same(await activeSuperusers(own), [other.user.id])
})

t.test('no response of this file contained a password or a hash', async (t) => {
  t.same(leaks, [])
})
