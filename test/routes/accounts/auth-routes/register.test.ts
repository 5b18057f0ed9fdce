import { eq } from 'drizzle-orm'
import t from 'tap'
import { users } from '../../../../db/schema.js'
import { PASSWORD, build, login } from '../../../support/app.js'

const app = await build(t)
const post = (payload: object) => app.inject({ method: 'POST', url: '/api/v1/auth/register', payload })

t.test('registration answers 201 with the public profile', async (t) => {
  const res = await post({ email: 'ada@example.com', password: PASSWORD })
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.same(body, { id: body.id, email: 'ada@example.com', is_active: true, is_superuser: false, scopes: ['me'], is_verified: false })
  t.type(body.id, 'number')
  t.notMatch(res.payload, /password/, 'neither password nor hashed_password in the response')
})

t.test('emails are stored lower-cased and matched case-insensitively', async (t) => {
  const res = await post({ email: 'Grace.Hopper@Example.COM', password: PASSWORD })
  t.equal(res.statusCode, 201)
  t.equal(res.json().email, 'grace.hopper@example.com')
  const again = await post({ email: 'grace.hopper@EXAMPLE.com', password: PASSWORD })
  t.equal(again.statusCode, 409)
  t.equal(again.json().code, 'ACCOUNT_EMAIL_TAKEN')
  t.equal(again.json().detail, 'The email grace.hopper@example.com is already registered')
  t.ok(await login(app, 'GRACE.HOPPER@example.com'), 'login matches case-insensitively')
})

t.test('the password is stored as an argon2id hash, never in plain text', async (t) => {
  const { id } = (await post({ email: 'hash@example.com', password: PASSWORD })).json()
  const [row] = await app.plinthDb.db.select().from(users).where(eq(users.id, id))
  t.match(row?.hashed_password, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
  t.notMatch(row?.hashed_password, PASSWORD)
})

t.test('privileged and server-assigned fields are ignored at registration', async (t) => {
  const res = await post({ email: 'sneaky@example.com', password: PASSWORD, is_superuser: true, is_active: false, scopes: ['admin'], id: 999 })
  t.equal(res.statusCode, 201)
  const body = res.json()
  t.equal(body.is_superuser, false)
  t.equal(body.is_active, true)
  t.same(body.scopes, ['me'])
  t.not(body.id, 999)
})

t.test('bad input is 422 with the failing field', async (t) => {
  const cases: Array<[object, string, string]> = [
    [{ email: 'not-an-email', password: PASSWORD }, '/body/email', 'must match format "email"'],
    [{ password: PASSWORD }, '/body/email', 'is required'],
    [{ email: 'x@example.com' }, '/body/password', 'is required'],
    [{ email: 'x@example.com', password: 'short77' }, '/body/password', 'must NOT have fewer than 8 characters'],
    [{ email: 'x@example.com', password: 12345678 }, '/body/password', 'must be string'],
    [{ email: 'x@example.com', password: 'pass\u0000word' }, '/body/password', 'must not contain NUL characters'],
    [{ email: `${'a'.repeat(250)}@example.com`, password: PASSWORD }, '/body/email', 'must NOT have more than 254 characters']
  ]
  for (const [payload, path, message] of cases) {
    const res = await post(payload)
    t.equal(res.statusCode, 422, JSON.stringify(payload).slice(0, 60))
    t.same(res.json().errors, [{ path, message }])
  }
  t.equal((await post({ email: 'eight@example.com', password: '8 chars!' })).statusCode, 201, 'exactly the minimum length is accepted')
})

t.test('PASSWORD_MIN_LENGTH sets the minimum', async (t) => {
  const strict = await build(t, { PASSWORD_MIN_LENGTH: 12 })
  const short = await strict.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email: 'a@example.com', password: '11 chars!!!' } })
  t.equal(short.statusCode, 422)
  t.same(short.json().errors, [{ path: '/body/password', message: 'must NOT have fewer than 12 characters' }])
  const ok = await strict.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email: 'a@example.com', password: '12 chars!!!!' } })
  t.equal(ok.statusCode, 201)
})
