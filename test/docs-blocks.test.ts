import { readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { TObject, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { eq, sql } from 'drizzle-orm'
import t from 'tap'
import { API_PREFIX } from '../app.js'
import { users } from '../db/schema.js'
import * as plinth from '../index.js'
import { ResourceOptionsSchema } from '../routes/resources/options.js'
import { ResourcesFileSchema } from '../settings/resources-file.js'
import { build, login, newAccount } from './support/app.js'
import { rowsOf } from './support/database.js'
import { TaskFields, createTask } from './support/tasks.js'
import { typecheck } from './support/typecheck.js'

// Every TypeScript block of docs/*.md compiles, strict, as a module of a user's app importing
// `plinth`: a block may be a fragment that uses `app` and plinth's exports without importing them,
// as the page around it does, and gets those imports and `const app = Fastify()` put before it.
// (The README's host app is compiled and run from the packed tarball by test/consumer.)

const docs = new URL('../docs/', import.meta.url)
const exported = Object.keys(plinth)

interface Block { name: string, code: string }

function blocksOf (file: string): Block[] {
  const text = readFileSync(new URL(file, docs), 'utf8')
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => {
    const line = text.slice(0, match.index).split('\n').length
    return { name: `${file.replace(/\.md$/, '')}-line-${line}.ts`, code: match[1]! }
  })
}

/** The names a block binds itself: its imports and its declarations. */
function boundIn (code: string): Set<string> {
  const named = [...code.matchAll(/^import\s+(?:type\s+)?\{([^}]*)\}/gm)].flatMap((match) =>
    match[1]!.split(',').map((part) => part.trim().replace(/^type\s+/, '').split(/\s+as\s+/).at(-1)!))
  const defaults = [...code.matchAll(/^import\s+(?:type\s+)?([A-Za-z_$][\w$]*)[\s,]/gm)].map((match) => match[1]!)
  const declared = [...code.matchAll(/\b(?:const|let|function|class)\s+([A-Za-z_$][\w$]*)/g)].map((match) => match[1]!)
  return new Set([...named, ...defaults, ...declared].filter(Boolean))
}

/** The block as a module: what it uses of plinth and of the page around it, then the block. */
function asModule (code: string): string {
  const bound = boundIn(code)
  const used = exported.filter((name) => !bound.has(name) && new RegExp(`\\b${name.replace('$', '\\$')}\\b`).test(code))
  const needsApp = !bound.has('app') && /\bapp\b/.test(code)
  return [
    needsApp && !bound.has('Fastify') ? "import Fastify from 'fastify'" : '',
    used.length > 0 ? `import { ${used.join(', ')} } from 'plinth'` : "import 'plinth'",
    needsApp ? 'const app = Fastify()' : '',
    code,
    'export {}'
  ].filter(Boolean).join('\n')
}

const blocks = readdirSync(docs).filter((file) => file.endsWith('.md')).flatMap(blocksOf)

t.test('every TypeScript block of docs/ compiles against plinth\'s types', async (t) => {
  t.ok(blocks.filter((block) => block.name.startsWith('plugins-')).length >= 7, 'docs/plugins.md has its blocks')
  // One that cannot compile, beside them: the check catches a block's error, and names its place.
  const broken = asModule("await app.register(resourcePlugin, { prefix: '/api/v1', name: 'notes', guard: 'open' })")
  const errors = await typecheck(t, { ...Object.fromEntries(blocks.map((block) => [block.name, asModule(block.code)])), 'broken.ts': broken })
  t.same(errors.filter((error) => !error.startsWith('broken.ts:')), [], 'no type error in any block')
  t.match(errors.filter((error) => error.startsWith('broken.ts:')), [/^broken\.ts:\d+:\d+: /], 'the broken one is caught')
})

t.test('as docs/plugins.md says, a resource with fields has six routes, and routes: { update: false } takes both PUT and PATCH', async (t) => {
  const app = await build(t, { RESOURCES: [] })
  await app.register(plinth.resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields })
  await app.register(plinth.resourcePlugin, { prefix: API_PREFIX, name: 'fixed', fields: TaskFields, routes: { update: false } })
  const has = (method: string, ...urls: string[]) => urls.some((url) => app.hasRoute({ method, url }))
  const routes = (name: string) => ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].flatMap((method) => [
    ...has(method, `${API_PREFIX}/${name}`, `${API_PREFIX}/${name}/`) ? [`${method} collection`] : [],
    ...has(method, `${API_PREFIX}/${name}/:${name}_id`) ? [`${method} row`] : []
  ])
  await app.ready()
  t.same(routes('tasks'), ['GET collection', 'GET row', 'POST collection', 'PUT row', 'PATCH row', 'DELETE row'])
  t.same(routes('fixed'), ['GET collection', 'GET row', 'POST collection', 'DELETE row'])
  const { id } = await createTask(app, { title: 'kept as it is' }, {}, `${API_PREFIX}/fixed/`)
  for (const method of ['PUT', 'PATCH'] as const) {
    t.equal((await app.inject({ method, url: `${API_PREFIX}/fixed/${id}`, payload: { title: 'changed' } })).statusCode, 404, method)
  }
})

