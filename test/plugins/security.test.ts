import Fastify from 'fastify'
import t from 'tap'
import { dbPlugin, resourcePlugin, securityPlugin } from '../../index.js'
import { build, captureLogs, login, newAccount, PASSWORD } from '../support/app.js'
import { freshDatabase } from '../support/database.js'

const app = await build(t)

// helmet's headers that only steer how a browser renders a page and what it loads from it.
const DOCUMENT_ONLY = ['referrer-policy', 'cross-origin-opener-policy', 'origin-agent-cluster', 'x-dns-prefetch-control',
  'x-download-options', 'x-permitted-cross-domain-policies', 'x-xss-protection']

t.test('every API response carries the API security headers and nothing that names the stack', async (t) => {
  const requests = [['GET', '/api/v1/health'], ['GET', '/api/v1/items'], ['GET', '/api/v1/items/0'], ['POST', '/api/v1/auth/login'],
    ['DELETE', '/api/v1/nowhere'], ['GET', '/nowhere'], ['GET', '/api/v1/items/%E0%A4%A']] as const
  for (const [method, url] of requests) {
    const res = await app.inject({ method, url })
    const name = `${method} ${url} (${res.statusCode})`
    t.equal(res.headers['x-content-type-options'], 'nosniff', name)
    t.equal(res.headers['x-frame-options'], 'DENY', name)
    t.equal(res.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'", name)
    t.equal(res.headers['cross-origin-resource-policy'], 'same-origin', name)
    t.match(res.headers['strict-transport-security'], /^max-age=\d+; includeSubDomains$/, name)
    for (const header of DOCUMENT_ONLY) t.equal(res.headers[header], undefined, `${name}: no ${header}`)
    t.equal(res.headers['x-powered-by'], undefined, name)
    t.equal(res.headers.server, undefined, name)
  }
})

t.test('Swagger UI\'s pages carry helmet\'s full set, with a policy they run under', async (t) => {
  const { securityHeaders } = await import('../../http/security-headers.js')
  const helmetDefaults = Object.keys(securityHeaders({}))
  t.ok(helmetDefaults.length >= 10, 'helmet\'s default set')
  t.notOk('x-powered-by' in securityHeaders({}))
  for (const url of ['/docs', '/docs/', '/docs/json']) {
    const res = await app.inject({ method: 'GET', url })
    t.ok(res.statusCode < 400, `${url} is served`)
    for (const name of helmetDefaults) t.type(res.headers[name], 'string', `${url}: ${name}`)
    t.equal(res.headers['x-frame-options'], 'SAMEORIGIN', url)
    t.equal(res.headers['referrer-policy'], 'no-referrer', url)
    t.match(res.headers['content-security-policy'], /default-src 'self';.*script-src 'self'/, url)
    t.notMatch(res.headers['content-security-policy'], /upgrade-insecure-requests/, `${url}: plain-http deployments keep working`)
    t.equal(res.headers['x-powered-by'], undefined, url)
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
  t.equal((await logged.inject(form('wrong password 1'))).statusCode, 400)
  const refreshed = await logged.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  t.equal(refreshed.statusCode, 200)
  await logged.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })
  await logged.inject({ method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: refreshed.json().refresh_token } })
  await logged.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })
  // That session has ended: another login changes the password.
  const other = await login(logged, email)
  const wrongCurrent = { current_password: 'not the current one', password: 'a new password' }
  t.equal((await logged.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: other.headers, payload: wrongCurrent })).statusCode, 403)
  const changed = { current_password: PASSWORD, password: 'the changed password' }
  t.equal((await logged.inject({ method: 'PATCH', url: '/api/v1/users/me', headers: other.headers, payload: changed })).statusCode, 200)
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

t.test('a host page with an inline and a same-origin script is not blocked by plinth\'s CSP; plinth\'s routes keep theirs', async (t) => {
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  await host.register(securityPlugin)
  await host.register(dbPlugin, { client: await freshDatabase(t) })
  await host.register(resourcePlugin, { prefix: '/api', name: 'notes' })
  host.get('/', async (_request, reply) => reply.type('text/html').send('<script>document.title = "board"</script><script src="/app.js"></script>'))
  host.get('/app.js', async (_request, reply) => reply.type('text/javascript').send('document.body.dataset.ready = "yes"'))

  for (const url of ['/', '/app.js']) {
    const res = await host.inject({ method: 'GET', url })
    t.equal(res.statusCode, 200, url)
    t.equal(res.headers['content-security-policy'], undefined, `${url}: no policy of plinth's on the host's own route, so its scripts run`)
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${url}: the safe headers stay`)
    t.match(res.headers['strict-transport-security'], /^max-age=\d+; includeSubDomains$/, url)
    t.equal(res.headers['x-frame-options'], 'SAMEORIGIN', `${url}: its own origin may frame it, as helmet allows`)
  }
  for (const [method, url] of [['GET', '/api/notes'], ['GET', '/api/notes/'], ['HEAD', '/api/notes'], ['POST', '/api/notes'], ['GET', '/nowhere']] as const) {
    const res = await host.inject({ method, url, ...(method === 'POST' ? { payload: { title: 'n' } } : {}) })
    t.equal(res.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'", `${method} ${url} (${res.statusCode}): plinth's policy`)
    t.equal(res.headers['x-frame-options'], 'DENY', `${method} ${url}`)
  }
})
