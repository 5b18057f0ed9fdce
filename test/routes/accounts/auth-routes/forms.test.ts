import formbody from '@fastify/formbody'
import Fastify from 'fastify'
import t from 'tap'
import type { App } from '../../../../app.js'
import { users } from '../../../../db/schema.js'
import { accountsPlugin, authPlugin, catalogPlugin, dbPlugin, resourcePlugin } from '../../../../index.js'
import { PASSWORD, build, login, register } from '../../../support/app.js'
import { clockedAccounts } from '../../../support/accounts-plugin.js'
import { freshDatabase } from '../../../support/database.js'
import { until } from '../../../support/until.js'

// An HTML form on any web site can POST a urlencoded, multipart or text/plain body to another
// origin without a CORS preflight. Only the OAuth endpoints (login, revoke) take forms; every
// other accounts route takes JSON alone, so no page can fire them from its visitors' browsers.

const URLENCODED = 'application/x-www-form-urlencoded'
type Injector = Pick<App, 'inject'>

const post = (app: Injector, url: string, type: string, payload: string) =>
  app.inject({ method: 'POST', url: `/api/v1${url}`, headers: { 'content-type': type }, payload })
const form = (app: Injector, url: string, fields: Record<string, string>) => post(app, url, URLENCODED, new URLSearchParams(fields).toString())
const json = (app: Injector, url: string, payload: object) => app.inject({ method: 'POST', url: `/api/v1${url}`, payload })
const tokenOf = (link: string) => new URL(link).searchParams.get('token') ?? ''

t.test('a cross-site form cannot register an account: 415 whatever the form encoding, and no account exists', async (t) => {
  const app = await build(t)
  const fields = { email: 'victim-signup@example.com', password: PASSWORD }
  const bodies: Array<[string, string]> = [
    [URLENCODED, new URLSearchParams(fields).toString()],
    ['Application/X-WWW-Form-Urlencoded; charset=UTF-8', new URLSearchParams(fields).toString()],
    ['multipart/form-data; boundary=x', `--x\r\nContent-Disposition: form-data; name="email"\r\n\r\n${fields.email}\r\n--x--\r\n`],
    ['text/plain', JSON.stringify(fields)]
  ]
  for (const [type, payload] of bodies) {
    const res = await post(app, '/auth/register', type, payload)
    t.equal(res.statusCode, 415, type)
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
    t.match(res.json(), { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', detail: /takes application\/json only/ }, type)
  }
  t.same(await app.plinthDb.db.select().from(users), [], 'no account was created')
})

t.test('nor ask for a reset link, reset a password or verify an email: 415, and the mailed tokens stay unspent', async (t) => {
  const { app, inbox } = await clockedAccounts(t)
  await register(app as unknown as App, 'owner@example.com')
  const verifyToken = tokenOf(inbox.at(-1)!.link)

  const verify = await form(app, '/auth/verify', { token: verifyToken })
  t.equal(verify.statusCode, 415)
  t.match(verify.json(), { code: 'UNSUPPORTED_MEDIA_TYPE' })
  t.equal((await json(app, '/auth/verify', { token: verifyToken })).statusCode, 200, 'the link still verifies through JSON')

  const forgot = await form(app, '/auth/forgot-password', { email: 'owner@example.com' })
  t.equal(forgot.statusCode, 415)
  t.equal((await json(app, '/auth/forgot-password', { email: 'owner@example.com' })).statusCode, 202)
  const resetMail = await until('the reset link', () => inbox.find((mail) => mail.kind === 'reset-password'))
  const resetToken = tokenOf(resetMail.link)
  const reset = await form(app, '/auth/reset-password', { token: resetToken, new_password: 'chosen by the attacker' })
  t.equal(reset.statusCode, 415)
  t.ok(await login(app as unknown as App, 'owner@example.com'), 'the password is unchanged')
  t.equal((await json(app, '/auth/reset-password', { token: resetToken, new_password: 'chosen by the owner' })).statusCode, 204, 'the link still works')
  await app.close()
  t.equal(inbox.filter((mail) => mail.kind === 'reset-password').length, 1, 'the form mailed no reset link (every mail is out once the app is closed)')
})

t.test('login and revoke take forms; refresh and logout, with a token in the body, do not', async (t) => {
  const app = await build(t)
  await register(app, 'ada@example.com')
  const session = await login(app, 'ada@example.com')
  const refresh = await form(app, '/auth/refresh', { refresh_token: session.refresh_token })
  t.equal(refresh.statusCode, 415)
  t.equal((await form(app, '/auth/logout', { refresh_token: session.refresh_token })).statusCode, 415)
  t.equal((await json(app, '/auth/refresh', { refresh_token: session.refresh_token })).statusCode, 200, 'the token was not spent')
  const other = await login(app, 'ada@example.com')
  t.equal((await form(app, '/auth/revoke', { token: other.refresh_token })).statusCode, 200)
})

t.test('in a host that registered @fastify/formbody itself, plinth\'s accounts routes still refuse forms', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(formbody)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(authPlugin, { secret: 'the forms test secret, 32 bytes or more' })
  await app.register(accountsPlugin, { prefix: '/api/v1' })
  app.post('/host/form', async (request) => request.body)

  const res = await form(app, '/auth/register', { email: 'victim-signup@example.com', password: PASSWORD })
  t.equal(res.statusCode, 415)
  t.match(res.json(), { code: 'UNSUPPORTED_MEDIA_TYPE', detail: /takes application\/json only/ })
  t.equal((await json(app, '/auth/register', { email: 'ada@example.com', password: PASSWORD })).statusCode, 201)
  t.equal((await form(app, '/auth/login', { username: 'ada@example.com', password: PASSWORD })).statusCode, 200, 'the login form still works')
  const own = await app.inject({ method: 'POST', url: '/host/form', headers: { 'content-type': URLENCODED }, payload: 'a=1' })
  t.same(own.json(), { a: '1' }, 'and the host\'s own form route still parses')
})

t.test('nor do the catalog and resources take a form in a host that parses forms: 415, and nothing is created', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await app.register(formbody)
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(catalogPlugin, { prefix: '/api/v1' })
  await app.register(resourcePlugin, { prefix: '/api/v1', name: 'records' })
  for (const [url, fields] of [['/items', { name: 'forged' }], ['/records', { title: 'forged' }]] as const) {
    for (const type of [URLENCODED, 'text/plain']) {
      const res = await post(app, url, type, new URLSearchParams(fields).toString())
      t.equal(res.statusCode, 415, `${url} refuses ${type}`)
      t.equal(res.json().code, 'UNSUPPORTED_MEDIA_TYPE')
    }
    const list = (await app.inject({ url: `/api/v1${url}` })).json()
    t.same(Array.isArray(list) ? list : list.items, [], `no row was created through ${url}`)
  }
})

t.test('a route that reads no body answers as usual whatever its content type', async (t) => {
  const app = await build(t)
  const { email } = await register(app, 'ada@example.com')
  const session = await login(app, email)
  const res = await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: { ...session.headers, 'content-type': URLENCODED }, payload: 'a=1' })
  t.equal(res.statusCode, 200)
})

t.test('the OpenAPI document offers forms at the two OAuth endpoints only', async (t) => {
  const app = await build(t)
  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as {
    paths: Record<string, Record<string, { operationId: string, requestBody?: { content: Record<string, unknown> } }>>
  }
  const takingForms = Object.values(document.paths).flatMap((operations) => Object.values(operations))
    .filter((operation) => operation.requestBody?.content[URLENCODED] !== undefined).map((operation) => operation.operationId)
  t.same(takingForms.sort(), ['login', 'revoke'])
})
