import { eq } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { accountTokens } from '../../../../db/schema.js'
import { PASSWORD, build, login, movableClock, newAccount, register, superuser, type Session } from '../../../support/app.js'
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

/** A registered, logged-in account that followed its verification link: only a verified address is told of a change. */
async function account () {
  const created = await newAccount(app)
  const token = new URL((await smtp.next(created.email)).links[0] ?? '').searchParams.get('token')
  const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/verify', payload: { token } })
  if (verified.statusCode !== 200) throw new Error(`verify ${created.email}: ${verified.statusCode} ${verified.payload}`)
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
  const ask = async (email: string) => {
    await register(capped, email)
    const session = await login(capped, email)
    return capped.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: { email: 'inbox@example.com', current_password: PASSWORD } })
  }
  t.equal((await ask('capped.changer@example.com')).statusCode, 202)
  await confirmToken(t, 'inbox@example.com')
  const refused = await ask('other.changer@example.com')
  assertProblem(t, refused, 429, 'MAIL_RATE_LIMITED')
  t.match(refused.json().detail, /^Too many mails of this kind to inbox@example\.com; retry in \d+ seconds$/, 'whichever account asks')
  t.ok(Number(refused.headers['retry-after']) > 3000, 'with Retry-After')
})

/** An app with the default cap of 5 mails per email an hour, on a clock the test moves, and a logged-in account of `email`. */
async function cappedChanger (t: Test, email: string, settings: object = {}) {
  const { clock, advance } = movableClock()
  const capped = await build(t, { SMTP_URL: smtp.url, APP_URL, RATE_LIMIT_MAILS_PER_EMAIL: 5, ...settings }, { clock })
  await register(capped, email)
  const verifyLink = await smtp.next(email)
  const ask = async (to: string) => {
    // Access tokens expire on the same clock: each request logs in at the clock's time.
    const session = await login(capped, email)
    return capped.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: { email: to, current_password: PASSWORD } })
  }
  const noticesTo = () => smtp.received.filter((mail) => mail.to.includes(email) && mail.subject === 'Your email address is being changed').length
  return { app: capped, advance, ask, noticesTo, verifyToken: new URL(verifyLink.links[0] ?? '').searchParams.get('token') }
}

t.test('an address registered by someone who does not own it gets no change notices, however many changes are asked', async (t) => {
  const victim = 'victim.of.notices@example.com'
  const { advance, ask, noticesTo } = await cappedChanger(t, victim)
  for (let i = 1; i <= 5; i++) {
    t.equal((await ask(`n${i}.${victim}`)).statusCode, 202, `change ${i} is asked for`)
    await confirmToken(t, `n${i}.${victim}`)
  }
  const sixth = await ask(`n6.${victim}`)
  assertProblem(t, sixth, 429, 'MAIL_RATE_LIMITED', 'one account asks for at most RATE_LIMIT_MAILS_PER_EMAIL changes an hour')
  t.match(sixth.json().detail, `Too many mails of this kind to ${victim}; retry in `)
  advance(3600_000)
  t.equal((await ask(`n7.${victim}`)).statusCode, 202, 'the next hour, again')
  await confirmToken(t, `n7.${victim}`)
  t.equal(noticesTo(), 0, 'the unverified address got no notice: only its own verification link')
  t.equal(smtp.received.filter((mail) => mail.to.includes(`n6.${victim}`)).length, 0, 'and the refused change mailed nothing')
})

t.test('a verified owner hears of every change up to the cap; past it the change is refused, never made unheard', async (t) => {
  const owner = 'told.owner@example.com'
  const { app: capped, advance, ask, noticesTo, verifyToken } = await cappedChanger(t, owner, { RATE_LIMIT_MAILS_PER_EMAIL: 2 })
  t.equal((await capped.inject({ method: 'POST', url: '/api/v1/auth/verify', payload: { token: verifyToken } })).statusCode, 200)
  for (const to of [`a.${owner}`, `b.${owner}`]) {
    t.equal((await ask(to)).statusCode, 202)
    await confirmToken(t, to)
    t.equal((await smtp.next(owner)).subject, 'Your email address is being changed')
  }
  const third = await ask(`c.${owner}`)
  assertProblem(t, third, 429, 'MAIL_RATE_LIMITED', 'the notices to the owner are capped')
  t.match(third.json().detail, `Too many mails of this kind to ${owner}; retry in `)
  t.equal(smtp.received.filter((mail) => mail.to.includes(`c.${owner}`)).length, 0, 'no link goes without its notice')
  advance(3000_000)
  assertProblem(t, await ask(`d.${owner}`), 429, 'MAIL_RATE_LIMITED', 'until the window ends')
  advance(600_000)
  t.equal((await ask(`e.${owner}`)).statusCode, 202, 'then the owner is told again')
  await confirmToken(t, `e.${owner}`)
  t.equal((await smtp.next(owner)).subject, 'Your email address is being changed')
  t.equal(noticesTo(), 3, 'one notice per change made')
})

t.test('the link works for RESET_TOKEN_EXPIRE_MINUTES on the plugin\'s clock', async (t) => {
  const { app: own, clock, inbox } = await clockedAccounts(t, { resetTokenMinutes: 30 })
  await register(own, 'clocked.changer@example.com')
  const link = await until('the verification mail', () => inbox.find((message) => message.kind === 'verify-email'))
  const verified = await own.inject({ method: 'POST', url: '/api/v1/auth/verify', payload: { token: new URL(link.link).searchParams.get('token') } })
  t.equal(verified.statusCode, 200, 'the account is verified, so its address is told of changes')
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
