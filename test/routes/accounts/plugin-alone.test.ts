import Fastify from 'fastify'
import t from 'tap'
import authPlugin from '../../../plugins/auth/index.js'
import dbPlugin from '../../../plugins/db.js'
import accountsPlugin from '../../../routes/accounts/index.js'
import { PASSWORD } from '../../support/app.js'
import { freshDatabase } from '../../support/database.js'
import { PROBLEM_TYPE } from '../../support/responses.js'

t.test('the accounts plugin works in a bare Fastify app with only db and auth', async (t) => {
  const app = Fastify({ logger: false })
  await app.register(dbPlugin, { client: await freshDatabase(t) })
  await app.register(authPlugin, { secret: 'host-secret-of-32-bytes-or-more-bytes' })
  await app.register(accountsPlugin, { prefix: '/accounts', passwordMinLength: 10 })
  t.teardown(() => app.close())

  const register = (password: string) => app.inject({ method: 'POST', url: '/accounts/auth/register', payload: { email: 'host@example.com', password } })
  t.equal((await register(PASSWORD)).statusCode, 201)

  const taken = await register(PASSWORD)
  t.equal(taken.statusCode, 409)
  t.equal(taken.headers['content-type'], PROBLEM_TYPE)
  t.equal(taken.json().code, 'ACCOUNT_EMAIL_TAKEN')

  const short = await app.inject({ method: 'POST', url: '/accounts/auth/register', payload: { email: 'other@example.com', password: 'nine char' } })
  t.equal(short.statusCode, 422, 'the options given to the plugin apply')
  t.same(short.json().errors, [{ path: '/body/password', message: 'must NOT have fewer than 10 characters' }])

  const anonymous = await app.inject({ method: 'GET', url: '/accounts/users/me' })
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer')
  t.equal(anonymous.json().code, 'AUTH_NOT_AUTHENTICATED')

  const res = await app.inject({
    method: 'POST',
    url: '/accounts/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `username=host%40example.com&password=${encodeURIComponent(PASSWORD)}`
  })
  t.equal(res.statusCode, 200)
  const me = await app.inject({ method: 'GET', url: '/accounts/users/me', headers: { authorization: `Bearer ${res.json().access_token}` } })
  t.equal(me.statusCode, 200)
  t.equal(me.json().email, 'host@example.com')
})
