import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { chromium, type Locator, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { FORGOT_NOTICE } from '../../routes/accounts/recovery-routes.js'
import { httpRequest } from '../support/http.js'
import { startServer } from '../support/server-process.js'
import { startSmtp } from '../support/smtp.js'

const chromiumPath = '/usr/bin/chromium'
const output = new URL('./output/', import.meta.url).pathname
const email = 'swagger.user@example.com'
const password = 'correct-horse-battery'

const skip = existsSync(chromiumPath) ? false : `no Chromium at ${chromiumPath} (apt-get install -y chromium)`

/** Screenshot of the viewport or of one operation, named after the step, for a human to check. */
async function shot (target: Page | Locator, step: string) {
  await target.screenshot({ path: `${output}${step}.png` })
}

/** A page of a fresh Chromium, closed when the test ends. */
async function newPage (t: Test) {
  // Chromium's sandbox refuses to start as root (CI containers run as root) unless disabled.
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : []
  })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  page.setDefaultTimeout(30_000)
  return page
}

/**
 * Expands one operation, presses "Try it out" and "Execute" (after `body`, when given, replaces
 * the example JSON), and returns the example it replaced and what the page shows as the response:
 * status cell and body text.
 */
async function tryOperation (page: Page, opblockId: string, method: string, path: string, body?: string) {
  const block = page.locator(`#${opblockId}`)
  await block.locator('.opblock-summary-control').click()
  await block.getByRole('button', { name: 'Try it out' }).click()
  const textarea = block.locator('textarea.body-param__text')
  const example = body === undefined ? undefined : await textarea.inputValue()
  if (body !== undefined) await textarea.fill(body)
  const [response] = await Promise.all([
    page.waitForResponse((res) => res.request().method() === method && new URL(res.url()).pathname === path),
    block.getByRole('button', { name: 'Execute' }).click()
  ])
  const live = block.locator('.live-responses-table .response')
  return {
    block,
    example,
    request: response.request(),
    status: (await live.locator('.response-col_status').innerText()).trim(),
    body: await live.locator('.response-col_description pre').first().innerText()
  }
}

