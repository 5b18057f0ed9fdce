import { Validator } from '@seriousme/openapi-schema-validator'
import t from 'tap'
import { API_PREFIX } from '../app.js'
import resourcePlugin from '../routes/resources/index.js'
import { build } from './support/app.js'
import { TaskFields } from './support/tasks.js'

// What client generators and Swagger UI read: it must be a valid OpenAPI 3.1 document, and every
// operation must say what it answers when it fails.

type Operation = {
  operationId?: string
  summary?: string
  tags?: string[]
  security?: unknown[]
  parameters?: Array<{ in: string }>
  requestBody?: { content: Record<string, { schema: Record<string, unknown>, examples?: unknown }> }
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>
}

const app = await build(t, { RESOURCES: ['records', 'notes'], CATALOG_WRITE_SCOPE: 'items:write' })
// A resource defined by its fields, owned and guarded, is held to the same rules as the rest.
await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, owner: true, indexes: ['due'] })
const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
const operations = Object.entries(doc.paths as Record<string, Record<string, Operation>>)
  .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path, method, operation, name: `${method.toUpperCase()} ${path}` })))

t.test('the document passes the OpenAPI 3.1 schema validator with zero errors', async (t) => {
  const validator = new Validator()
  const result = await validator.validate(structuredClone(doc))
  t.same(result.errors ?? [], [], 'no errors')
  t.equal(result.valid, true)
  t.equal(validator.version, '3.1')
})

t.test('every operation has a unique operationId, a summary and tags', async (t) => {
  t.ok(operations.length >= 20, `${operations.length} operations`)
  const ids = operations.map(({ operation }) => operation.operationId)
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique')
  for (const { name, operation } of operations) {
    t.match(operation.operationId, /^[a-z][A-Za-z]+$/, `${name}: operationId`)
    t.ok(operation.summary && operation.summary.length > 5, `${name}: summary`)
    t.ok(operation.tags?.length, `${name}: tags`)
  }
})

t.test('error responses are documented where they can occur, as problem documents', async (t) => {
  for (const { name, path, operation } of operations) {
    if (path.startsWith('/docs')) continue
    const statuses = Object.keys(operation.responses)
    // A conditional header is an optional string, which always passes: it makes no 422.
    const hasInput = operation.requestBody || operation.parameters?.some((parameter) => parameter.in !== 'header')
    if (operation.security?.length) t.ok(statuses.includes('401'), `${name}: 401`)
    // The OAuth endpoints answer bad input with RFC 6749's 400 invalid_request, a problem document too.
    const oauth = ['/api/v1/auth/login', '/api/v1/auth/revoke'].includes(path)
    if (hasInput) t.ok(statuses.includes(oauth ? '400' : '422'), `${name}: ${oauth ? 400 : 422}`)
    if (/\{[a-z_]+_id\}$/.test(path)) t.ok(statuses.includes('404'), `${name}: 404`)
    for (const status of statuses.filter((status) => Number(status) >= 400)) {
      const content = operation.responses[status]?.content ?? {}
      const schema = Object.values(content)[0]?.schema
      const problem = oauth && ['400', '401'].includes(status) ? /^#\/components\/schemas\/OAuthError$/ : /^#\/components\/schemas\/(Validation)?Problem$/
      t.match(schema?.$ref, problem, `${name}: ${status} is a problem document`)
      const example = (Object.values(content)[0] as { example?: { status: number, code: string } } | undefined)?.example
      t.equal(example?.status, Number(status), `${name}: the ${status} example shows its own status`)
      if (status === '404') t.match(example?.code, /_NOT_FOUND$/, `${name}: the 404 example names its not-found code`)
    }
  }
  const byId = (id: string) => operations.find(({ operation }) => operation.operationId === id)!.operation
  t.ok(byId('register').responses['409'], 'register: 409')
  t.ok(byId('login').responses['429'], 'login: 429')
  t.ok(byId('listUsers').responses['403'], 'listUsers: 403')
})

t.test('the main request bodies carry examples', async (t) => {
  for (const id of ['register', 'login', 'refresh', 'createItem', 'updateItem', 'createRecords', 'updateRecords', 'updateMe']) {
    const { operation } = operations.find(({ operation }) => operation.operationId === id) ?? {}
    t.ok(operation, id)
    const media = Object.values(operation?.requestBody?.content ?? {})[0]
    const properties = (media?.schema.properties ?? {}) as Record<string, { examples?: unknown[] }>
    const examples = media?.examples ?? media?.schema.examples ?? Object.values(properties).filter((property) => property.examples)
    t.ok(Array.isArray(examples) ? examples.length > 0 : examples, `${id}: its body has examples`)
  }
})

t.test('every operation documents the statuses any route may send: 500 and 503, and 400, 413 and 415 with a body', async (t) => {
  for (const { name, operation } of operations) {
    const statuses = Object.keys(operation.responses)
    const form = operation.requestBody?.content['application/x-www-form-urlencoded'] !== undefined
    // The token endpoints answer a body of another type with an OAuth invalid_request (400), not 415.
    const expected = ['500', '503', ...operation.requestBody ? ['400', '413', ...form ? [] : ['415']] : []]
    t.same(expected.filter((status) => !statuses.includes(status)), [], name)
    // Their 400 is the OAuth error document, and readiness's 503 is its own report.
    const problems = expected.filter((code) => !(code === '400' && form) && !(code === '503' && name.endsWith('/health/ready')))
    for (const status of problems) {
      t.equal(operation.responses[status]?.content?.['application/problem+json']?.schema.$ref, '#/components/schemas/Problem', `${name} ${status}: a problem document`)
    }
  }
})
