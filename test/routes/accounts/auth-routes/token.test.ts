import { randomUUID } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { createSigner } from 'fast-jwt'
import t from 'tap'
import { users } from '../../../../db/schema.js'
import { PASSWORD, build, claimsOf, register } from '../../../support/app.js'

const SECRET_KEY = 'the token endpoint test secret, 32 bytes or more'
const app = await build(t, { LOGIN_MAX_FAILURES: 0, SECRET_KEY })
const TOKEN_URL = '/api/v1/auth/login'

const token = (fields: Record<string, string>, headers: Record<string, string> = {}) => app.inject({
  method: 'POST',
  url: TOKEN_URL,
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  payload: new URLSearchParams(fields).toString()
})

const user = await register(app, 'grace@example.com')
await app.plinthDb.db.update(users).set({ scopes: 'me,reports,billing' }).where(eq(users.id, user.id))
const password = (extra: Record<string, string> = {}) => token({ grant_type: 'password', username: 'grace@example.com', password: PASSWORD, ...extra })

t.test('the refresh grant at the token URL rotates, as /auth/refresh does', async (t) => {
  const first = (await password()).json()
  const res = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal(res.headers.pragma, 'no-cache')
  const pair = res.json()
  t.equal(pair.token_type, 'bearer')
  t.equal(pair.scope, 'me reports billing')
  t.equal(claimsOf(pair.access_token).sub, String(user.id))
  t.not(pair.refresh_token, first.refresh_token)

  const spent = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token })
  t.equal(spent.statusCode, 400)
  t.match(spent.json(), { error: 'invalid_grant', code: 'AUTH_INVALID_REFRESH_TOKEN', error_description: /already used/ })
  t.notOk(spent.headers['www-authenticate'])
  const viaRefresh = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: pair.refresh_token } })
  t.equal(viaRefresh.statusCode, 200, 'the pair from the token URL rotates at /auth/refresh too')
  const replayed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: pair.refresh_token } })
  t.equal(replayed.statusCode, 401, '/auth/refresh keeps its 401')
  t.equal(replayed.headers['content-type'], 'application/problem+json; charset=utf-8')
})

t.test('bad refresh tokens are invalid_grant: garbage, an access token, an expired one, a revoked one', async (t) => {
  const pair = (await password()).json()
  const now = Math.floor(Date.now() / 1000)
  const expired = createSigner({ key: SECRET_KEY })({ sub: String(user.id), scopes: ['me'], type: 'refresh', jti: randomUUID(), iat: now - 100, exp: now - 10 })
  const revoked = (await password()).json().refresh_token
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: revoked } })).statusCode, 204)
  for (const [what, value, detail] of [
    ['garbage', 'not.a.token', /malformed/],
    ['an access token', pair.access_token, /not a refresh token/],
    ['an expired token', expired, /expired/],
    ['a revoked token', revoked, /already used, revoked/]
  ] as const) {
    const res = await token({ grant_type: 'refresh_token', refresh_token: value })
    t.equal(res.statusCode, 400, what)
    t.match(res.json(), { error: 'invalid_grant', error_description: detail }, what)
  }
})

t.test('scope narrows the token to some of the account\'s scopes, and the refreshes keep it', async (t) => {
  const narrowed = await password({ scope: 'reports me' })
  t.equal(narrowed.statusCode, 200)
  t.equal(narrowed.json().scope, 'reports me')
  t.same(claimsOf(narrowed.json().access_token).scopes, ['reports', 'me'])

  const refreshed = (await token({ grant_type: 'refresh_token', refresh_token: narrowed.json().refresh_token })).json()
  t.same(claimsOf(refreshed.access_token).scopes, ['reports', 'me'], 'a refresh without scope keeps the narrowed grant')
  const narrower = (await token({ grant_type: 'refresh_token', refresh_token: refreshed.refresh_token, scope: 'me' })).json()
  t.equal(narrower.scope, 'me', 'a refresh may narrow further')
  const wider = await token({ grant_type: 'refresh_token', refresh_token: narrower.refresh_token, scope: 'me billing' })
  t.equal(wider.statusCode, 400)
  t.match(wider.json(), { error: 'invalid_scope', error_description: 'scope not granted: billing' })
  const kept = await token({ grant_type: 'refresh_token', refresh_token: narrower.refresh_token })
  t.equal(kept.statusCode, 200, 'an invalid_scope does not spend the refresh token')
  t.equal(kept.json().scope, 'me')
})

