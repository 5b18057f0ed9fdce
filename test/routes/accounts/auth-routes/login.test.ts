import { eq } from 'drizzle-orm'
import t from 'tap'
import { loginFailures, refreshTokens, users } from '../../../../db/schema.js'
import { hashPassword } from '../../../../plugins/auth/passwords.js'
import { PASSWORD, build, claimsOf, register } from '../../../support/app.js'

const form = (fields: Record<string, string>) => ({
  method: 'POST' as const,
  url: '/api/v1/auth/login',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  payload: new URLSearchParams(fields).toString()
})

const app = await build(t, { LOGIN_MAX_FAILURES: 0 })
const ada = await register(app, 'ada@example.com')

t.test('the password form returns a bearer token pair', async (t) => {
  const res = await app.inject(form({ grant_type: 'password', username: 'ada@example.com', password: PASSWORD, scope: 'me', client_id: 'swagger' }))
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal(res.headers.pragma, 'no-cache')
  const body = res.json()
  t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type'])
  t.equal(body.scope, 'me')
  t.equal(body.token_type, 'bearer')
  t.equal(body.expires_in, 1800)

  const access = claimsOf(body.access_token)
  t.same(Object.keys(access).sort(), ['exp', 'iat', 'jti', 'scopes', 'sid', 'sub', 'type'])
  t.equal(access.sub, String(ada.id))
  t.same(access.scopes, ['me'])
  t.equal(access.type, 'access')
  t.equal(Number(access.exp) - Number(access.iat), 30 * 60, 'ACCESS_TOKEN_EXPIRE_MINUTES default')
  t.match(access.jti, /^[0-9a-f-]{36}$/)

  const refresh = claimsOf(body.refresh_token)
  t.equal(refresh.type, 'refresh')
  t.equal(refresh.sub, String(ada.id))
  t.equal(Number(refresh.exp) - Number(refresh.iat), 14 * 86400, 'REFRESH_TOKEN_EXPIRE_DAYS default')
  t.not(refresh.jti, access.jti)
  t.equal(JSON.parse(Buffer.from(body.access_token.split('.')[0], 'base64url').toString()).alg, 'HS256')
})

t.test('token lifetimes come from the configuration', async (t) => {
  const custom = await build(t, { ACCESS_TOKEN_EXPIRE_MINUTES: 5, REFRESH_TOKEN_EXPIRE_DAYS: 2 })
  await register(custom, 'life@example.com')
  const body = (await custom.inject(form({ username: 'life@example.com', password: PASSWORD }))).json()
  t.equal(body.expires_in, 300)
  const access = claimsOf(body.access_token)
  const refresh = claimsOf(body.refresh_token)
  t.equal(Number(access.exp) - Number(access.iat), 300)
  t.equal(Number(refresh.exp) - Number(refresh.iat), 2 * 86400)
})

t.test('a JSON body with the same fields also logs in', async (t) => {
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'ada@example.com', password: PASSWORD } })
  t.equal(res.statusCode, 200)
})

t.test('a wrong password and an unknown email get the same invalid_grant', async (t) => {
  const wrong = await app.inject(form({ username: 'ada@example.com', password: 'not the password' }))
  const unknown = await app.inject(form({ username: 'nobody@example.com', password: PASSWORD }))
  for (const res of [wrong, unknown]) {
    t.equal(res.statusCode, 400)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8', 'JSON, as OAuth clients require')
    t.notOk(res.headers['www-authenticate'], 'no Bearer challenge at the token endpoint')
    t.equal(res.headers['cache-control'], 'no-store')
    t.same(res.json(), {
      error: 'invalid_grant',
      error_description: 'Incorrect email or password',
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'Incorrect email or password',
      code: 'AUTH_INVALID_CREDENTIALS'
    })
  }
  t.equal(wrong.payload, unknown.payload, 'identical bodies: no user enumeration')
})

t.test('an inactive account is an invalid_grant that says so, but only with the right password', async (t) => {
  const user = await register(app, 'sleepy@example.com')
  await app.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, user.id))
  const right = await app.inject(form({ username: 'sleepy@example.com', password: PASSWORD }))
  t.equal(right.statusCode, 400)
  t.match(right.json(), { error: 'invalid_grant', error_description: 'This account is inactive', code: 'AUTH_INACTIVE_USER' })
  const wrong = await app.inject(form({ username: 'sleepy@example.com', password: 'wrong password' }))
  t.equal(wrong.json().code, 'AUTH_INVALID_CREDENTIALS', 'a wrong password does not reveal that the account exists')
})