const configuration = readFileSync(new URL('configuration.md', docs), 'utf8')
const fileResource = Object.values(ResourcesFileSchema.patternProperties)[0] as TObject
const optionSchemas = ResourceOptionsSchema.properties as Record<string, TSchema>

/** The rows of the first table after `marker` in `text`: each row's cells, code quotes taken off where a cell is one code span. */
function tableAfter (text: string, marker: string): string[][] {
  const lines = text.slice(text.indexOf(marker)).split('\n')
  const start = lines.findIndex((line) => line.startsWith('|'))
  const table = lines.slice(start, lines.findIndex((line, i) => i > start && !line.startsWith('|')))
  return table.slice(2).map((line) => line.slice(2, -2).split(' | ').map((cell) => cell.replace(/^`([^`]*)`$/, '$1')))
}

/** The blocks marked `<!-- resources-file: NAME -->` in configuration.md, by name. */
const resourcesFileBlocks = Object.fromEntries([...configuration.matchAll(/<!-- resources-file: (\S+) -->\n```\w+\n([\s\S]*?)^```$/gm)].map((match) => [match[1]!, match[2]!]))

t.test('docs/configuration.md lists every key a resource of RESOURCES_FILE takes, and no other, each with an example the server takes', async (t) => {
  const rows = tableAfter(configuration, '<!-- resources-file-keys -->')
  t.same(rows.map(([key]) => key).sort(), Object.keys(fileResource.properties).sort(), 'the keys the server accepts')
  for (const [key = '', fallback = '', example = ''] of rows) {
    const parsed = JSON.parse(`{${example}}`) as Record<string, unknown>
    t.same(Object.keys(parsed), [key], `${key}: its example sets it`)
    t.ok(Value.Check(fileResource.properties[key]!, parsed[key]), `${key}: the file's schema takes the example`)
    const option = optionSchemas[key]
    if (option !== undefined) t.ok(Value.Check(option, parsed[key]), `${key}: within the option's bounds`)
    if (option?.default !== undefined) t.equal(fallback, JSON.stringify(option.default), `${key}: the option's default`)
  }
})