t.test('Swagger UI logs in through the password flow and calls the API with the token', {
  skip
}, async (t) => {
  await mkdir(output, { recursive: true })
  const server = startServer(t, { DATABASE_URL: 'memory://', SECRET_KEY: 'browser-test-secret-of-at-least-32-bytes' })
  const base = await server.listening
  const registered = await httpRequest(base, '/api/v1/auth/register', { json: { email, password } })
  t.equal(registered.status, 201, 'the user is registered through the API')

  const page = await newPage(t)
  // CSP violations, script errors and 4xx/5xx answers all land here as console errors.
  const consoleErrors: string[] = []
  // The wrong password below fails on purpose: its 400 is expected, nothing else.
  let failingLogin = false
  page.on('console', (msg) => {
    const expected = failingLogin && msg.location().url.endsWith('/api/v1/auth/login') && msg.text().includes('400')
    if (msg.type() === 'error' && !expected) consoleErrors.push(msg.text())
  })
  page.on('pageerror', (err) => consoleErrors.push(err.message))

  await page.goto(`${base}/docs`)
  await page.locator('#operations-users-getMe').waitFor()
  const authorize = page.locator('.auth-wrapper').getByRole('button', { name: 'Authorize' })
  t.match(await authorize.getAttribute('class'), /\bunlocked\b/, 'the Authorize button starts unlocked')
  await shot(page, '01-docs-loaded')

  await authorize.click()
  const dialog = page.locator('.dialog-ux .modal-ux')
  await dialog.locator('#oauth_username').fill(email)
  await dialog.locator('#oauth_password').fill('not the password')
  failingLogin = true
  const [refused] = await Promise.all([
    page.waitForResponse((res) => new URL(res.url()).pathname === '/api/v1/auth/login'),
    dialog.locator('button', { hasText: /^Authorize$/ }).click()
  ])
  t.equal(refused.status(), 400, 'a wrong password is an OAuth error')
  t.equal((await refused.json()).error, 'invalid_grant')
  await dialog.getByText('Incorrect email or password').waitFor()
  t.match(await dialog.innerText(), /invalid_grant[\s\S]*Incorrect email or password/, 'the dialog shows the error and its error_description')
  await shot(page, '02-authorize-refused')
  failingLogin = false

  await dialog.locator('#oauth_password').fill(password)
  await shot(page, '02-authorize-dialog-filled')
  const [login] = await Promise.all([
    page.waitForResponse((res) => new URL(res.url()).pathname === '/api/v1/auth/login'),
    // Its accessible name is an aria-label ("Apply given OAuth2 credentials"); the text is what users see.
    dialog.locator('button', { hasText: /^Authorize$/ }).click()
  ])
  t.equal(login.status(), 200, 'the password flow logs in')
  t.match(login.request().headers()['content-type'], /^application\/x-www-form-urlencoded/, 'the login is form-encoded')
  t.match(Object.fromEntries(new URLSearchParams(login.request().postData() ?? '')), { grant_type: 'password', username: email, password }, 'with the dialog\'s fields')
  await dialog.locator('button', { hasText: /^Logout$/ }).waitFor()
  t.match(await dialog.innerText(), /Authorized/, 'the dialog shows the scheme as authorized')
  await shot(page, '03-authorized')
  await dialog.locator('button', { hasText: /^Close$/ }).click()
  await dialog.waitFor({ state: 'detached' })

  const me = await tryOperation(page, 'operations-users-getMe', 'GET', '/api/v1/users/me')
  t.match(me.request.headers().authorization, /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/, '/users/me carries the access token')
  t.equal(me.status, '200', 'the page shows status 200 for /users/me')
  t.equal(JSON.parse(me.body).email, email, 'the page shows the user\'s email')
  await shot(me.block, '04-users-me-200')

  const item = { name: 'Browser lamp', description: 'Created from Swagger UI', price: 19.5, in_stock: false }
  const created = await tryOperation(page, 'operations-items-createItem', 'POST', '/api/v1/items', JSON.stringify(item, null, 2))
  t.match(created.example, /"name": "Desk lamp"/, 'the body textarea held the schema\'s example')
  t.equal(created.status, '201', 'the page shows status 201 for POST /items')
  const shown = JSON.parse(created.body)
  t.match(shown, { ...item, id: Number }, 'the page shows the created item')
  await shot(created.block, '05-item-created-201')
  const stored = await httpRequest(base, `/api/v1/items/${shown.id}`)
  t.match(stored.json, item, 'the item is stored')

  await page.reload()
  // The lock is restored from localStorage once the document has loaded: wait for it, bounded.
  const locked = await page.locator('.auth-wrapper .authorize.locked').waitFor({ timeout: 15_000 }).then(() => true, () => false)
  t.ok(locked, 'the Authorize button shows the lock after a reload')
  // Chromium restores the scroll position on reload; bring the button back into the screenshot.
  await authorize.scrollIntoViewIfNeeded()
  await shot(page, '06-reloaded-still-authorized')
  const again = await tryOperation(page, 'operations-users-getMe', 'GET', '/api/v1/users/me')
  t.equal(again.status, '200', '/users/me still answers 200 after the reload')
  t.equal(JSON.parse(again.body).email, email, 'the page shows the email again')
  t.equal(again.request.headers().authorization, me.request.headers().authorization, 'with the token obtained before the reload')
  await shot(again.block, '07-users-me-after-reload')

  t.same(consoleErrors, [], 'no console errors (CSP violations, script errors, failed requests)')
})