t.test('a hash made with older parameters is rehashed at the next login', async (t) => {
  const user = await register(app, 'old@example.com')
  const { hash } = await import('@node-rs/argon2')
  const weak = await hash(PASSWORD, { memoryCost: 4096, timeCost: 1, parallelism: 1 })
  await app.plinthDb.db.update(users).set({ hashed_password: weak }).where(eq(users.id, user.id))
  t.equal((await app.inject(form({ username: 'old@example.com', password: PASSWORD }))).statusCode, 200, 'the old hash still verifies')
  const [row] = await app.plinthDb.db.select().from(users).where(eq(users.id, user.id))
  t.match(row?.hashed_password, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, 'rehashed with today\'s parameters')
  t.equal((await app.inject(form({ username: 'old@example.com', password: PASSWORD }))).statusCode, 200, 'the new hash verifies')
  t.not(await hashPassword(PASSWORD), row?.hashed_password, 'salted')
})

t.test('bad forms are OAuth errors naming what is wrong', async (t) => {
  const cases: Array<[Record<string, string>, string, string]> = [
    [{ password: PASSWORD }, 'invalid_request', 'username is required for the password grant'],
    [{ username: 'ada@example.com' }, 'invalid_request', 'password is required for the password grant'],
    [{ username: '', password: PASSWORD }, 'invalid_request', 'username must NOT have fewer than 1 characters'],
    [{ grant_type: 'refresh_token' }, 'invalid_request', 'refresh_token is required for the refresh_token grant'],
    [{ username: 'ada@example.com', password: PASSWORD, grant_type: 'client_credentials' }, 'unsupported_grant_type',
      'grant_type client_credentials is not supported: use password or refresh_token']
  ]
  for (const [fields, error, description] of cases) {
    const res = await app.inject(form(fields))
    t.equal(res.statusCode, 400, JSON.stringify(fields))
    t.match(res.json(), { error, error_description: description, detail: description, status: 400 })
  }
  const repeated = await app.inject({ ...form({}), payload: 'username=ada%40example.com&username=eve%40example.com&password=x' })
  t.match(repeated.json(), { error: 'invalid_request', error_description: 'username must be string' }, 'a repeated parameter')
  const malformed = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': 'application/json' }, payload: '{"username":' })
  t.match(malformed.json(), { error: 'invalid_request', code: 'MALFORMED_BODY' })
  t.equal(malformed.statusCode, 400)
  const media = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': 'application/xml' }, payload: '<a/>' })
  t.match(media.json(), { error: 'invalid_request', code: 'UNSUPPORTED_MEDIA_TYPE' })
  const text = await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': 'text/plain' }, payload: 'hello' })
  t.match(text.json(), { error: 'invalid_request', code: 'AUTH_INVALID_REQUEST' }, 'text is parsed, and is not a form')
  const extra = await app.inject(form({ username: 'ada@example.com', password: PASSWORD, audience: 'x', nonce: 'y' }))
  t.equal(extra.statusCode, 200, 'unknown parameters are ignored (RFC 6749 section 3.2)')
})

t.test('throttling: LOGIN_MAX_FAILURES failures per email and address, then 429', async (t) => {
  const limited = await build(t, { LOGIN_MAX_FAILURES: 3 })
  await register(limited, 'target@example.com')
  const attempt = (password: string, remoteAddress = '10.0.0.1') =>
    limited.inject({ ...form({ username: 'target@example.com', password }), remoteAddress })

  for (let i = 1; i <= 3; i++) t.equal((await attempt('guess')).statusCode, 400, `failure ${i} is invalid_grant`)
  const blocked = await attempt('guess')
  t.equal(blocked.statusCode, 429)
  t.equal(blocked.headers['content-type'], 'application/problem+json; charset=utf-8', '429 stays a problem document')
  t.equal(blocked.json().code, 'AUTH_TOO_MANY_FAILURES')
  const retryAfter = Number(blocked.headers['retry-after'])
  t.ok(retryAfter > 0 && retryAfter <= 900, `Retry-After ${retryAfter} is within the 15-minute window`)
  t.match(blocked.json().detail, `retry in ${retryAfter} seconds`)
  t.equal((await attempt(PASSWORD)).statusCode, 429, 'even the right password waits out the window')
  t.equal((await attempt(PASSWORD, '10.0.0.2')).statusCode, 200, 'another address is counted apart')
})

t.test('throttling: a success resets the count', async (t) => {
  const limited = await build(t, { LOGIN_MAX_FAILURES: 2 })
  await register(limited, 'again@example.com')
  const attempt = (password: string) => limited.inject(form({ username: 'again@example.com', password }))
  t.equal((await attempt('guess')).statusCode, 400)
  t.equal((await attempt(PASSWORD)).statusCode, 200)
  t.equal((await attempt('guess')).statusCode, 400)
  t.equal((await attempt('guess')).statusCode, 400, 'two fresh failures are allowed again')
  t.equal((await attempt('guess')).statusCode, 429)
})

t.test('throttling: 0 disables the limit', async (t) => {
  for (let i = 0; i < 12; i++) {
    t.equal((await app.inject(form({ username: 'ada@example.com', password: 'guess' }))).statusCode, 400)
  }
  t.equal((await app.inject(form({ username: 'ada@example.com', password: PASSWORD }))).statusCode, 200)
})

t.test('throttling on: the login stores its refresh token (one statement with the reset), and an unknown email is counted too', async (t) => {
  const limited = await build(t, { LOGIN_MAX_FAILURES: 2 })
  const user = await register(limited, 'counted@example.com')
  const login = (username: string, password = PASSWORD) => limited.inject(form({ username, password }))

  t.equal((await login('counted@example.com', 'guess')).statusCode, 400)
  const ok = await login('COUNTED@example.com')
  t.equal(ok.statusCode, 200, 'the account is read with the count, whatever the email\'s case')
  const { jti } = claimsOf(ok.json().refresh_token)
  const [stored] = await limited.plinthDb.db.select().from(refreshTokens).where(eq(refreshTokens.jti, String(jti)))
  t.equal(stored?.user_id, user.id, 'the refresh token is stored')
  t.same(await limited.plinthDb.db.select().from(loginFailures).where(eq(loginFailures.email, 'counted@example.com')), [], 'and the count is gone')
  const refreshed = await limited.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: ok.json().refresh_token } })
  t.equal(refreshed.statusCode, 200, 'so it can be rotated')

  for (let i = 0; i < 2; i++) t.equal((await login('ghost@example.com')).statusCode, 400)
  t.equal((await login('ghost@example.com')).statusCode, 429, 'no account: counted all the same')
})