t.test('the resources file of docs/configuration.md uses every key, and a server on it with its hooks module does what the keys say', async (t) => {
  t.same(Object.keys(resourcesFileBlocks).sort(), ['resources.json', 'tasks-hooks.js'])
  const file = JSON.parse(resourcesFileBlocks['resources.json']!) as Record<string, Record<string, unknown>>
  const used = new Set(Object.values(file).flatMap((resource) => Object.keys(resource)))
  t.same([...used].sort(), Object.keys(fileResource.properties).sort(), 'every key, in one resource or another')

  const dir = await mkdtemp('/tmp/plinth-docs-blocks-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  for (const [name, text] of Object.entries(resourcesFileBlocks)) await writeFile(join(dir, name), text)
  await writeFile(join(dir, 'package.json'), '{ "type": "module" }')
  const app = await build(t, { RESOURCES: [], RESOURCES_FILE: join(dir, 'resources.json') })
  const { user, email } = await newAccount(app)
  await app.plinthDb.db.update(users).set({ scopes: 'me,tasks:write' }).where(eq(users.id, user.id))
  const writer = await login(app, email)
  const other = await newAccount(app)
  const post = (url: string, payload: unknown, headers = writer.headers) => app.inject({ method: 'POST', url: `${API_PREFIX}/${url}`, headers, payload: payload as object })
  const get = (url: string, headers: Record<string, string> = writer.headers) => app.inject({ method: 'GET', url: `${API_PREFIX}/${url}`, headers })

  const project = await post('projects/', { name: 'Plinth', code: 'PLN' })
  t.equal(project.statusCode, 201, 'owner: a signed-in user creates a project')
  t.equal((await post('projects/', { name: 'Mine too', code: 'PLN' }, other.session.headers)).json().code, 'RESOURCE_CONFLICT', 'unique, global: another owner\'s code')
  t.notOk(app.hasRoute({ method: 'GET', url: `${API_PREFIX}/projects/events` }), 'routes: events off')
  t.ok(app.hasRoute({ method: 'GET', url: `${API_PREFIX}/tasks/events` }), 'and on where not switched off')

  const task = { title: 'Write the docs', slug: 'docs', body: 'every key of the file', project_id: project.json().id }
  const created = await post('tasks/', task)
  t.equal(created.statusCode, 201)
  t.equal(created.json().created_by_hook, true, 'hooks: the module\'s beforeCreate ran')
  t.equal((await post('tasks/', task, other.session.headers)).json().code, 'AUTH_INSUFFICIENT_SCOPE', 'guards: writes need the scope')
  t.equal((await get('tasks/', {})).statusCode, 401, 'guards: reads need a signed-in user')
  t.equal((await post('tasks/', { ...task, title: 'Another' })).json().code, 'RESOURCE_CONFLICT', 'unique: the slug')
  t.equal((await post('tasks/', { ...task, slug: 'again' })).json().code, 'RESOURCE_CONFLICT', 'unique: the project and the title together')
  t.same((await get('tasks/?q=key')).json().map((row: { slug: string }) => row.slug), ['docs'], 'search: the body')
  t.same((await get('tasks/', other.session.headers)).json(), [], 'owner: another user sees none of them')
  t.equal((await app.inject({ method: 'DELETE', url: `${API_PREFIX}/tasks/${created.json().id}`, headers: writer.headers })).statusCode, 404, 'routes: no delete')

  const bulk = (n: number) => Array.from({ length: n }, (_, i) => ({ ...task, title: `bulk ${i}`, slug: `bulk-${i}` }))
  t.equal((await post('tasks/', bulk(501))).statusCode, 422, 'maxBatch: 501 rows are too many')
  t.equal((await post('tasks/', bulk(60))).statusCode, 201, 'a batch within maxBatch')
  t.equal((await get('tasks/')).json().length, 50, 'defaultLimit')
  const [row] = rowsOf<{ n: number }>(await app.plinthDb.db.execute(sql`select count(*)::int as n from project_tasks`))
  t.equal(row?.n, 61, 'table: the rows are in project_tasks')
})

t.test('docs/plugins.md\'s table of resourcePlugin options lists every option, and no other', async (t) => {
  const plugins = readFileSync(new URL('plugins.md', docs), 'utf8')
  const rows = tableAfter(plugins, '## `resourcePlugin`: the resource generator\n').map(([option]) => option)
  // The options that are functions or TypeBox objects, which the option schema leaves to the type.
  const typed = ['fields', 'guard', 'guards', 'hooks']
  t.same(rows.sort(), [...Object.keys(optionSchemas), ...typed].sort())
})

t.test('docs/plugins.md\'s entry points name every export of plinth but the plugins and their options', async (t) => {
  const plugins = readFileSync(new URL('plugins.md', docs), 'utf8')
  const row = plugins.split('\n').find((line) => line.startsWith('| `plinth` |')) ?? ''
  const index = readFileSync(new URL('../index.ts', import.meta.url), 'utf8')
  const names = [...index.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm)].flatMap((match) => match[1]!.split(','))
    .map((part) => part.trim().replace(/^type\s+/, '').split(/\s+as\s+/).at(-1)!).filter(Boolean)
  t.ok(names.includes('Reference'), 'index.ts read')
  t.same(names.filter((name) => !/(Plugin|OptionsSchema|Options)$/.test(name) && !row.includes(`\`${name}\``)), [])
})

t.test('the docs say as many migrations as db/migrations holds, wherever they print the count', async (t) => {
  const journal = JSON.parse(readFileSync(new URL('../db/migrations/meta/_journal.json', import.meta.url), 'utf8')) as { entries: unknown[] }
  const said = readdirSync(docs).filter((file) => file.endsWith('.md')).flatMap((file) =>
    [...readFileSync(new URL(file, docs), 'utf8').matchAll(/\b(\d+) migrations\b/g)].map((match) => `${file}: ${match[1]}`))
  t.ok(said.length >= 3, 'the walk-throughs print it')
  t.same(said.filter((entry) => !entry.endsWith(`: ${journal.entries.length}`)), [], `${journal.entries.length} migrations`)
})
