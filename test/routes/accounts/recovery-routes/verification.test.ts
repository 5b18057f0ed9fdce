import { eq } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { users } from '../../../../db/schema.js'
import type { MailMessage } from '../../../../mail/senders.js'
import { PASSWORD, bearer, build, login, register } from '../../../support/app.js'
import { clockedAccounts } from '../../../support/accounts-plugin.js'
import { assertProblem } from '../../../support/responses.js'
import { startSmtp } from '../../../support/smtp.js'

const APP_URL = 'https://app.example.com'
const smtp = await startSmtp(t)
const app = await build(t, { SMTP_URL: smtp.url, APP_URL })

const verify = (token: string, target = app) => target.inject({ method: 'POST', url: '/api/v1/auth/verify', payload: { token } })
const requestLink = (headers: Record<string, string>, target = app) =>
  target.inject({ method: 'POST', url: '/api/v1/auth/verify/request', headers })
const me = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/api/v1/users/me', headers })

/** The token of the next verification link the SMTP server received for `email`. */
async function verifyToken (t: Test, email: string) {
  const mail = await smtp.next(email)
  t.equal(mail.subject, 'Confirm your email address')
  const url = new URL(mail.links[0] ?? '')
  t.equal(`${url.origin}${url.pathname}`, `${APP_URL}/verify-email`)
  t.match(mail.text, 'within 24 hours')
  return url.searchParams.get('token') ?? ''
}

let accounts = 0
const newEmail = () => `verify${++accounts}@example.com`

t.test('registration mails a link; following it verifies the account, once', async (t) => {
  const email = newEmail()
  const user = await register(app, email)
  t.equal(user.is_verified, false, 'a new account is unverified')
  const token = await verifyToken(t, email)
  const res = await verify(token)
  t.equal(res.statusCode, 200)
  t.match(res.json(), { id: user.id, email, is_verified: true })
  const session = await login(app, email)
  t.equal((await me(session.headers)).json().is_verified, true)
  const again = await verify(token)
  assertProblem(t, again, 400, 'AUTH_INVALID_VERIFY_TOKEN')
  t.equal(again.json().detail, 'Invalid verification token: it is unknown or was already used')
  assertProblem(t, await verify('not-a-token-of-ours'), 400, 'AUTH_INVALID_VERIFY_TOKEN', 'a forged token')
})

t.test('a logged-in user asks for a new link: 202, 409 once verified, 401 without a token', async (t) => {
  const email = newEmail()
  await register(app, email)
  const first = await verifyToken(t, email)
  const session = await login(app, email)
  const res = await requestLink(session.headers)
  t.equal(res.statusCode, 202)
  t.same(res.json(), { detail: `A link to verify ${email} has been sent to it` })
  const second = await verifyToken(t, email)
  t.not(second, first)
  t.equal((await verify(second)).statusCode, 200)
  assertProblem(t, await verify(first), 400, 'AUTH_INVALID_VERIFY_TOKEN', 'a verified account\'s other links are spent')
  assertProblem(t, await requestLink(session.headers), 409, 'ACCOUNT_ALREADY_VERIFIED')
  assertProblem(t, await requestLink({}), 401, 'AUTH_NOT_AUTHENTICATED')
})

t.test('an email changed through its mailed link is verified, and the old address\'s link dies', async (t) => {
  const email = newEmail()
  await register(app, email)
  const old = await verifyToken(t, email)
  const session = await login(app, email)
  const moved = `moved.${email}`
  const res = await app.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: { email: moved, current_password: PASSWORD } })
  t.equal(res.statusCode, 202)
  const link = new URL((await smtp.next(moved)).links[0] ?? '')
  const confirmed = await app.inject({ method: 'POST', url: '/api/v1/auth/confirm-email', payload: { token: link.searchParams.get('token') } })
  t.equal(confirmed.json().is_verified, true, 'following the link proved the new address')
  const stale = await verify(old)
  assertProblem(t, stale, 400, 'AUTH_INVALID_VERIFY_TOKEN')
  t.equal(stale.json().detail, 'Invalid verification token: the account\'s email changed since it was sent')

  const again = await login(app, moved)
  const same = await app.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: again.headers, payload: { email: moved.toUpperCase(), current_password: PASSWORD } })
  t.equal(same.json().is_verified, true, 'the same email in other letters is no change')
})

