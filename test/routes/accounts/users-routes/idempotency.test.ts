import { count } from 'drizzle-orm'
import t from 'tap'
import { users } from '../../../../db/schema.js'
import { PASSWORD, build, superuser } from '../../../support/app.js'
import { idempotencyTests } from '../../../support/idempotency.js'

const app = await build(t)
const admin = await superuser(app)
const accounts = async () => (await app.plinthDb.db.select({ n: count() }).from(users))[0]!.n
let n = 0

t.test('registration', async (t) => {
  idempotencyTests(t, app, { url: '/api/v1/auth/register', body: () => ({ email: `idem${++n}@example.com`, password: PASSWORD }), rows: accounts, unique: true })
})

t.test('a superuser creating accounts', async (t) => {
  idempotencyTests(t, app, {
    url: '/api/v1/users', body: () => ({ email: `made${++n}@example.com`, password: PASSWORD }), rows: accounts, headers: admin.session.headers, unique: true
  })
})

t.test('a created account has its URL in Location', async (t) => {
  const res = await app.inject({ method: 'POST', url: '/api/v1/users', headers: admin.session.headers, payload: { email: 'located@example.com', password: PASSWORD } })
  t.equal(res.headers.location, `/api/v1/users/${res.json().id}`)
  t.equal((await app.inject({ method: 'GET', url: String(res.headers.location), headers: admin.session.headers })).statusCode, 200)
})
