import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import swagger from '@fastify/swagger'
import Fastify from 'fastify'
import t from 'tap'
import docsPlugin from '../../plugins/docs.js'
import { build, captureLogs } from '../support/app.js'

const app = await build(t)

t.test('GET /docs serves Swagger UI', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/docs' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/html/)
  t.match(res.payload, /swagger-ui/i)
})

t.test('GET /docs/json is an OpenAPI 3.1 document with the password flow', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/docs/json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.equal(doc.openapi, '3.1.0')
  t.same(doc.components.securitySchemes.OAuth2PasswordBearer, {
    type: 'oauth2',
    flows: { password: { tokenUrl: '/api/v1/auth/login', scopes: { me: 'Read your own profile and scopes' } } }
  })
})

t.test('shared schemas are components with readable names, referenced by routes', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  for (const name of ['Problem', 'ValidationProblem', 'Health']) {
    t.ok(doc.components.schemas[name], `${name} is a component`)
  }
  t.notOk(Object.keys(doc.components.schemas).some((name) => name.startsWith('def-')), 'no def-N names')
  const ready = doc.paths['/api/v1/health/ready'].get
  t.equal(ready.operationId, 'getReadiness')
  t.same(ready.tags, ['health'])
  t.equal(ready.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/Health')
  t.equal(ready.responses['503'].content['application/problem+json'].schema.$ref, '#/components/schemas/Problem', 'errors are documented with the media type they are sent with')
})

t.test('every route in the document has an operationId, a summary and tags', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const operations = Object.values(doc.paths).flatMap((path) => Object.values(path as Record<string, Record<string, unknown>>))
  t.ok(operations.length >= 2)
  for (const operation of operations) {
    t.type(operation.operationId, 'string')
    t.type(operation.summary, 'string')
    t.ok(Array.isArray(operation.tags) && operation.tags.length > 0, `${String(operation.operationId)} has tags`)
  }
})

t.test('Swagger UI keeps the authorization across reloads and calls no outside validator', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })
  t.equal(res.statusCode, 200)
  t.match(res.payload, /"persistAuthorization":\s*true/)
  t.match(res.payload, /"validatorUrl":\s*null/)
})

t.test('the document is sent as one text per version, compressed when the client takes it, and revalidated by ETag', async (t) => {
  const plain = await app.inject({ method: 'GET', url: '/docs/json' })
  t.equal(plain.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(plain.headers['cache-control'], 'no-cache', 'kept, but asked again before use')
  t.equal(plain.headers.vary, 'accept-encoding')
  t.notOk(plain.headers['content-encoding'])
  const etag = plain.headers.etag as string
  t.match(etag, /^"[\w-]{27}"$/, 'a strong ETag')
  const again = await app.inject({ method: 'GET', url: '/docs/json' })
  t.equal(again.payload, plain.payload, 'the same text')
  t.equal(again.headers.etag, etag, 'the same version')

  const revalidated = await app.inject({ method: 'GET', url: '/docs/json', headers: { 'if-none-match': etag } })
  t.equal(revalidated.statusCode, 304)
  t.equal(revalidated.payload, '', 'no body')
  t.equal(revalidated.headers.etag, etag)
  const stale = await app.inject({ method: 'GET', url: '/docs/json', headers: { 'if-none-match': '"another"' } })
  t.equal(stale.statusCode, 200, 'another tag gets the document')

  for (const [accept, encoding, decode] of [
    ['gzip, deflate, br', 'br', brotliDecompressSync],
    ['gzip', 'gzip', gunzipSync],
    ['br;q=0, gzip;q=0.5', 'gzip', gunzipSync]
  ] as const) {
    const res = await app.inject({ method: 'GET', url: '/docs/json', headers: { 'accept-encoding': accept } })
    t.equal(res.headers['content-encoding'], encoding, accept)
    t.equal(decode(res.rawPayload).toString(), plain.payload, `${encoding} holds the same document`)
    t.ok(res.rawPayload.length * 5 < plain.rawPayload.length, `${encoding} is at most a fifth of the size`)
    t.not(res.headers.etag, etag, 'each encoding is its own representation, with its own tag')
    const cached = await app.inject({ method: 'GET', url: '/docs/json', headers: { 'accept-encoding': accept, 'if-none-match': res.headers.etag as string } })
    t.equal(cached.statusCode, 304, `${encoding} revalidates by its own tag`)
  }
  const identityOnly = await app.inject({ method: 'GET', url: '/docs/json', headers: { 'accept-encoding': 'identity' } })
  t.notOk(identityOnly.headers['content-encoding'], 'identity only: sent as it is')
})

t.test('Swagger UI\'s files are cached for a week and revalidated by their ETag; its initializer is not', async (t) => {
  const css = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' })
  t.equal(css.statusCode, 200)
  t.equal(css.headers['cache-control'], 'public, max-age=604800')
  t.ok(css.headers.etag, 'an ETag to revalidate with')
  const revalidated = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css', headers: { 'if-none-match': css.headers.etag as string } })
  t.equal(revalidated.statusCode, 304)
  const missing = await app.inject({ method: 'GET', url: '/docs/static/no-such-file.js' })
  t.equal(missing.statusCode, 404)
  t.not(missing.headers['cache-control'], 'public, max-age=604800', 'a 404 is not cached for a week')
  const initializer = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })
  t.equal(initializer.statusCode, 200)
  t.not(initializer.headers['cache-control'], 'public, max-age=604800', 'the initializer carries this server\'s settings')
})

