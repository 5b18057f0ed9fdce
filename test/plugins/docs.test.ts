import t from 'tap'
import { build } from '../support/app.js'

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
