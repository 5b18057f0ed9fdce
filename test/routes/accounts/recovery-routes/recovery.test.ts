import { eq } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { accountTokens, users } from '../../../../db/schema.js'
import { FORGOT_NOTICE } from '../../../../routes/accounts/recovery-routes.js'
import { PASSWORD, build, captureLogs, login, newAccount, register } from '../../../support/app.js'
import { clockedAccounts } from '../../../support/accounts-plugin.js'
import { until } from '../../../support/until.js'
import { assertProblem } from '../../../support/responses.js'
import { startSmtp, unusedSmtpUrl } from '../../../support/smtp.js'

const APP_URL = 'https://app.example.com/account'
const NEW_PASSWORD = 'a brand new passphrase'
const smtp = await startSmtp(t)
const app = await build(t, { SMTP_URL: smtp.url, APP_URL, MAIL_FROM: 'Example <no-reply@example.com>' })

const forgot = (email: string) => app.inject({ method: 'POST', url: '/api/v1/auth/forgot-password', payload: { email } })
const reset = (token: string, password = NEW_PASSWORD) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, new_password: password } })
const me = (authorization: string) => app.inject({ method: 'GET', url: '/api/v1/users/me', headers: { authorization } })

/** The token of the next reset link mailed to `email`, read from the message the SMTP server received. */
async function mailedToken (t: Test, email: string) {
  const mail = await smtp.next(email)
  const [link] = mail.links
  const url = new URL(link ?? '')
  t.equal(`${url.origin}${url.pathname}`, `${APP_URL}/reset-password`, 'the link leads to the front end page')
  return { mail, token: url.searchParams.get('token') ?? '' }
}