t.test('a superuser changing an email may say it is verified; otherwise it is not', async (t) => {
  const root = newEmail()
  await register(app, root)
  await smtp.next(root)
  await app.plinthDb.db.update(users).set({ is_superuser: true }).where(eq(users.email, root))
  const admin = await login(app, root)
  const email = newEmail()
  const user = await register(app, email)
  await smtp.next(email)
  const patch = (payload: object) => app.inject({ method: 'PATCH', url: `/api/v1/users/${user.id}`, headers: admin.headers, payload })
  const unverified = await patch({ email: `a.${email}` })
  t.equal(unverified.json().is_verified, false)
  await verifyToken(t, `a.${email}`)
  const verified = await patch({ email: `b.${email}`, is_verified: true })
  t.equal(verified.json().is_verified, true, 'the superuser vouches for the new address')
})

t.test('REQUIRE_VERIFIED_EMAIL: login refuses an unverified account with invalid_grant and mails it a link', async (t) => {
  const strict = await build(t, { SMTP_URL: smtp.url, APP_URL, REQUIRE_VERIFIED_EMAIL: true })
  const email = newEmail()
  await register(strict, email)
  await smtp.next(email)
  const form = (password: string) => strict.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ username: email, password }).toString()
  })
  const refused = await form(PASSWORD)
  t.equal(refused.statusCode, 400)
  t.match(refused.json(), {
    error: 'invalid_grant',
    error_description: 'The email address is not verified: a link to verify it has been sent to it',
    code: 'AUTH_UNVERIFIED_EMAIL'
  })
  const wrong = await form('not the password')
  t.equal(wrong.json().code, 'AUTH_INVALID_CREDENTIALS', 'a wrong password says nothing of verification')
  const token = await verifyToken(t, email)
  t.equal((await verify(token, strict)).statusCode, 200)
  t.equal((await form(PASSWORD)).statusCode, 200, 'verified, it logs in')
})

t.test('asking for links is limited per address, and mails to one email are capped', async (t) => {
  const limited = await build(t, { SMTP_URL: smtp.url, RATE_LIMIT_VERIFY: 2, RATE_LIMIT_MAILS_PER_EMAIL: 2 })
  const email = newEmail()
  await register(limited, email)
  await smtp.next(email)
  const session = await login(limited, email)
  t.equal((await requestLink(session.headers, limited)).statusCode, 202)
  await smtp.next(email)
  const capped = await requestLink(session.headers, limited)
  assertProblem(t, capped, 429, 'MAIL_RATE_LIMITED')
  t.ok(Number(capped.headers['retry-after']) > 3000, 'retry when the hour of the cap is over')
  assertProblem(t, await requestLink(session.headers, limited), 429, 'RATE_LIMITED', 'the third request from one address in a minute')
})

t.test('a link works for VERIFY_TOKEN_EXPIRE_MINUTES on the plugin\'s clock; the guard requireVerified', async (t) => {
  const { app: own, clock, inbox } = await clockedAccounts(t, { verifyTokenMinutes: 60 })
  own.get('/verified-only', { onRequest: own.requireVerified }, async () => ({ ok: true }))
  const user = await register(own, 'clock@example.com')
  // Access tokens expire on the same clock: the test logs in again after moving it.
  let session = await login(own, 'clock@example.com')
  const tokenOf = (message?: MailMessage) => new URL(message?.link ?? '').searchParams.get('token') ?? ''
  const guarded = () => own.inject({ method: 'GET', url: '/verified-only', headers: bearer(session.access_token) })
  assertProblem(t, await guarded(), 403, 'AUTH_NOT_VERIFIED')
  t.equal((await own.inject({ method: 'GET', url: '/verified-only' })).statusCode, 401, 'it authenticates first')

  const first = tokenOf(inbox.find((message) => message.kind === 'verify-email' && message.to === user.email))
  clock.now += 60 * 60_000
  const late = await verify(first, own)
  assertProblem(t, late, 400, 'AUTH_INVALID_VERIFY_TOKEN')
  t.equal(late.json().detail, 'Invalid verification token: it has expired; ask for a new link')

  session = await login(own, 'clock@example.com')
  t.equal((await requestLink(session.headers, own)).statusCode, 202)
  await new Promise((resolve) => setImmediate(resolve))
  const second = tokenOf(inbox.at(-1))
  clock.now += 59 * 60_000
  t.equal((await verify(second, own)).statusCode, 200, 'a minute before its end')
  session = await login(own, 'clock@example.com')
  t.same((await guarded()).json(), { ok: true })
})