t.test('a scope the account lacks is invalid_scope, but only once the password is right', async (t) => {
  const lacking = await password({ scope: 'me admin' })
  t.equal(lacking.statusCode, 400)
  t.match(lacking.json(), { error: 'invalid_scope', error_description: 'scope not granted: admin', code: 'AUTH_INVALID_SCOPE' })
  const wrong = await token({ username: 'grace@example.com', password: 'wrong', scope: 'admin' })
  t.equal(wrong.json().error, 'invalid_grant', 'a wrong password is invalid_grant whatever the scope')
  const unknown = await token({ username: 'nobody@example.com', password: PASSWORD, scope: 'admin' })
  t.equal(unknown.payload, wrong.payload, 'and an unknown email answers the same')
  const malformed = await password({ scope: 'me "quoted"' })
  t.match(malformed.json(), { error: 'invalid_scope', error_description: 'scope "\\"quoted\\"" is not a valid scope token' })
})

t.test('a scope removed from the account since the login leaves the next token', async (t) => {
  const other = await register(app, 'hopper@example.com')
  await app.plinthDb.db.update(users).set({ scopes: 'me,reports' }).where(eq(users.id, other.id))
  const first = (await token({ username: 'hopper@example.com', password: PASSWORD, scope: 'me reports' })).json()
  await app.plinthDb.db.update(users).set({ scopes: 'me' }).where(eq(users.id, other.id))
  const next = (await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token })).json()
  t.same(claimsOf(next.access_token).scopes, ['me'])
})

t.test('clients: any client_id is public; HTTP Basic is read; two methods at once or a bad Basic are refused', async (t) => {
  t.equal((await password({ client_id: 'swagger-ui' })).statusCode, 200)
  t.equal((await password({ client_id: 'cli', client_secret: 'anything' })).statusCode, 200)
  const basic = `Basic ${Buffer.from('my-app:secret').toString('base64')}`
  t.equal((await token({ username: 'grace@example.com', password: PASSWORD }, { authorization: basic })).statusCode, 200)

  const both = await token({ username: 'grace@example.com', password: PASSWORD, client_id: 'my-app' }, { authorization: basic })
  t.match(both.json(), { error: 'invalid_request', error_description: /one client authentication method/ })
  const secretAlone = await password({ client_secret: 'x' })
  t.match(secretAlone.json(), { error: 'invalid_request', error_description: 'client_secret needs client_id' })

  const bad = await token({ username: 'grace@example.com', password: PASSWORD }, { authorization: 'Basic not-base64-of-a-pair' })
  t.equal(bad.statusCode, 401)
  t.equal(bad.headers['www-authenticate'], 'Basic realm="plinth", charset="UTF-8"')
  t.match(bad.json(), { error: 'invalid_client', status: 401, code: 'AUTH_INVALID_CLIENT' })
  const bearer = await token({ username: 'grace@example.com', password: PASSWORD }, { authorization: 'Bearer whatever' })
  t.equal(bearer.statusCode, 200, 'another scheme is not client authentication: ignored')
})

t.test('the document declares the token endpoint\'s answers', async (t) => {
  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const login = document.paths['/api/v1/auth/login'].post
  t.same(Object.keys(login.responses).sort(), ['200', '400', '401', '413', '429', '500', '503'])
  t.same(Object.keys(login.responses['400'].content), ['application/json'])
  t.equal(login.responses['400'].content['application/json'].schema.$ref, '#/components/schemas/OAuthError')
  t.same(document.components.schemas.OAuthError.properties.error.enum,
    ['invalid_request', 'invalid_client', 'invalid_grant', 'unsupported_grant_type', 'invalid_scope'])
})

t.test('a refresh cannot ask for scopes the account lacks: invalid_scope at the token URL and at /auth/refresh, the token kept', async (t) => {
  const refresh = (payload: Record<string, string>) => app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload })
  const first = (await password()).json()
  const viaGrant = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token, scope: 'me admin' })
  t.equal(viaGrant.statusCode, 400)
  t.match(viaGrant.json(), { error: 'invalid_scope', error_description: 'scope not granted: admin', code: 'AUTH_INVALID_SCOPE' })

  const viaRefresh = await refresh({ refresh_token: first.refresh_token, scope: 'me admin' })
  t.equal(viaRefresh.statusCode, 400)
  t.equal(viaRefresh.headers['content-type'], 'application/problem+json; charset=utf-8')
  t.match(viaRefresh.json(), { status: 400, code: 'AUTH_INVALID_SCOPE', detail: 'scope not granted: admin' })

  const narrowed = await refresh({ refresh_token: first.refresh_token, scope: 'reports' })
  t.equal(narrowed.statusCode, 200, 'neither refusal spent the token')
  t.equal(narrowed.json().scope, 'reports', '/auth/refresh narrows as the token URL does')
  t.same(claimsOf(narrowed.json().access_token).scopes, ['reports'])

  const spent = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token, scope: 'admin' })
  t.match(spent.json(), { error: 'invalid_grant', code: 'AUTH_INVALID_REFRESH_TOKEN' }, 'a spent token is refused as spent, whatever the scope')
  t.equal((await refresh({ refresh_token: first.refresh_token, scope: 'admin' })).statusCode, 401)
})
