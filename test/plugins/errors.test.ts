import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import { connect, type AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import type { App } from '../../app.js'
import { Text } from '../../schemas/common.js'
import { problemResponses } from '../../schemas/error.js'
import { build, captureLogs } from '../support/app.js'
import { PROBLEM_TYPE } from '../support/responses.js'

const SECRET = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$s3cr3t-hash-that-must-never-be-logged'

/** Routes that fail in every way the error contract covers. */
async function failingRoutes (app: App) {
  app.post('/echo', {
    schema: {
      body: Type.Object({
        name: Text({ minLength: 1, maxLength: 8 }),
        price: Type.Number({ minimum: 0 }),
        tags: Type.Optional(Type.Array(Type.String()))
      }, { additionalProperties: false }),
      querystring: Type.Object({ n: Type.Optional(Type.Integer({ minimum: 1 })) }),
      response: { 200: Type.Object({ name: Type.String(), price: Type.Number(), n: Type.Optional(Type.Integer()), keys: Type.Array(Type.String()) }), ...problemResponses(422) }
    }
  }, async (request) => ({ ...request.body, n: request.query.n, keys: Object.keys(request.body) }))
  app.get('/boom', async () => { throw new Error('select secret from users: internal detail') })
  app.get('/sql', async () => app.plinthDb.db.execute('select * from no_such_table' as never))
  // Statements that fail with a secret bound to them: a missing table, a value PostgreSQL quotes, a key it repeats.
  app.get('/secret/missing-table', async () => app.plinthDb.db.execute(sql`insert into no_such_table (hashed_password) values (${SECRET})`))
  app.get('/secret/quoted', async () => app.plinthDb.db.execute(sql`select ${SECRET}::integer`))
  app.get('/secret/duplicate', async () => {
    await app.plinthDb.db.execute(sql`create table if not exists token_digests (digest text primary key)`)
    await app.plinthDb.db.execute(sql`insert into token_digests (digest) values (${SECRET}) on conflict do nothing`)
    return app.plinthDb.db.execute(sql`insert into token_digests (digest) values (${SECRET})`)
  })
  app.get('/looping-causes', async () => {
    const first = new Error('first')
    first.cause = Object.assign(new Error('second'), { cause: first })
    throw first
  })
  app.get('/text-cause', async () => { throw new Error('wrapped', { cause: 'a reason in words' }) })
  app.get('/db-down', async () => {
    throw Object.assign(new Error('Failed query: select 1'), { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }) })
  })
}

async function setup (t: Test, settings = {}) {
  const logs = captureLogs()
  const app = await build(t, settings, { logger: logs.logger })
  await app.register(failingRoutes, { prefix: '/t' })
  return { app, logs }
}

function assertProblem (t: Test, res: { statusCode: number, headers: Record<string, unknown>, json (): any }, status: number, code: string) {
  t.equal(res.statusCode, status, 'status')
  t.equal(res.headers['content-type'], PROBLEM_TYPE, 'problem content type')
  const body = res.json()
  t.equal(body.type, 'about:blank')
  t.equal(body.status, status)
  t.equal(body.code, code, 'code')
  t.type(body.title, 'string')
  t.type(body.detail, 'string')
  t.ok(body.detail.length > 0, 'detail is not empty')
  return body
}

t.test('a body that fails its schema is 422 with errors[]', async (t) => {
  const { app } = await setup(t)
  const cases: Array<[unknown, string, string]> = [
    [{ name: '', price: 1 }, '/body/name', 'must NOT have fewer than 1 characters'],
    [{ name: 'ok', price: -0.01 }, '/body/price', 'must be >= 0'],
    [{ price: 1 }, '/body/name', 'is required'],
    [{ name: 'a\u0000b', price: 1 }, '/body/name', 'must not contain NUL characters'],
    [{ name: 'ok', price: '5' }, '/body/price', 'must be number'],
    [{ name: 123, price: 1 }, '/body/name', 'must be string'],
    [{ name: 'ok', price: 1, tags: 'one' }, '/body/tags', 'must be array'],
    [[1, 2], '/body', 'must be object']
  ]
  for (const [payload, path, message] of cases) {
    const res = await app.inject({ method: 'POST', url: '/t/echo', payload: payload as object })
    const body = assertProblem(t, res, 422, 'VALIDATION_FAILED')
    t.same(body.errors, [{ path, message }], JSON.stringify(payload))
    t.equal(body.detail, `${path} ${message}`)
  }
})