t.test('a forgotten password is reset through the mailed link, which ends every session', async (t) => {
  const { email, session } = await newAccount(app)
  await smtp.next(email) // the verification link of the registration

  const res = await forgot(email.toUpperCase())
  t.equal(res.statusCode, 202)
  t.same(res.json(), { detail: FORGOT_NOTICE })
  const { mail, token } = await mailedToken(t, email)
  t.equal(mail.subject, 'Reset your password')
  t.match(mail.from, 'no-reply@example.com')
  t.match(mail.text, 'within 30 minutes')
  t.match(mail.html, /<a href="https:\/\/app\.example\.com\/account\/reset-password\?token=/)
  const stored = await app.plinthDb.db.select().from(accountTokens).where(eq(accountTokens.purpose, 'reset'))
  t.notOk(stored.some((row) => row.hash === token), 'only a hash of the token is stored')

  t.equal((await reset(token)).statusCode, 204)
  t.equal((await me(session.headers.authorization)).statusCode, 401, 'the access tokens of existing sessions die')
  const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  t.equal(refreshed.statusCode, 401, 'and so do their refresh tokens')
  await t.rejects(login(app, email), /401|400/, 'the old password no longer logs in')
  const fresh = await login(app, email, NEW_PASSWORD)
  t.equal((await me(fresh.headers.authorization)).json().is_verified, true, 'the mailed link proved the address')

  const again = await reset(token, 'yet another passphrase')
  assertProblem(t, again, 400, 'AUTH_INVALID_RESET_TOKEN')
  t.equal(again.json().detail, 'Invalid password reset token: it is unknown or was already used')
  t.ok(await login(app, email, NEW_PASSWORD), 'a refused reset changes nothing')
})

t.test('an unknown or inactive email gets the same answer and no mail', async (t) => {
  const { email, user } = await newAccount(app)
  await smtp.next(email)
  await app.plinthDb.db.update(users).set({ is_active: false }).where(eq(users.id, user.id))
  const before = smtp.received.length
  const unknown = await forgot('nobody@example.com')
  const inactive = await forgot(email)
  for (const res of [unknown, inactive]) {
    t.equal(res.statusCode, 202)
    t.equal(res.payload, JSON.stringify({ detail: FORGOT_NOTICE }))
  }
  const strip = (headers: Record<string, unknown>) => Object.keys(headers).filter((name) => !['date', 'x-request-id'].includes(name)).sort()
  t.same(strip(unknown.headers), strip(inactive.headers), 'the same headers')
  // A mail to a known address sent after them is the next one the server gets.
  const known = await newAccount(app)
  const next = await smtp.next(known.email)
  t.equal(next.subject, 'Confirm your email address')
  t.equal(smtp.received.length, before + 1, 'nothing was mailed for the unknown and the inactive email')
  const tokens = await app.plinthDb.db.select().from(accountTokens).where(eq(accountTokens.user_id, user.id))
  t.notOk(tokens.some((row) => row.purpose === 'reset'), 'no reset token for an inactive account')
})

t.test('a forged, malformed or expired token is refused, and a weak password is a 422', async (t) => {
  const forged = await reset('Gk2VbXN0sQ8pYl1r8dJx4w7uZq3mTf6aHcE9oKj2LsU')
  assertProblem(t, forged, 400, 'AUTH_INVALID_RESET_TOKEN')
  assertProblem(t, await reset(''), 422, 'VALIDATION_FAILED', 'an empty token')
  const { email } = await newAccount(app)
  await smtp.next(email)
  await forgot(email)
  const { token } = await mailedToken(t, email)
  assertProblem(t, await reset(token, 'short'), 422, 'VALIDATION_FAILED', 'a password under PASSWORD_MIN_LENGTH')
  t.equal((await reset(token)).statusCode, 204, 'the refused attempts did not spend the token')
})

t.test('a token dies when the password or the email changes after it was mailed', async (t) => {
  const { email, session } = await newAccount(app)
  await smtp.next(email)
  await forgot(email)
  const { token } = await mailedToken(t, email)
  const changed = await app.inject({
    method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: { password: 'changed by its owner', current_password: PASSWORD }
  })
  t.equal(changed.statusCode, 200)
  const stale = await reset(token)
  assertProblem(t, stale, 400, 'AUTH_INVALID_RESET_TOKEN')
  t.match(stale.json().detail, 'the password or the email changed')

  const other = await newAccount(app)
  await smtp.next(other.email)
  await forgot(other.email)
  const second = await mailedToken(t, other.email)
  const moved = `moved.${other.email}`
  const patched = await app.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: other.session.headers, payload: { email: moved, current_password: PASSWORD } })
  t.equal(patched.statusCode, 202)
  const link = new URL((await smtp.next(moved)).links[0] ?? '')
  const confirmed = await app.inject({ method: 'POST', url: '/api/v1/auth/confirm-email', payload: { token: link.searchParams.get('token') } })
  t.equal(confirmed.statusCode, 200)
  assertProblem(t, await reset(second.token), 400, 'AUTH_INVALID_RESET_TOKEN', 'a link mailed to the old address')
})

t.test('two resets with one token at once: exactly one succeeds', async (t) => {
  const { email } = await newAccount(app)
  await smtp.next(email)
  await forgot(email)
  const { token } = await mailedToken(t, email)
  const answers = await Promise.all([reset(token, 'first of the racers'), reset(token, 'second of the racers')])
  t.same(answers.map((res) => res.statusCode).sort(), [204, 400])
  const winner = answers[0]!.statusCode === 204 ? 'first of the racers' : 'second of the racers'
  t.ok(await login(app, email, winner), 'the password is the one of the reset that won')
})

t.test('the answer does not wait for the mail server, and a failed mail is logged with the request id', async (t) => {
  const { lines, logger } = captureLogs()
  const down = await build(t, { SMTP_URL: await unusedSmtpUrl(), MAIL_TIMEOUT_SECONDS: 1 }, { logger })
  const user = await register(down, 'down@example.com')
  const res = await down.inject({ method: 'POST', url: '/api/v1/auth/forgot-password', payload: { email: user.email } })
  t.equal(res.statusCode, 202)
  t.same(res.json(), { detail: FORGOT_NOTICE })
  const requestId = lines.find((line) => line.msg === 'incoming request' && (line.req as { url: string }).url === '/api/v1/auth/forgot-password')?.reqId
  await t.resolveMatch(until('the failed mail\'s log line', () => lines.find((line) => line.msg === 'mail could not be sent' && line.reqId === requestId)), {
    level: 50, mail: 'reset-password', err: { message: /ECONNREFUSED|connect/ }
  })
  t.notMatch(res.payload, /ECONNREFUSED|smtp/i, 'nothing of it reaches the answer')
})

