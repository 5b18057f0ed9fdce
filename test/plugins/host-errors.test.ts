import Fastify from 'fastify'
import t from 'tap'
import { API_PREFIX, type App } from '../../app.js'
import { conflictError, dbPlugin, errorsPlugin, forbiddenError, notFoundError, resourcePlugin, validationError } from '../../index.js'
import { problemResponses } from '../../schemas/index.js'
import { build, newAccount } from '../support/app.js'
import { freshDatabase } from '../support/database.js'
import { assertProblem, PROBLEM_TYPE } from '../support/responses.js'
import { TaskFields } from '../support/tasks.js'

// A host's hooks on plinth's routes: whatever 4xx they throw, the client gets that 4xx as a
// problem document, never a 500 because the route's schema for that status wants more.

/** What the host's hook throws, by the `x-host-rule` header of the request. */
const RULES: Record<string, () => Error> = {
  'plain-422': () => Object.assign(new Error('A task titled "admin" is reserved'), { statusCode: 422 }),
  'status-409': () => Object.assign(new Error('This board is frozen'), { status: 409 }),
  'coded-404': () => Object.assign(new Error('No such board'), { statusCode: 404, code: 'BOARD_NOT_FOUND' }),
  'no-message': () => Object.assign(new Error(), { statusCode: 409 }),
  'status-403': () => Object.assign(new Error('Only the board owner writes here'), { status: 403, code: 'BOARD_READ_ONLY' }),
  'helper-422': () => validationError({ '/body/title': 'is reserved', '/headers/x-board': 'must name a board you own' }),
  'helper-409': () => conflictError('BOARD_FROZEN', 'This board is frozen'),
  'helper-403': () => forbiddenError('BOARD_READ_ONLY', 'Only the board owner writes here'),
  'helper-404': () => notFoundError('BOARD_NOT_FOUND', 'No such board')
}

async function hostApp (): Promise<{ app: App, headers: Record<string, string> }> {
  const app = await build(t)
  await app.register(async function host (scope) {
    scope.addHook('preHandler', async (request) => {
      const rule = RULES[String(request.headers['x-host-rule'])]
      if (rule) throw rule()
    })
    await scope.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, guard: scope.authenticate })
    scope.get('/host/boards', { schema: { operationId: 'listBoards', response: { 200: { type: 'array' }, ...problemResponses(409, 422) } } }, async () => [])
  })
  const { session } = await newAccount(app)
  return { app, headers: session.headers }
}