t.test('query strings are coerced from text, and fail with 422 when they cannot be', async (t) => {
  const { app } = await setup(t)
  const ok = await app.inject({ method: 'POST', url: '/t/echo?n=5', payload: { name: 'a', price: 0 } })
  t.equal(ok.statusCode, 200)
  t.equal(ok.json().n, 5)
  for (const n of ['abc', '1.5', '1e400', 'Infinity', '-Infinity']) {
    const bad = await app.inject({ method: 'POST', url: `/t/echo?n=${n}`, payload: { name: 'a', price: 0 } })
    t.same(assertProblem(t, bad, 422, 'VALIDATION_FAILED').errors, [{ path: '/querystring/n', message: 'must be integer' }], n)
  }
})

t.test('unknown body properties are stripped, not stored and not an error', async (t) => {
  const { app } = await setup(t)
  const res = await app.inject({ method: 'POST', url: '/t/echo', payload: { name: 'a', price: 1, id: 7, is_superuser: true } })
  t.equal(res.statusCode, 200)
  t.same(res.json().keys, ['name', 'price'])
})

t.test('a body that is not JSON is 400', async (t) => {
  const { app } = await setup(t)
  const res = await app.inject({ method: 'POST', url: '/t/echo', headers: { 'content-type': 'application/json' }, payload: '{"name": "a",' })
  const body = assertProblem(t, res, 400, 'MALFORMED_BODY')
  t.match(body.detail, /^Body is not valid JSON/)
})

t.test('an empty JSON body is 400', async (t) => {
  const { app } = await setup(t)
  const res = await app.inject({ method: 'POST', url: '/t/echo', headers: { 'content-type': 'application/json' }, payload: '' })
  assertProblem(t, res, 400, 'MALFORMED_BODY')
})

t.test('a body over the limit is 413', async (t) => {
  const { app } = await setup(t, { BODY_LIMIT: 64 })
  const res = await app.inject({ method: 'POST', url: '/t/echo', payload: { name: 'a', price: 1, tags: ['x'.repeat(100)] } })
  assertProblem(t, res, 413, 'BODY_TOO_LARGE')
})

t.test('an unsupported content type is 415', async (t) => {
  const { app } = await setup(t)
  const res = await app.inject({ method: 'POST', url: '/t/echo', headers: { 'content-type': 'text/csv' }, payload: 'name,price' })
  const body = assertProblem(t, res, 415, 'UNSUPPORTED_MEDIA_TYPE')
  t.equal(body.detail, 'Content type "text/csv" is not supported here')
})

t.test('an unknown route is 404 naming the method and path', async (t) => {
  const { app } = await setup(t)
  for (const [method, url] of [['GET', '/nowhere'], ['DELETE', '/api/v1/health'], ['GET', '/api/v2/health']] as const) {
    const res = await app.inject({ method, url })
    const body = assertProblem(t, res, 404, 'ROUTE_NOT_FOUND')
    t.equal(body.detail, `Route ${method} ${url} not found`)
  }
})

t.test('an unexpected error is 500 with a generic detail, logged with the request id', async (t) => {
  const { app, logs } = await setup(t)
  const res = await app.inject({ method: 'GET', url: '/t/boom' })
  const body = assertProblem(t, res, 500, 'INTERNAL_ERROR')
  t.notMatch(res.payload, /secret|select|stack|Error:/i, 'no internals in the response')
  const logged = logs.lines.find((line) => line.msg === 'unhandled error')
  t.ok(logged, 'the error is logged')
  t.equal(logged?.level, 50, 'at error level')
  t.match((logged?.err as { message: string }).message, /internal detail/)
  t.equal(body.detail, `An unexpected error occurred (request ${String(logged?.reqId)})`, 'detail quotes the logged request id')
})

t.test('a database error never reaches the client', async (t) => {
  const { app } = await setup(t)
  const res = await app.inject({ method: 'GET', url: '/t/sql' })
  assertProblem(t, res, 500, 'INTERNAL_ERROR')
  t.notMatch(res.payload, /no_such_table|relation|select/i)
})

