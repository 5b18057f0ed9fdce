import { eq } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { accountTokens } from '../../../../db/schema.js'
import { PASSWORD, build, login, newAccount, register, superuser, type Session } from '../../../support/app.js'
import { clockedAccounts } from '../../../support/accounts-plugin.js'
import { assertProblem } from '../../../support/responses.js'
import { startSmtp } from '../../../support/smtp.js'
import { until } from '../../../support/until.js'

// Changing the login email: it needs the password, and takes effect only through a link mailed to the new address.
const APP_URL = 'https://app.example.com/account'
const smtp = await startSmtp(t)
const app = await build(t, { SMTP_URL: smtp.url, APP_URL })

const patchMe = (session: Session, payload: object) => app.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload })
const confirm = (token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/confirm-email', payload: { token } })
const me = (session: Session) => app.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })
const forgot = (email: string) => app.inject({ method: 'POST', url: '/api/v1/auth/forgot-password', payload: { email } })

/** A registered, logged-in account whose verification mail has been taken from the inbox. */
async function account () {
  const created = await newAccount(app)
  await smtp.next(created.email)
  return created
}

/** The token of the next confirmation link mailed to `email`. */
async function confirmToken (t: Test, email: string) {
  const mail = await smtp.next(email)
  t.equal(mail.subject, 'Confirm your new email address')
  const url = new URL(mail.links[0] ?? '')
  t.equal(`${url.origin}${url.pathname}`, `${APP_URL}/confirm-email`, 'the link leads to the front end page')
  return url.searchParams.get('token') ?? ''
}

/** Asks for the change with the right password and returns the token mailed to the new address. */
async function requestChange (t: Test, session: Session, email: string) {
  const res = await patchMe(session, { email, current_password: PASSWORD })
  t.equal(res.statusCode, 202, `asking to move to ${email}`)
  return confirmToken(t, email)
}

t.test('a stolen access token cannot change the login email without the password', async (t) => {
  const { email, session } = await account()
  const target = `attacker.${email}`
  assertProblem(t, await patchMe(session, { email: target }), 422, 'VALIDATION_FAILED', 'without current_password')
  assertProblem(t, await patchMe(session, { email: target, current_password: 'a guess' }), 403, 'ACCOUNT_WRONG_PASSWORD', 'with a wrong one')
  t.equal((await me(session)).json().email, email, 'the email is unchanged')
  t.ok(await login(app, email), 'the owner still logs in')
  t.equal(smtp.received.filter((mail) => mail.to.includes(target)).length, 0, 'nothing was mailed to the attacker')
})

t.test('the new email takes effect only through the link mailed to it; the old address is told; every session ends', async (t) => {
  const { email, session } = await account()
  const other = await login(app, email)
  const moved = `Moved.${email}`
  const res = await patchMe(session, { email: moved, current_password: PASSWORD })
  t.equal(res.statusCode, 202)
  t.same(res.json(), { detail: `A link to confirm moved.${email} has been sent to it; until it is followed, the login email stays ${email}` })

  const notice = await smtp.next(email)
  t.equal(notice.subject, 'Your email address is being changed')
  t.match(notice.text, `moved.${email}`, 'the notice names the new address')
  t.same(notice.links, [], 'and carries no link')
  const token = await confirmToken(t, `moved.${email}`)

  t.equal((await me(session)).json().email, email, 'until the link is followed, the old email stays')
  t.ok(await login(app, email), 'and logs in')
  const stored = await app.plinthDb.db.select().from(accountTokens).where(eq(accountTokens.purpose, 'email_change'))
  t.notOk(stored.some((row) => row.hash === token), 'only a hash of the token is stored')

  const confirmed = await confirm(token)
  t.equal(confirmed.statusCode, 200)
  t.match(confirmed.json(), { email: `moved.${email}`, is_verified: true }, 'the link proved the address')
  for (const [name, ended] of [['this session', session], ['another session', other]] as const) {
    t.equal((await me(ended)).statusCode, 401, `${name}: its access token dies`)
    const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: ended.refresh_token } })
    t.equal(refreshed.statusCode, 401, `${name}: and its refresh token`)
  }
  await t.rejects(login(app, email), /400/, 'the old email no longer logs in')
  t.equal((await me(await login(app, `moved.${email}`))).json().email, `moved.${email}`, 'the new one does')

  const again = await confirm(token)
  assertProblem(t, again, 400, 'AUTH_INVALID_EMAIL_CHANGE_TOKEN', 'the link works once')
  t.equal(again.json().detail, 'Invalid email change token: it is unknown or was already used')
})

