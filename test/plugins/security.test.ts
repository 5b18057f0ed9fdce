import t from 'tap'
import { build, captureLogs, newAccount, PASSWORD } from '../helper.js'

const app = await build(t)

t.test('every response carries the security headers and nothing that names the stack', async (t) => {
  for (const url of ['/api/v1/health', '/api/v1/items', '/api/v1/nowhere', '/docs']) {
    const res = await app.inject({ method: 'GET', url })
    t.equal(res.headers['x-content-type-options'], 'nosniff', url)
    t.equal(res.headers['x-frame-options'], 'SAMEORIGIN', url)
    t.equal(res.headers['referrer-policy'], 'no-referrer', url)
    t.match(res.headers['strict-transport-security'], /max-age=\d+/, url)
    t.match(res.headers['content-security-policy'], /default-src 'self';.*script-src 'self'/, url)
    t.notMatch(res.headers['content-security-policy'], /upgrade-insecure-requests/, `${url}: plain-http deployments keep working`)
    t.equal(res.headers['x-powered-by'], undefined, url)
    t.equal(res.headers.server, undefined, url)
  }
})

t.test('the headers are the ones helmet sets, computed once and the same on every kind of answer', async (t) => {
  const { securityHeaders } = await import('../../plugins/security.js')
  const computed = securityHeaders({})
  t.ok(Object.keys(computed).length >= 10, 'helmet\'s default set')
  t.notOk('x-powered-by' in computed)
  const expected = Object.keys(securityHeaders({ contentSecurityPolicy: { directives: { defaultSrc: ["'self'"] } } }))
  for (const [method, url] of [['GET', '/api/v1/health'], ['GET', '/api/v1/items/0'], ['POST', '/api/v1/auth/login'], ['DELETE', '/api/v1/nowhere']] as const) {
    const res = await app.inject({ method, url })
    for (const name of expected) t.type(res.headers[name], 'string', `${method} ${url} (${res.statusCode}): ${name}`)
  }
})

t.test('Swagger UI fits the policy: no inline script, every script and style from this origin', async (t) => {
  const page = await app.inject({ method: 'GET', url: '/docs/' })
  const html = page.payload
  const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
  t.ok(scripts.length > 0)
  for (const [, attributes, body] of scripts) {
    t.equal(body?.trim(), '', 'no inline script body, which script-src \'self\' would block')
    const src = /src="([^"]+)"/.exec(attributes ?? '')?.[1]
    t.ok(src && !/^[a-z]+:|^\/\//i.test(src), `same-origin script ${src}`)
    const res = await app.inject({ method: 'GET', url: new URL(src!, 'http://x/docs/').pathname })
    t.equal(res.statusCode, 200, `${src} is served`)
  }
  for (const [, href] of html.matchAll(/<link[^>]+href="([^"]+)"/g)) {
    t.notMatch(href, /^[a-z]+:|^\/\//i, `same-origin ${href}`)
  }
})

t.test('logs never hold a password, a token or a password hash, even at trace level', async (t) => {
  const logs = captureLogs()
  const logged = await build(t, { LOGIN_MAX_FAILURES: 2 }, { logger: { ...logs.logger, level: 'trace' } })
  const { email, session } = await newAccount(logged)
  const form = (password: string) => ({
    method: 'POST' as const,
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ username: email, password }).toString()
  })
  t.equal((await logged.inject(form('wrong password 1'))).statusCode, 401)
  const refreshed = await logged.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  t.equal(refreshed.statusCode, 200)
  await logged.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  await logged.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: refreshed.json().refresh_token } })
  await logged.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })
  const wrongCurrent = { current_password: 'not the current one', password: 'a new password' }
  t.equal((await logged.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: wrongCurrent })).statusCode, 403)
  const changed = { current_password: PASSWORD, password: 'the changed password' }
  t.equal((await logged.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: session.headers, payload: changed })).statusCode, 200)
  await logged.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email: 'bad', password: 'secret register password' } })

  const text = JSON.stringify(logs.lines)
  t.ok(logs.lines.length > 10, 'the requests were logged')
  for (const [name, secret] of [
    ['password', PASSWORD], ['wrong password', 'wrong password 1'], ['registration password', 'secret register password'],
    ['wrong current password', wrongCurrent.current_password], ['changed password', changed.password],
    ['access token', session.access_token], ['refresh token', session.refresh_token], ['rotated token', refreshed.json().refresh_token]
  ] as const) {
    t.notOk(text.includes(secret), `no ${name}`)
    // A JWT's signature alone is enough to recognise a leak of any part of it.
    if (name.includes('token')) t.notOk(text.includes(secret.split('.')[2] as string), `no ${name} signature`)
  }
  t.notMatch(text, /\$argon2/, 'no password hash')
  t.notMatch(text, /authorization/i, 'no authorization header')
})