t.test('docsPlugin takes the document\'s title, version, description and servers', async (t) => {
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  const servers = [{ url: 'https://api.example.com', description: 'production' }, { url: 'https://{region}.example.com', variables: { region: { default: 'eu', enum: ['eu', 'us'] } } }]
  await host.register(docsPlugin, { title: 'Example', version: '2.3.0', description: 'The API of Example', servers })
  const res = await host.inject({ method: 'GET', url: '/docs/json' })
  t.equal(res.statusCode, 200)
  t.same(res.json().info, { title: 'Example', version: '2.3.0', description: 'The API of Example' }, 'info is the host\'s')
  t.same(res.json().servers, servers, 'and so are the servers')
  t.same(host.swagger().info, { title: 'Example', version: '2.3.0', description: 'The API of Example' }, 'app.swagger() gives the same document')

  const defaults = Fastify({ logger: false })
  t.teardown(() => defaults.close())
  await defaults.register(docsPlugin)
  await defaults.ready()
  t.same(defaults.swagger().info, {
    title: 'plinth', version: '0.1.0', description: 'Accounts and sessions, an item catalog and generic resources, under /api/v1.'
  }, 'without options, the server\'s info')
  t.notOk('servers' in defaults.swagger(), 'and no servers: clients call the origin they loaded the document from')
})

t.test('a docsPlugin option that is not one fails the boot, naming it', async (t) => {
  for (const [options, message] of [
    [{ version: '' }, 'docs plugin: version must be a non-empty string such as 1.0.0 (got "")'],
    [{ servers: [{ description: 'no url' }] }, 'docs plugin: servers.0.url must be a URL such as https://api.example.com or /api (got undefined)'],
    [{ servers: 'https://api.example.com' }, 'docs plugin: servers must be an array of { url, description?, variables? } (got "https://api.example.com")']
  ] as const) {
    const host = Fastify({ logger: false })
    t.teardown(() => host.close())
    await t.rejects(async () => { await host.register(docsPlugin, options as never) }, { code: 'DOCS_INVALID_OPTIONS', message }, message)
  }
})

t.test('docsPlugin\'s options beside a host\'s own @fastify/swagger are named in a warning: the host\'s document keeps its own', async (t) => {
  const { lines, logger } = captureLogs()
  const host = Fastify({ logger })
  t.teardown(() => host.close())
  await host.register(swagger, { openapi: { openapi: '3.1.0', info: { title: 'host', version: '1.0.0' } } })
  await host.register(docsPlugin, { title: 'Example', version: '2.3.0' })
  await host.ready()
  t.same(host.swagger().info, { title: 'host', version: '1.0.0' }, 'the host\'s info')
  t.ok(lines.some((line) => line.level === 40 && line.msg === 'docs: the app has its own @fastify/swagger, which sets the document\'s title, version: docsPlugin\'s are not used'),
    'a warning names the options left unused')
})