t.test('Swagger UI resets a forgotten password with the token of the mailed link', { skip }, async (t) => {
  await mkdir(output, { recursive: true })
  const appUrl = 'https://app.example.com'
  const user = 'swagger.reset@example.com'
  const newPassword = 'a brand new passphrase'
  const smtp = await startSmtp(t)
  const server = startServer(t, { DATABASE_URL: 'memory://', SECRET_KEY: 'browser-test-secret-of-at-least-32-bytes', SMTP_URL: smtp.url, APP_URL: appUrl })
  const base = await server.listening
  const registered = await httpRequest(base, '/api/v1/auth/register', { json: { email: user, password } })
  t.equal(registered.status, 201, 'the user is registered through the API')
  t.equal((await smtp.next(user)).subject, 'Confirm your email address', 'registering mails a verification link first')
  const loginWith = (pass: string) => httpRequest(base, '/api/v1/auth/login', { form: { username: user, password: pass } })

  const page = await newPage(t)
  const consoleErrors: string[] = []
  // The reused token below is refused on purpose: its 400 is expected, nothing else.
  let reusingToken = false
  page.on('console', (msg) => {
    const expected = reusingToken && msg.location().url.endsWith('/api/v1/auth/reset-password') && msg.text().includes('400')
    if (msg.type() === 'error' && !expected) consoleErrors.push(msg.text())
  })
  page.on('pageerror', (err) => consoleErrors.push(err.message))
  const openDocs = async () => {
    await page.goto(`${base}/docs`)
    await page.locator('#operations-auth-resetPassword').waitFor()
  }
  await openDocs()

  const forgot = await tryOperation(page, 'operations-auth-forgotPassword', 'POST', '/api/v1/auth/forgot-password',
    JSON.stringify({ email: user }, null, 2))
  t.match(JSON.parse(forgot.example ?? ''), { email: String }, 'the body textarea held an example with an email')
  t.same(JSON.parse(forgot.request.postData() ?? ''), { email: user }, 'forgotPassword sends the email typed in')
  t.equal(forgot.status, '202', 'the page shows status 202 for forgotPassword')
  t.same(JSON.parse(forgot.body), { detail: FORGOT_NOTICE }, 'the page shows the notice')
  await shot(forgot.block, '08-forgot-password-202')

  const mail = await smtp.next(user)
  t.equal(mail.subject, 'Reset your password', 'a reset mail arrives')
  t.equal(mail.links.length, 1, 'with one link')
  const link = new URL(mail.links[0] ?? '')
  t.equal(`${link.origin}${link.pathname}`, `${appUrl}/reset-password`, 'the link leads to the front end page of APP_URL')
  const token = link.searchParams.get('token') ?? ''
  t.match(token, /^[\w-]{20,}$/, 'the link carries a token')

  const reset = await tryOperation(page, 'operations-auth-resetPassword', 'POST', '/api/v1/auth/reset-password',
    JSON.stringify({ token, new_password: newPassword }, null, 2))
  t.match(JSON.parse(reset.example ?? ''), { token: String, new_password: String }, 'the body textarea held an example with both members')
  t.same(JSON.parse(reset.request.postData() ?? ''), { token, new_password: newPassword }, 'resetPassword sends the token and the new password')
  t.equal(reset.status, '204', 'the page shows status 204 for resetPassword')
  // Without a body the details cell holds only the response headers.
  t.equal(await reset.block.locator('.live-responses-table').getByText('Response body').count(), 0, 'and no response body')
  await shot(reset.block, '09-reset-password-204')

  const fresh = await loginWith(newPassword)
  t.equal(fresh.status, 200, 'the new password logs in through the API')
  t.match(fresh.json, { access_token: String, token_type: 'bearer' }, 'with a bearer token')
  const old = await loginWith(password)
  t.equal(old.status, 400, 'the old password is refused')
  t.equal(old.json?.error, 'invalid_grant', 'as an invalid_grant')

  // A fresh page, as someone who opens the link a second time: the operation starts collapsed again.
  await openDocs()
  reusingToken = true
  const reused = await tryOperation(page, 'operations-auth-resetPassword', 'POST', '/api/v1/auth/reset-password',
    JSON.stringify({ token, new_password: 'yet another passphrase' }, null, 2))
  t.equal(reused.status, '400', 'the page shows status 400 for the token used twice')
  t.match(JSON.parse(reused.body), { status: 400, code: 'AUTH_INVALID_RESET_TOKEN', detail: /already used/ }, 'the page shows the problem and its code')
  await shot(reused.block, '10-reset-password-reused-400')
  reusingToken = false
  t.equal((await loginWith(newPassword)).status, 200, 'the refused reset changed nothing')

  t.same(consoleErrors, [], 'no console errors (CSP violations, script errors, failed requests)')
})
