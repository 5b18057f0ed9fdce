import { readdirSync, readFileSync } from 'node:fs'
import t from 'tap'
import { API_PREFIX } from '../app.js'
import * as plinth from '../index.js'
import { build } from './support/app.js'
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