t.test('without a mail server the link is logged once per message, after a warning at startup', async (t) => {
  const { lines, logger } = captureLogs()
  const quiet = await build(t, {}, { logger })
  await quiet.ready()
  t.equal(lines.filter((line) => /no mail server/.test(String(line.msg))).length, 1)
  await register(quiet, 'logged@example.com')
  await quiet.inject({ method: 'POST', url: '/api/v1/auth/forgot-password', payload: { email: 'logged@example.com' } })
  const logged = () => lines.filter((line) => line.mail !== undefined && /written to the log/.test(String(line.msg)))
  // The reset link is prepared after the answer is sent.
  const written = await until('both mails in the log', () => logged().length === 2 ? logged() : undefined)
  t.same(written.map((line) => line.mail), ['verify-email', 'reset-password'])
  t.match(written[1], { level: 30, to: 'logged@example.com', subject: 'Reset your password', link: /\/reset-password\?token=/ })
  t.notOk(written.some((line) => 'text' in line || 'html' in line), 'nothing but the link')
})

t.test('a link works until RESET_TOKEN_EXPIRE_MINUTES have passed on the clock the plugin is given', async (t) => {
  const { app: own, clock, inbox } = await clockedAccounts(t, { resetTokenMinutes: 30 })
  await register(own, 'clock@example.com')
  const tokenOfLastMail = () => new URL(inbox.at(-1)?.link ?? '').searchParams.get('token') ?? ''
  const resetAt = async (minutes: number) => {
    const start = clock.now
    await own.inject({ method: 'POST', url: '/api/v1/auth/forgot-password', payload: { email: 'clock@example.com' } })
    await until('the reset mail', () => inbox.at(-1)?.kind === 'reset-password' ? true : undefined)
    const token = tokenOfLastMail()
    inbox.length = 0
    clock.now = start + minutes * 60_000
    return own.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, new_password: NEW_PASSWORD } })
  }
  t.equal((await resetAt(29.99)).statusCode, 204, 'just before the end')
  const late = await resetAt(30)
  assertProblem(t, late, 400, 'AUTH_INVALID_RESET_TOKEN')
  t.equal(late.json().detail, 'Invalid password reset token: it has expired; ask for a new link')
})

t.test('forgot-password is limited per address (429) and per email (no more mail, the same 202)', async (t) => {
  const limited = await build(t, { SMTP_URL: smtp.url, RATE_LIMIT_PASSWORD_RESET: 3, RATE_LIMIT_MAILS_PER_EMAIL: 1 })
  await register(limited, 'capped@example.com')
  await smtp.next('capped@example.com')
  const ask = (email: string) => limited.inject({ method: 'POST', url: '/api/v1/auth/forgot-password', payload: { email } })
  t.equal((await ask('capped@example.com')).statusCode, 202)
  await smtp.next('capped@example.com')
  const second = await ask('capped@example.com')
  t.equal(second.statusCode, 202, 'past the cap on mails to one address the answer is the same')
  t.same(second.json(), { detail: FORGOT_NOTICE })
  const third = await ask('other@example.com')
  t.equal(third.statusCode, 202)
  const refused = await ask('capped@example.com')
  assertProblem(t, refused, 429, 'RATE_LIMITED')
  t.ok(Number(refused.headers['retry-after']) > 0, 'with Retry-After')
  t.equal(refused.headers['ratelimit-limit'], '3')
  const tokens = await limited.plinthDb.db.select().from(accountTokens).where(eq(accountTokens.purpose, 'reset'))
  t.equal(tokens.length, 1, 'one reset token: the second ask of one address made none')
  t.equal(smtp.received.filter((mail) => mail.to.includes('capped@example.com') && mail.subject === 'Reset your password').length, 1)
})