t.test('throttling on: an inactive account\'s right password resets the count and stores no token', async (t) => {
  const limited = await build(t, { LOGIN_MAX_FAILURES: 2 })
  const user = await register(limited, 'dormant@example.com')
  await limited.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, user.id))
  const login = (password: string) => limited.inject(form({ username: 'dormant@example.com', password }))
  t.equal((await login('guess')).statusCode, 400)
  t.equal((await login(PASSWORD)).json().code, 'AUTH_INACTIVE_USER')
  t.equal((await login('guess')).statusCode, 400)
  t.equal((await login('guess')).statusCode, 400, 'the inactive answer reset the count')
  t.same(await limited.plinthDb.db.select().from(refreshTokens).where(eq(refreshTokens.user_id, user.id)), [])
})

t.test('many logins at once (more than the CPUs that verify): each gets its own pair, a bad hash holds no slot', async (t) => {
  const emails = Array.from({ length: 12 }, (_, i) => `crowd${i}@example.com`)
  await Promise.all(emails.map((email) => register(app, email)))
  const broken = await register(app, 'broken-hash@example.com')
  await app.plinthDb.db.update(users).set({ hashed_password: 'not an argon2 hash' }).where(eq(users.id, broken.id))

  const answers = await Promise.all([
    ...emails.map((username) => app.inject(form({ username, password: PASSWORD }))),
    ...emails.map((username) => app.inject(form({ username, password: 'wrong password' }))),
    ...Array.from({ length: 6 }, () => app.inject(form({ username: 'broken-hash@example.com', password: PASSWORD })))
  ])
  t.same(answers.map((res) => res.statusCode), [...emails.map(() => 200), ...emails.map(() => 400), 400, 400, 400, 400, 400, 400])
  const jtis = new Set(answers.slice(0, emails.length).map((res) => claimsOf(res.json().refresh_token).jti))
  t.equal(jtis.size, emails.length, 'distinct refresh tokens')
  t.equal((await app.inject(form({ username: emails[0]!, password: PASSWORD }))).statusCode, 200, 'verifying goes on afterwards')
})