t.test('a failed statement is logged with its text, never the secret bound to it', async (t) => {
  const { app, logs } = await setup(t)
  for (const route of ['missing-table', 'quoted', 'duplicate']) {
    const res = await app.inject({ method: 'GET', url: `/t/secret/${route}` })
    t.ok(res.statusCode >= 400, `${route}: answered ${res.statusCode}`)
    t.notMatch(res.payload, 'hash-that-must-never', `${route}: not in the answer`)
  }
  const logged = JSON.stringify(logs.lines)
  t.notMatch(logged, 's3cr3t-hash-that-must-never-be-logged', 'not in the log')
  t.notMatch(logged, 'c2FsdHNhbHQ', 'no part of it either')
  t.match(logged, 'insert into no_such_table (hashed_password) values ($1)', 'the statement is logged, its placeholder in place of the value')
  t.match(logged, '42P01', 'and the SQLSTATE')
})

t.test('an error whose causes loop, or are not errors, is logged like any other', async (t) => {
  const { app, logs } = await setup(t)
  for (const route of ['looping-causes', 'text-cause']) assertProblem(t, await app.inject({ method: 'GET', url: `/t/${route}` }), 500, 'INTERNAL_ERROR')
  const messages = logs.lines.filter((line) => line.msg === 'unhandled error').map((line) => (line.err as { message: string }).message)
  t.match(messages, [/^first: second: first/, /^wrapped/])
})

t.test('an unreachable database is 503 with Retry-After', async (t) => {
  const { app } = await setup(t)
  const res = await app.inject({ method: 'GET', url: '/t/db-down' })
  const body = assertProblem(t, res, 503, 'DATABASE_UNAVAILABLE')
  t.equal(res.headers['retry-after'], '5')
  t.notMatch(body.detail, /ECONNREFUSED|select/)
})

t.test('text with an unpaired surrogate is 422 naming it (PostgreSQL cannot store it)', async (t) => {
  const { app } = await setup(t)
  const res = await app.inject({ method: 'POST', url: '/t/echo', headers: { 'content-type': 'application/json' }, payload: '{"name":"é\\ud800","price":1}' })
  t.same(assertProblem(t, res, 422, 'VALIDATION_FAILED').errors, [{ path: '/body/name', message: 'must not contain unpaired surrogates' }])
})

t.test('a URL that does not decode is 400 before routing, as a problem document', async (t) => {
  const { app } = await setup(t)
  const res = await app.inject({ method: 'GET', url: '/api/v1/items/%ZZ' })
  assertProblem(t, res, 400, 'MALFORMED_URL')
})

t.test('over a socket, bytes that are not HTTP and an unknown Expect get problem documents with the security headers', async (t) => {
  const { app } = await setup(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const exchange = (bytes: string) => new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(bytes))
    let answer = ''
    socket.setEncoding('latin1').on('data', (chunk) => { answer += chunk }).on('close', () => resolve(answer)).on('error', reject)
  })
  const garbage = await exchange('NOT HTTP AT ALL\r\n\r\n')
  t.match(garbage, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.match(garbage, /content-type: application\/problem\+json/i)
  t.match(JSON.parse(garbage.slice(garbage.indexOf('\r\n\r\n') + 4)), { status: 400, code: 'MALFORMED_REQUEST' })
  const expect = await exchange('GET /api/v1/health HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n')
  t.match(expect, /^HTTP\/1\.1 417 /)
  t.match(JSON.parse(expect.slice(expect.indexOf('\r\n\r\n') + 4)), { status: 417, code: 'EXPECTATION_FAILED' })
  // Neither answer passes through Fastify's hooks, where the other responses get these.
  for (const [name, answer] of [['400', garbage], ['417', expect]] as const) {
    const head = answer.slice(0, answer.indexOf('\r\n\r\n'))
    t.match(head, /\r\nx-content-type-options: nosniff\r\n/i, `${name}: nosniff`)
    t.match(head, /\r\ncontent-security-policy: default-src 'none';frame-ancestors 'none'\r\n/i, `${name}: CSP`)
    t.match(head, /\r\nx-frame-options: DENY\r\n/i, `${name}: no framing`)
  }
})