const { app, headers } = await hostApp()
const tasks = `${API_PREFIX}/tasks/`
const send = (rule: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE' = 'POST', url = tasks) =>
  app.inject({ method, url, headers: { ...headers, 'x-host-rule': rule }, ...(method === 'POST' || method === 'PATCH' ? { payload: { title: 'admin' } } : {}) })

t.test('a host hook that throws a plain 422 on a plinth route answers that 422, not a 500', async (t) => {
  for (const method of ['POST', 'GET'] as const) {
    const res = await send('plain-422', method)
    assertProblem(t, res, 422, 'UNPROCESSABLE_ENTITY', method)
    t.equal(res.json().detail, 'A task titled "admin" is reserved', `${method}: the hook's message is the detail`)
    t.same(res.json().errors, [], `${method}: it names no part of the request`)
  }
})

t.test('any 4xx a host hook throws reaches the client as that 4xx, `status` as well as `statusCode`', async (t) => {
  assertProblem(t, await send('status-409'), 409, 'CONFLICT')
  t.equal((await send('no-message')).json().detail, 'Conflict', 'without a message, the status phrase is the detail')
  const { id } = (await app.inject({ method: 'POST', url: tasks, headers, payload: { title: 'a task' } })).json()
  assertProblem(t, await send('coded-404', 'GET', `${tasks}${id}`), 404, 'BOARD_NOT_FOUND')
  assertProblem(t, await send('status-403', 'DELETE', `${tasks}${id}`), 403, 'BOARD_READ_ONLY')
})

t.test('the exported helpers answer in plinth\'s format, from a hook on a plinth route or a host route of its own', async (t) => {
  const { id } = (await app.inject({ method: 'POST', url: tasks, headers, payload: { title: 'helped' } })).json()
  for (const url of [tasks, '/host/boards']) {
    const method = url === tasks ? 'POST' : 'GET'
    const invalid = await send('helper-422', method, url)
    assertProblem(t, invalid, 422, 'VALIDATION_FAILED', url)
    t.same(invalid.json().errors, [
      { path: '/body/title', message: 'is reserved' },
      { path: '/headers/x-board', message: 'must name a board you own' }
    ], `${url}: errors[] names each part`)
    t.equal(invalid.json().detail, '/body/title is reserved; /headers/x-board must name a board you own')
    const frozen = await send('helper-409', method, url)
    assertProblem(t, frozen, 409, 'BOARD_FROZEN', url)
    t.equal(frozen.json().detail, 'This board is frozen')
  }
  assertProblem(t, await send('helper-403', 'DELETE', `${tasks}${id}`), 403, 'BOARD_READ_ONLY')
  assertProblem(t, await send('helper-404', 'GET', `${tasks}${id}`), 404, 'BOARD_NOT_FOUND')
})

t.test('a host without plinth\'s database, or whose catalogs do not answer, still gets the constraint\'s 409', async (t) => {
  const duplicate = () => new Error('Failed query', { cause: Object.assign(new Error('duplicate key'), { severity: 'ERROR', code: '23505', table: 'boards', constraint: 'boards_name_key' }) })
  for (const plinthDb of [undefined, { db: { execute: async () => { throw new Error('the database went away') } } }]) {
    const host = Fastify({ logger: false })
    t.teardown(() => host.close())
    await host.register(errorsPlugin)
    if (plinthDb) host.decorate('plinthDb', plinthDb as never)
    host.post('/boards', async () => { throw duplicate() })
    const res = await host.inject({ method: 'POST', url: '/boards', payload: {} })
    assertProblem(t, res, 409, 'UNIQUE_VIOLATION')
    t.equal(res.json().detail, 'Another row of boards already has these values (unique constraint "boards_name_key")')
  }
})

// A host's own problem documents, in its own format (no `code`, no `errors[]`, members of its own): sent as they are.
const reserved = { type: 'https://host.example/problems/reserved', title: 'Reserved title', status: 422, detail: 'A task titled "admin" is reserved', instance: '/boards/7' }
const frozen = { type: 'https://host.example/problems/frozen', title: 'Board frozen', status: 409, detail: 'This board is frozen' }

t.test('a host hook that sends its own problem document on a plinth route gets it through unchanged, not a 500', async (t) => {
  // No errors plugin: plinth's routes alone, in a context of the host's with its hooks.
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  await host.register(dbPlugin, { client: await freshDatabase(t) })
  await host.register(async function boards (scope) {
    scope.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-host-rule'] === 'frozen') return reply.code(409).type('application/problem+json').send(frozen)
    })
    scope.addHook('preHandler', async (request, reply) => {
      if (request.headers['x-host-rule'] === 'reserved') return reply.code(422).type('application/problem+json').send(reserved)
    })
    await scope.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields })
  })
  for (const method of ['POST', 'GET'] as const) {
    for (const [rule, sent] of [['frozen', frozen], ['reserved', reserved]] as const) {
      const res = await host.inject({ method, url: tasks, headers: { 'x-host-rule': rule }, ...(method === 'POST' ? { payload: { title: 'admin' } } : {}) })
      t.equal(res.statusCode, sent.status, `${method} ${rule}: the host's status`)
      t.equal(res.headers['content-type'], PROBLEM_TYPE, `${method} ${rule}: its content type`)
      t.same(res.json(), sent, `${method} ${rule}: its body, member for member`)
    }
  }
  const created = await host.inject({ method: 'POST', url: tasks, payload: { title: 'a task' } })
  t.equal(created.statusCode, 201, 'without the hooks\' header, the route answers as ever')
  const invalid = await host.inject({ method: 'POST', url: tasks, payload: { title: 7 } })
  assertProblem(t, invalid, 422, 'VALIDATION_FAILED')
  t.same(invalid.json().errors, [{ path: '/body/title', message: 'must be string' }], 'plinth\'s own problem documents keep their members')
})

t.test('a host error handler\'s own problem document passes unchanged on a route documented with plinth\'s problems', async (t) => {
  const host = Fastify({ logger: false })
  t.teardown(() => host.close())
  await host.register(errorsPlugin)
  await host.register(async function boards (scope) {
    scope.setErrorHandler(async (error: { statusCode: number }, _request, reply) => reply.code(error.statusCode).type('application/problem+json').send(error.statusCode === 409 ? frozen : reserved))
    const schema = { response: { 200: { type: 'array' }, ...problemResponses(409, 422) } }
    scope.post('/host/boards', { schema }, async () => { throw Object.assign(new Error('reserved'), { statusCode: 422 }) })
    scope.delete('/host/boards', { schema }, async () => { throw Object.assign(new Error('frozen'), { statusCode: 409 }) })
  })
  for (const [method, sent] of [['POST', reserved], ['DELETE', frozen]] as const) {
    const res = await host.inject({ method, url: '/host/boards' })
    t.equal(res.statusCode, sent.status, method)
    t.equal(res.headers['content-type'], PROBLEM_TYPE, method)
    t.same(res.json(), sent, `${method}: the handler's body, member for member`)
  }
})