t.test('a reset link goes only to the login email: never to a pending address, and to the new one once confirmed', async (t) => {
  const { email, session } = await account()
  const moved = `pending.${email}`
  const token = await requestChange(t, session, moved)
  await smtp.next(email) // the notice
  const resets = (to: string) => smtp.received.filter((mail) => mail.to.includes(to) && mail.subject === 'Reset your password').length
  t.equal((await forgot(moved)).statusCode, 202)
  t.equal((await forgot(email)).statusCode, 202)
  t.equal((await smtp.next(email)).subject, 'Reset your password', 'the login email gets a reset link')
  t.equal(resets(moved), 0, 'the pending address none')

  t.equal((await confirm(token)).statusCode, 200)
  t.equal((await forgot(email)).statusCode, 202)
  t.equal((await forgot(moved)).statusCode, 202)
  t.equal((await smtp.next(moved)).subject, 'Reset your password', 'once confirmed, the new address gets one')
  t.equal(resets(email), 1, 'and the old address no more')
})

t.test('the link dies when the password or the email changes meanwhile, or when a newer change is asked for', async (t) => {
  const first = await account()
  const byPassword = await requestChange(t, first.session, `a.${first.email}`)
  await smtp.next(first.email)
  t.equal((await patchMe(first.session, { password: 'a changed password', current_password: PASSWORD })).statusCode, 200)
  const stale = await confirm(byPassword)
  assertProblem(t, stale, 400, 'AUTH_INVALID_EMAIL_CHANGE_TOKEN')
  t.equal(stale.json().detail, 'Invalid email change token: the password or the email changed since it was sent; ask again')

  const second = await account()
  const older = await requestChange(t, second.session, `b.${second.email}`)
  const newer = await requestChange(t, second.session, `c.${second.email}`)
  assertProblem(t, await confirm(older), 400, 'AUTH_INVALID_EMAIL_CHANGE_TOKEN', 'a newer request voids the older link')
  t.match((await confirm(newer)).json(), { email: `c.${second.email}` })

  const root = await superuser(app, 'root.email-change@example.com')
  const third = await account()
  const byDeactivation = await requestChange(t, third.session, `d.${third.email}`)
  const deactivate = await app.inject({ method: 'PATCH', url: `/api/v1/users/${third.user.id}`, headers: root.session.headers, payload: { is_active: false } })
  t.equal(deactivate.statusCode, 200)
  assertProblem(t, await confirm(byDeactivation), 400, 'AUTH_INVALID_EMAIL_CHANGE_TOKEN', 'a deactivated account\'s change cannot complete')
})

t.test('an email change honours If-Match: a stale ETag is 412 and mails nothing', async (t) => {
  const { email, session } = await account()
  const res = await app.inject({
    method: 'PATCH', url: '/api/v1/users/me', headers: { ...session.headers, 'if-match': '"0"' }, payload: { email: `etag.${email}`, current_password: PASSWORD }
  })
  assertProblem(t, res, 412, 'PRECONDITION_FAILED')
  const current = (await me(session)).headers.etag as string
  const fresh = await app.inject({
    method: 'PATCH', url: '/api/v1/users/me', headers: { ...session.headers, 'if-match': current }, payload: { email: `etag.${email}`, current_password: PASSWORD }
  })
  t.equal(fresh.statusCode, 202, 'the current ETag passes')
  await confirmToken(t, `etag.${email}`)
  t.equal(smtp.received.filter((mail) => mail.to.includes(`etag.${email}`)).length, 1, 'one link: the refused request sent none')
})

