import t from 'tap'
import { PASSWORD, build, newAccount, register, superuser } from '../../../support/app.js'
import { conditionalTests, requiredIfMatchTests } from '../../../support/conditional.js'
import { assertProblem } from '../../../support/responses.js'

const USERS = '/api/v1/users'
const ME = `${USERS}/me`
let n = 0
const toggle = () => ({ is_verified: ++n % 2 === 0 })

const app = await build(t)
const admin = await superuser(app)
const registered = async () => `${USERS}/${(await register(app, `row${++n}@example.com`)).id}`

t.test('a superuser\'s /users/{id}', async (t) => {
  conditionalTests(t, app, { create: registered, change: toggle, headers: admin.session.headers, table: 'users' })
})

t.test('/users/me: the same ETag as /users/{id}; If-None-Match, and If-Match on PATCH and DELETE', async (t) => {
  const { user, session } = await newAccount(app)
  const me = (headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: ME, headers: { ...session.headers, ...headers } })
  const patch = (headers: Record<string, string>) => app.inject({
    method: 'PATCH', url: ME, headers: { ...session.headers, ...headers }, payload: { email: `moved${++n}@example.com`, current_password: PASSWORD }
  })
  const etag = String((await me()).headers.etag)
  t.match(etag, /^"[\w-]{22}"$/)
  t.equal((await app.inject({ method: 'GET', url: `${USERS}/${user.id}`, headers: admin.session.headers })).headers.etag, etag, 'one row, one ETag')
  const cached = await me({ 'if-none-match': etag })
  t.equal(cached.statusCode, 304)
  t.equal(cached.payload, '')

  const changed = await app.inject({ method: 'PATCH', url: `${USERS}/${user.id}`, headers: admin.session.headers, payload: toggle() })
  t.equal(changed.statusCode, 200)
  const next = String(changed.headers.etag)
  t.not(next, etag)
  t.equal((await me()).headers.etag, next)
  assertProblem(t, await patch({ 'if-match': etag }), 412, 'PRECONDITION_FAILED', 'a PATCH on the old ETag')
  t.equal((await patch({ 'if-match': next })).statusCode, 202, 'the current ETag lets the email change be asked')
  t.equal((await me()).json().email, user.email, 'the email stays until the link is followed')
  const remove = (headers: Record<string, string>) =>
    app.inject({ method: 'DELETE', url: ME, headers: { ...session.headers, ...headers }, payload: { current_password: PASSWORD } })
  assertProblem(t, await remove({ 'if-match': etag }), 412, 'PRECONDITION_FAILED', 'a DELETE on the old ETag')
  t.equal((await me()).statusCode, 200, 'still there')
  t.equal((await remove({ 'if-match': next })).statusCode, 204)
})

t.test('of two superusers changing one account with one ETag, exactly one wins', async (t) => {
  const other = await superuser(app, 'second-root@example.com')
  const url = await registered()
  for (let round = 1; round <= 5; round++) {
    const etag = String((await app.inject({ method: 'GET', url, headers: admin.session.headers })).headers.etag)
    const answers = await Promise.all([admin, other].map((one) =>
      app.inject({ method: 'PATCH', url, headers: { ...one.session.headers, 'if-match': etag }, payload: { scopes: ['me', `s${round}`] } })))
    t.same(answers.map((res) => res.statusCode).sort(), [200, 412], `round ${round}`)
  }
})

t.test('REQUIRE_IF_MATCH=true: account writes without If-Match are 428', async (t) => {
  const strict = await build(t, { REQUIRE_IF_MATCH: true })
  const root = await superuser(strict)
  const target = { create: async () => `${USERS}/${(await register(strict, `strict${++n}@example.com`)).id}`, change: toggle, headers: root.session.headers }
  await requiredIfMatchTests(t, strict, target)
  const { session } = await newAccount(strict)
  assertProblem(t, await strict.inject({ method: 'PATCH', url: ME, headers: session.headers, payload: { email: 'strict-moved@example.com', current_password: PASSWORD } }),
    428, 'PRECONDITION_REQUIRED', 'PATCH /users/me')
})
