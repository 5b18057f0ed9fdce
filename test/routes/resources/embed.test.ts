import { trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { Type } from '@sinclair/typebox'
import { eq, sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { App } from '../../../app.js'
import { problemError } from '../../../http/problems.js'
import { users } from '../../../db/schema.js'
import { enableQueryTracing } from '../../../db/tracing.js'
import { resourcePlugin, type ResourceOptions } from '../../../index.js'
import { Reference } from '../../../schemas/fields.js'
import { login, newAccount, register, superuser } from '../../support/app.js'
import { buildResources } from '../../support/resources.js'

const API = '/api/v1'

const ProjectFields = Type.Object({
  name: Type.String(),
  code: Type.Optional(Type.String({ writeOnly: true }))
})

const TaskFields = Type.Object({
  title: Type.String(),
  status: Type.Union([Type.Literal('open'), Type.Literal('done')], { default: 'open' }),
  priority: Type.Integer({ default: 1 }),
  secret: Type.Optional(Type.String({ writeOnly: true })),
  project_id: Type.Optional(Reference('projects', { onDelete: 'cascade' }))
})

type Json = Record<string, unknown>

/** The app with public projects and owners' tasks that reference them, and two accounts. */
async function projectsAndTasks (t: Test, more: Array<string | ResourceOptions> = []) {
  const app = await buildResources(t, [
    { name: 'projects', fields: ProjectFields },
    { name: 'tasks', fields: TaskFields, owner: true, defaultLimit: 2, maxLimit: 3 },
    ...more
  ])
  const ada = await newAccount(app)
  const bob = await newAccount(app)
  return { app, ada, bob }
}

async function post (app: App, name: string, payload: Json, headers: Record<string, string> = {}): Promise<Json> {
  const res = await app.inject({ method: 'POST', url: `${API}/${name}/`, payload, headers })
  if (res.statusCode !== 201) throw new Error(`POST ${name}: ${res.statusCode} ${res.payload}`)
  return res.json()
}

const get = (app: App, url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: `${API}${url}`, headers })

const titles = (rows: Json[]) => rows.map((row) => row.title)

t.test('embed=project puts the referenced row inline, as its own GET shows it, on lists and on one row', async (t) => {
  const { app, ada } = await projectsAndTasks(t)
  const project = await post(app, 'projects', { name: 'Apollo', code: 'c-1' })
  const linked = await post(app, 'tasks', { title: 'linked', project_id: project.id }, ada.session.headers)
  const loose = await post(app, 'tasks', { title: 'loose' }, ada.session.headers)
  const shown = (await get(app, `/projects/${project.id as number}`)).json()
  t.notOk('code' in shown, 'the project\'s own GET has no writeOnly field')

  const list = await get(app, '/tasks/?embed=project', ada.session.headers)
  t.equal(list.statusCode, 200)
  t.strictSame(list.json(), [{ ...linked, project: shown }, { ...loose, project: null }], 'exactly the project as its GET shows it; no reference, null')

  const one = await get(app, `/tasks/${linked.id as number}?embed=project`, ada.session.headers)
  t.equal(one.statusCode, 200)
  t.strictSame(one.json(), { ...linked, project: shown })
  t.notOk(one.headers.etag, 'no ETag: the embedded row changes without the row\'s version')
  t.ok((await get(app, `/tasks/${linked.id as number}`, ada.session.headers)).headers.etag, 'without embed, the row\'s ETag as ever')

  t.same((await get(app, '/tasks/?embed=', ada.session.headers)).json().map((row: Json) => 'project' in row), [false, false], 'an empty embed embeds nothing')
})

t.test('embed=tasks puts the referencing rows inline, bounded, sorted and filtered with the tasks\' own parameters', async (t) => {
  const { app, ada } = await projectsAndTasks(t)
  const apollo = await post(app, 'projects', { name: 'Apollo' })
  const gemini = await post(app, 'projects', { name: 'Gemini' })
  for (const [title, priority, status] of [['a1', 1, 'open'], ['a2', 3, 'done'], ['a3', 2, 'open'], ['a4', 5, 'open']] as const) {
    await post(app, 'tasks', { title, priority, status, project_id: apollo.id, secret: 's' }, ada.session.headers)
  }
  const headers = ada.session.headers
  const embedded = async (query: string) => {
    const res = await get(app, `/projects/?embed=tasks${query}`, headers)
    t.equal(res.statusCode, 200, query)
    return res.json().map((project: Json) => titles(project.tasks as Json[]))
  }
  t.same(await embedded(''), [['a1', 'a2'], []], 'the tasks\' defaultLimit, in id order; none is []')
  t.same(await embedded('&tasks.limit=50'), [['a1', 'a2', 'a3'], []], 'a limit is reduced to the tasks\' maxLimit')
  t.same(await embedded('&tasks.sort=-priority'), [['a4', 'a2'], []])
  t.same(await embedded('&tasks.status=open&tasks.limit=3'), [['a1', 'a3', 'a4'], []])
  t.same(await embedded('&tasks.priority[gte]=2&tasks.sort=priority'), [['a3', 'a2'], []])
  t.same(await embedded('&tasks.status[in]=done&tasks.title[contains]=A'), [['a2'], []])
  t.same(await embedded('&tasks.status[ne]=open&tasks.sort=-id'), [['a2'], []])

  const tasks = (await get(app, `/projects/${apollo.id as number}?embed=tasks&tasks.limit=1`, headers)).json().tasks
  t.equal(tasks.length, 1)
  t.strictSame(tasks[0], (await get(app, `/tasks/${tasks[0].id as number}`, headers)).json(), 'each as its own GET shows it')
  t.notOk('secret' in tasks[0], 'never a writeOnly field')
  t.same((await get(app, `/projects/${gemini.id as number}?embed=tasks`, headers)).json().tasks, [])
})

t.test('two references to one resource name their reverse embeds by field', async (t) => {
  const app = await buildResources(t, [
    { name: 'projects', fields: ProjectFields },
    {
      name: 'handovers',
      fields: Type.Object({ note: Type.String(), from_project_id: Reference('projects'), to_project_id: Reference('projects') })
    }
  ])
  const [a, b] = [await post(app, 'projects', { name: 'A' }), await post(app, 'projects', { name: 'B' })]
  await post(app, 'handovers', { note: 'a to b', from_project_id: a.id, to_project_id: b.id })
  const res = await get(app, `/projects/${a.id as number}?embed=handovers_by_from_project,handovers_by_to_project,handovers_by_from_project`)
  t.equal(res.statusCode, 200)
  t.same(res.json().handovers_by_from_project.map((row: Json) => row.note), ['a to b'])
  t.same(res.json().handovers_by_to_project, [])
  const plain = await get(app, `/projects/${a.id as number}?embed=handovers`)
  t.equal(plain.statusCode, 422)
  t.match(plain.json().detail, /^\/querystring\/embed names "handovers", which is not an embed of projects: embeds are handovers_by_from_project, handovers_by_to_project$/)
  const forward = (await get(app, '/handovers/?embed=from_project,to_project')).json()[0]
  t.same([forward.from_project.name, forward.to_project.name], ['A', 'B'])
})

t.test('a resource that references itself embeds its parent and its children', async (t) => {
  const app = await buildResources(t, [{ name: 'categories', fields: Type.Object({ label: Type.String(), parent_id: Type.Optional(Reference('categories')) }) }])
  const root = await post(app, 'categories', { label: 'root' })
  const leaf = await post(app, 'categories', { label: 'leaf', parent_id: root.id })
  const [first, second] = (await get(app, '/categories/?embed=parent,categories')).json()
  t.strictSame(first, { ...root, parent: null, categories: [leaf] })
  t.strictSame(second, { ...leaf, parent: root, categories: [] })
})

t.test('bad embeds and embed parameters are 422s naming the parameter', async (t) => {
  const { app, ada } = await projectsAndTasks(t)
  const cases: Array<[string, string, string | RegExp]> = [
    ['/projects/?embed=owners', '/querystring/embed', 'names "owners", which is not an embed of projects: embeds are tasks'],
    ['/tasks/?embed=project,owner', '/querystring/embed', 'names "owner", which is not an embed of tasks: embeds are project'],
    ['/projects/?embed=tasks&tasks.colour=red', '/querystring/tasks.colour', /is not a filter: the fields are id, created_at/],
    ['/projects/?embed=tasks&tasks.priority[contains]=2', '/querystring/tasks.priority[contains]', /is not a filter: priority \(integer\) takes/],
    ['/projects/?embed=tasks&tasks.limit=0', '/querystring/tasks.limit', 'must be >= 1'],
    ['/projects/?embed=tasks&tasks.priority=high', '/querystring/tasks.priority', 'must be integer'],
    ['/projects/?embed=tasks&tasks.status=closed', '/querystring/tasks.status', /must be equal to one of the allowed values/],
    ['/projects/?embed=tasks&tasks.sort=colour', '/querystring/tasks.sort', /cannot sort by "colour"/],
    ['/projects/?embed=tasks&tasks.offset=2', '/querystring/tasks.offset', 'is not a parameter: an embedded list takes tasks.limit, tasks.sort and the filters of tasks'],
    ['/projects/?tasks.status=open', '/querystring/tasks.status', 'shapes the embed tasks, which embed does not ask for'],
    ['/projects/?embed=tasks&other.limit=1', '/querystring/other.limit', /other is not one of its embeds/],
    ['/tasks/?embed=project&project.limit=1', '/querystring/project.limit', 'is not a parameter: project is one row, which takes none'],
    ['/projects/1?embed=tasks&tasks.__proto__=x', '/querystring/tasks.__proto__', /is not a filter/]
  ]
  for (const [url, path, message] of cases) {
    const res = await get(app, url, ada.session.headers)
    t.equal(res.statusCode, 422, url)
    t.equal(res.json().errors[0].path, path, url)
    t.match(res.json().errors[0].message, message, url)
  }
})

t.test('attack: another owner\'s tasks through embed=tasks on a public project', async (t) => {
  const { app, ada, bob } = await projectsAndTasks(t)
  const project = await post(app, 'projects', { name: 'shared' })
  await post(app, 'tasks', { title: 'ada\'s', project_id: project.id }, ada.session.headers)
  await post(app, 'tasks', { title: 'bob\'s', project_id: project.id }, bob.session.headers)
  const url = `/projects/${project.id as number}?embed=tasks`
  t.same(titles((await get(app, url, bob.session.headers)).json().tasks), ['bob\'s'], 'bob sees his own tasks only')
  t.same(titles((await get(app, `/projects/?embed=tasks&tasks.owner_id=${ada.user.id}`, bob.session.headers)).json()[0].tasks), [], 'filtering by ada finds nothing')
  const anonymous = await get(app, url)
  t.equal(anonymous.statusCode, 401, 'anonymous: the tasks\' guard answers')
  t.equal(anonymous.json().code, 'AUTH_NOT_AUTHENTICATED')
  t.equal((await get(app, '/projects/')).statusCode, 200, 'the projects themselves stay public')
  const root = await superuser(app, 'root-embed@example.com')
  t.same(titles((await get(app, url, root.session.headers)).json().tasks), ['ada\'s', 'bob\'s'], 'a superuser sees every task')

  // Identical lists asked at once share a result: two owners' must not.
  const [adas, bobs] = await Promise.all([get(app, url, ada.session.headers), get(app, url, bob.session.headers)])
  t.same([titles(adas.json().tasks), titles(bobs.json().tasks)], [['ada\'s'], ['bob\'s']], 'concurrent owners each get their own')
})

t.test('attack: another owner\'s row through a forward embed is null', async (t) => {
  const { app, ada, bob } = await projectsAndTasks(t, [
    { name: 'notes', owner: true, fields: Type.Object({ text: Type.String(), task_id: Type.Optional(Reference('tasks')) }) }
  ])
  const bobs = await post(app, 'tasks', { title: 'bob\'s secret plan' }, bob.session.headers)
  const adas = await post(app, 'tasks', { title: 'ada\'s' }, ada.session.headers)
  const note = await post(app, 'notes', { text: 'mine', task_id: adas.id }, ada.session.headers)
  // Written behind the API's back, as a row from before the owner check would be.
  await app.plinthDb.db.execute(sql`update notes set task_id = ${bobs.id as number} where id = ${note.id as number}`)
  const res = await get(app, `/notes/${note.id as number}?embed=task`, ada.session.headers)
  t.equal(res.statusCode, 200)
  t.equal(res.json().task, null, 'bob\'s task is not shown to ada')
  t.equal((await get(app, '/notes/?embed=task', ada.session.headers)).json()[0].task, null)
})

t.test('attack: a writeOnly field through an embed, or guessed by filtering or sorting on it', async (t) => {
  const { app, ada } = await projectsAndTasks(t)
  const project = await post(app, 'projects', { name: 'p', code: 'launch-code' })
  await post(app, 'tasks', { title: 't', secret: 'hunter2', project_id: project.id }, ada.session.headers)
  const down = await get(app, '/tasks/?embed=project', ada.session.headers)
  t.notOk(down.payload.includes('launch-code'), 'the project\'s writeOnly code is not in the task\'s embed')
  const up = await get(app, '/projects/?embed=tasks', ada.session.headers)
  t.notOk(up.payload.includes('hunter2'), 'the task\'s writeOnly secret is not in the project\'s embed')
  for (const query of ['tasks.secret=hunter2', 'tasks.secret[contains]=hunt', 'tasks.secret[is]=null', 'tasks.sort=secret']) {
    const res = await get(app, `/projects/?embed=tasks&${query}`, ada.session.headers)
    t.equal(res.statusCode, 422, query)
    t.match(res.json().detail, /^\/querystring\/tasks\.(secret|sort)/, query)
  }
})

t.test('attack: a scope-guarded resource through an embed without the scope', async (t) => {
  const app = await buildResources(t, [{ name: 'projects', fields: ProjectFields }])
  await app.register(resourcePlugin, {
    prefix: API,
    name: 'audits',
    fields: Type.Object({ entry: Type.String(), project_id: Reference('projects') }),
    guards: { read: app.requireScopes('audits:read'), write: app.requireScopes('audits:read') }
  })
  const auditor = await register(app, 'auditor@example.com')
  await app.plinthDb.db.update(users).set({ scopes: 'me,audits:read' }).where(eq(users.id, auditor.id))
  const { headers } = await login(app, 'auditor@example.com')
  const project = await post(app, 'projects', { name: 'p' })
  await post(app, 'audits', { entry: 'moved money', project_id: project.id }, headers)
  const url = `/projects/${project.id as number}?embed=audits`
  const someone = await newAccount(app)

  const anonymous = await get(app, url)
  t.equal(anonymous.statusCode, 401)
  const unscoped = await get(app, url, someone.session.headers)
  t.equal(unscoped.statusCode, 403, 'a token without the scope is refused, not given an empty list')
  t.equal(unscoped.json().code, 'AUTH_INSUFFICIENT_SCOPE')
  t.notOk(unscoped.payload.includes('moved money'))
  t.equal((await get(app, '/projects/?embed=audits&audits.entry=x', someone.session.headers)).statusCode, 403, 'the guard answers before the parameters are read')
  t.same((await get(app, url, headers)).json().audits.map((row: Json) => row.entry), ['moved money'], 'with the scope, the audits are there')
  t.equal((await get(app, `/projects/${project.id as number}`)).statusCode, 200, 'without embed the project stays public')
})

t.test('a host guard written with a callback guards the embed as it guards its own routes', async (t) => {
  const keyed = function keyed (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) {
    done(request.headers['x-key'] === 'open sesame' ? undefined : problemError(403, 'TEST_NO_KEY', 'the vault needs its key'))
  }
  const app = await buildResources(t, [
    { name: 'projects', fields: ProjectFields },
    { name: 'vault', fields: Type.Object({ item: Type.String(), project_id: Reference('projects') }), guards: { read: keyed as never } }
  ])
  const project = await post(app, 'projects', { name: 'p' })
  await app.plinthDb.db.execute(sql`insert into vault (item, project_id) values ('gold', ${project.id as number})`)
  const refused = await get(app, '/projects/?embed=vault')
  t.equal(refused.statusCode, 403)
  t.equal(refused.json().detail, 'the vault needs its key')
  t.same((await get(app, '/projects/?embed=vault', { 'x-key': 'open sesame' })).json()[0].vault.map((row: Json) => row.item), ['gold'])
})

t.test('the next page\'s Link keeps the embeds', async (t) => {
  const { app, ada } = await projectsAndTasks(t)
  const project = await post(app, 'projects', { name: 'p' })
  for (const title of ['one', 'two']) await post(app, 'tasks', { title, project_id: project.id }, ada.session.headers)
  const first = await get(app, '/tasks/?limit=1&embed=project', ada.session.headers)
  const next = /<\/api\/v1([^>]+)>; rel="next"/.exec(String(first.headers.link))?.[1]
  t.match(next, /embed=project/)
  const second = (await get(app, next!, ada.session.headers)).json()
  t.same(second.map((row: Json) => [row.title, (row.project as Json).name]), [['two', 'p']])
})

t.test('a resource without a list or a get route cannot be embedded', async (t) => {
  const app = await buildResources(t, [
    { name: 'projects', fields: ProjectFields },
    { name: 'ledger', fields: Type.Object({ amount: Type.Integer(), project_id: Reference('projects') }), routes: { list: false, get: false } },
    { name: 'jobs', fields: Type.Object({ ledger_id: Type.Optional(Reference('ledger')) }) }
  ])
  const res = await get(app, '/projects/?embed=ledger')
  t.equal(res.statusCode, 422)
  t.equal(res.json().detail, '/querystring/embed names "ledger", but projects has no embeds')
  t.equal((await get(app, '/jobs/?embed=ledger')).statusCode, 422)
})

/** Spans of the statements run from now until `finished()`. */
function statements () {
  const exporter = new InMemorySpanExporter()
  const processor = new SimpleSpanProcessor(exporter)
  const provider = new BasicTracerProvider({ spanProcessors: [processor] })
  trace.setGlobalTracerProvider(provider)
  enableQueryTracing()
  return {
    async during (run: () => Promise<unknown>): Promise<string[]> {
      await processor.forceFlush()
      exporter.reset()
      await run()
      await processor.forceFlush()
      return exporter.getFinishedSpans().map((span) => String(span.attributes['db.query.text']))
    },
    async stop () {
      enableQueryTracing(false)
      trace.disable()
      await provider.shutdown()
    }
  }
}

t.test('no N+1: a page with embeds is one statement, however many rows it has', async (t) => {
  const app = await buildResources(t, [
    { name: 'projects', fields: ProjectFields },
    { name: 'tasks', fields: TaskFields, maxLimit: 100 }
  ])
  const projects: Json[] = []
  for (let i = 0; i < 20; i++) projects.push(await post(app, 'projects', { name: `p${i}` }))
  for (let i = 0; i < 40; i++) await post(app, 'tasks', { title: `t${i}`, project_id: projects[i % 20]!.id })
  const traced = statements()
  t.teardown(() => traced.stop())

  for (const [url, rows] of [['/tasks/?limit=1', 1], ['/tasks/?limit=40', 40], ['/projects/?limit=20', 20]] as const) {
    const plain = await traced.during(() => get(app, url))
    const embed = url.startsWith('/tasks') ? 'project' : 'tasks&tasks.status=open&tasks.limit=5'
    let body: Json[] = []
    const embedded = await traced.during(async () => { body = (await get(app, `${url}&embed=${embed}`)).json() })
    t.equal(body.length, rows)
    t.equal(plain.length, 1, `${url}: one statement`)
    t.equal(embedded.length, 1, `${url} with embed=${embed}: still one statement`)
    t.match(embedded[0], /^select /)
  }
  const one = await traced.during(() => get(app, `/projects/${projects[0]!.id as number}?embed=tasks`))
  t.equal(one.length, 1, 'one row with embeds: one statement')
})

t.test('the document shows the embeds: the parameter, each embedded list\'s limit and sort, and the rows inline', async (t) => {
  const { app } = await projectsAndTasks(t, ['records'])
  const document = (await app.inject({ method: 'GET', url: '/docs/json' })).json()
  const parameters = (path: string) => Object.fromEntries(document.paths[path].get.parameters.map((each: Json) => [each.name, each]))
  const projects = parameters('/api/v1/projects')
  t.match(projects.embed.schema, { type: 'string' })
  t.match(projects.embed.description, /`tasks`: the tasks rows whose `project_id` is this row's id \(`tasks.limit`, default 2, at most 3/)
  t.match(projects['tasks.limit'].schema, { type: 'integer', minimum: 1, default: 2 })
  t.ok(projects['tasks.sort'])
  t.match(parameters('/api/v1/projects/{projects_id}').embed.description, /`tasks`/)
  t.match(parameters('/api/v1/tasks').embed.description, /`project`: the projects row `project_id` references, or null/)
  const listed = document.paths['/api/v1/projects'].get
  t.match(listed.responses[200].content['application/json'].schema.items.allOf, [
    { $ref: '#/components/schemas/ProjectsRecord' },
    { properties: { tasks: { type: 'array', items: { $ref: '#/components/schemas/TasksRecord' } } } }
  ])
  t.ok(listed.responses[401] && listed.responses[403], 'the tasks\' guard may refuse a project list that embeds them')
  t.same(listed.security, [{}, { OAuth2PasswordBearer: [] }], 'a token is optional, and needed for the embeds that need one')
  const one = document.paths['/api/v1/tasks/{tasks_id}'].get.responses[200].content['application/json'].schema
  t.match(one.allOf[1].properties.project, { anyOf: [{ $ref: '#/components/schemas/ProjectsRecord' }, { type: 'null' }] })
  t.notOk(parameters('/api/v1/records').embed, 'the records preset has no embeds')
})