t.test('a pending change does not hold the address: registration takes it, and the link then answers 409', async (t) => {
  const { email, session } = await account()
  const wanted = `wanted.${email}`
  const token = await requestChange(t, session, wanted)
  t.equal((await register(app, wanted)).email, wanted, 'registration is not blocked by the pending change')
  const taken = await confirm(token)
  assertProblem(t, taken, 409, 'ACCOUNT_EMAIL_TAKEN')
  t.equal(taken.json().detail, `The email ${wanted} is already registered`)
  t.equal((await me(session)).json().email, email, 'the account keeps its email')
  t.equal((await me(session)).statusCode, 200, 'and its sessions')
})

t.test('an address already registered is refused when asked for, as registration refuses it', async (t) => {
  const { session } = await account()
  const other = await account()
  assertProblem(t, await patchMe(session, { email: other.email.toUpperCase(), current_password: PASSWORD }), 409, 'ACCOUNT_EMAIL_TAKEN')
  const before = smtp.received.length
  const same = await patchMe(other.session, { email: other.email.toUpperCase(), current_password: PASSWORD })
  t.equal(same.statusCode, 200, 'its own address in other letters is no change')
  t.equal(same.json().email, other.email)
  t.equal(smtp.received.length, before, 'and mails nothing')
})

t.test('a new password and a new email in one request: the password now, the email by its link', async (t) => {
  const { email, session } = await account()
  const res = await patchMe(session, { email: `both.${email}`, password: 'both at once please', current_password: PASSWORD })
  t.equal(res.statusCode, 202)
  const token = await confirmToken(t, `both.${email}`)
  t.ok(await login(app, email, 'both at once please'), 'the password is changed at once')
  t.match((await confirm(token)).json(), { email: `both.${email}` }, 'the link is bound to the new password')
})

t.test('confirmation links to one address are capped like other mail (429 MAIL_RATE_LIMITED)', async (t) => {
  const capped = await build(t, { SMTP_URL: smtp.url, APP_URL, RATE_LIMIT_MAILS_PER_EMAIL: 1 })
  const email = 'capped.changer@example.com'
  await register(capped, email)
  await smtp.next(email)
  const session = await login(capped, email)
  const ask = () => capped.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: { email: 'inbox@example.com', current_password: PASSWORD } })
  t.equal((await ask()).statusCode, 202)
  await confirmToken(t, 'inbox@example.com')
  await smtp.next(email)
  const refused = await ask()
  assertProblem(t, refused, 429, 'MAIL_RATE_LIMITED')
  t.ok(Number(refused.headers['retry-after']) > 0, 'with Retry-After')
})

t.test('the link works for RESET_TOKEN_EXPIRE_MINUTES on the plugin\'s clock', async (t) => {
  const { app: own, clock, inbox } = await clockedAccounts(t, { resetTokenMinutes: 30 })
  await register(own, 'clocked.changer@example.com')
  const changeAt = async (minutes: number, to: string) => {
    // Access tokens expire on the same clock: each attempt logs in at the clock's time.
    const session = await login(own, 'clocked.changer@example.com')
    const start = clock.now
    const asked = await own.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: { email: to, current_password: PASSWORD } })
    t.equal(asked.statusCode, 202)
    const mail = await until('the confirmation mail', () => inbox.find((message) => message.kind === 'confirm-email' && message.to === to))
    t.match(mail.text, 'within 30 minutes')
    clock.now = start + minutes * 60_000
    return own.inject({ method: 'POST', url: '/api/v1/auth/confirm-email', payload: { token: new URL(mail.link).searchParams.get('token') } })
  }
  const late = await changeAt(30, 'late@example.com')
  assertProblem(t, late, 400, 'AUTH_INVALID_EMAIL_CHANGE_TOKEN')
  t.equal(late.json().detail, 'Invalid email change token: it has expired; ask again')
  t.equal((await changeAt(29.99, 'in-time@example.com')).statusCode, 200, 'just before the end')
  const notice = inbox.find((message) => message.kind === 'email-change-notice')
  t.match(notice, { to: 'clocked.changer@example.com', link: '' }, 'the notice went to the old address, without a link')
})
