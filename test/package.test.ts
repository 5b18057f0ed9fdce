import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import * as dbSource from '../db/index.js'
import * as source from '../index.js'
import * as schemasSource from '../schemas/index.js'
import * as telemetrySource from '../telemetry/index.js'

// What a user installs is dist/, reached through package.json "exports"; `npm ci` builds it.
const root = new URL('../', import.meta.url)
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))

t.test('the package name resolves to the built entry point, with the same exports as index.ts', async (t) => {
  t.equal(pkg.exports['.'].default, './dist/index.js')
  t.equal(pkg.exports['.'].types, './dist/index.d.ts')
  t.ok(existsSync(new URL('dist/index.d.ts', root)), 'type declarations are built (npm run build)')
  // By name, as a user imports it (Node resolves a package's own name through its exports).
  const built = await import(pkg.name) as Record<string, unknown>
  t.same(Object.keys(built).sort(), Object.keys(source).sort(), 'dist is current: run npm run build after changing the source')
  for (const name of ['buildApp', 'dbPlugin', 'authPlugin', 'accountsPlugin', 'catalogPlugin', 'resourcePlugin', 'healthPlugin', 'docsPlugin', 'errorsPlugin']) {
    t.type(built[name], 'function', name)
  }
})

// Each name of the main entry is a semver promise: adding one is a decision, so it is listed here.
const MAIN_VALUES = [
  'API_PREFIX', 'AccountsOptionsSchema', 'AuthOptionsSchema', 'CatalogOptionsSchema', 'ConfigError', 'ConfigSchema', 'CorsOptionsSchema',
  'DocsOptionsSchema', 'EtagsOptionsSchema', 'OverloadOptionsSchema', 'ROUTE_NAMES', 'RecordNotFound', 'ResourceNotRegistered',
  'ResourceOptionsSchema', 'TokenError', 'WellKnownOptionsSchema', 'accountsPlugin', 'authPlugin', 'buildApp', 'catalogPlugin',
  'conflictError', 'corsPlugin', 'createItemRepository', 'createRepository', 'dbPlugin', 'docsPlugin', 'errorsPlugin',
  'etagsPlugin', 'forbiddenError', 'guardsOf', 'healthPlugin', 'loadConfig', 'metricsPlugin', 'metricsServer', 'neverShed',
  'notFoundError', 'overloadPlugin', 'problem', 'problemError', 'readResourcesFile', 'resolveConfig', 'resourcePlugin',
  'resourceTable', 'securityPlugin', 'validationError', 'wellKnownPlugin', 'defineResource', 'loadResourceHooks', 'resourceHooks',
  'Reference', 'changesPlugin', 'ChangesOptionsSchema', 'requestLogSerializer'
]

t.test('the main entry holds what a host registers, configures and throws, and nothing lower-level', async (t) => {
  t.same(Object.keys(source).sort(), [...MAIN_VALUES].sort())
})

/** The subpaths of package.json "exports" and the source entry each is built from. */
const SUBPATHS = [
  ['./schemas', 'schemas', schemasSource],
  ['./db', 'db', dbSource],
  ['./telemetry', 'telemetry', telemetrySource]
] as const

t.test('package.json "exports" lists the main entry, the subpaths, the client and the manifest, nothing else', async (t) => {
  t.same(Object.keys(pkg.exports), ['.', './schemas', './db', './telemetry', './client', './package.json'])
})

t.test('each subpath resolves by name to its built entry, with the same exports as its source', async (t) => {
  for (const [subpath, dir, entry] of SUBPATHS) {
    t.same(pkg.exports[subpath], { types: `./dist/${dir}/index.d.ts`, default: `./dist/${dir}/index.js` }, subpath)
    t.ok(existsSync(new URL(`dist/${dir}/index.d.ts`, root)), `${subpath}: its declarations are built`)
    const built = await import(`${pkg.name}/${dir}`) as Record<string, unknown>
    t.same(Object.keys(built).sort(), Object.keys(entry).sort(), `${subpath}: dist is current`)
  }
  const db = await import(`${pkg.name}/db`) as Record<string, unknown>
  for (const name of ['connect', 'createTables', 'ensureResourceTable', 'resourceTableDdl', 'rowsOf']) t.type(db[name], 'function', `plinth/db ${name}`)
  t.type(db.tables, 'object', 'plinth/db tables')
  const schemas = await import(`${pkg.name}/schemas`) as Record<string, unknown>
  for (const name of ['ItemSchema', 'UserSchema', 'ProblemSchema']) t.type(schemas[name], 'object', `plinth/schemas ${name}`)
  const telemetry = await import(`${pkg.name}/telemetry`) as Record<string, unknown>
  t.type(telemetry.startTracing, 'function', 'plinth/telemetry startTracing')
})

t.test('the declarations type every profile plugin, its options, the guards and the schemas\' static types', async (t) => {
  const declarations = (path: string) => readFileSync(new URL(`dist/${path}`, root), 'utf8')
  const index = declarations('index.d.ts')
  for (const name of ['resourcePlugin', 'ResourceOptions', 'accountsPlugin', 'AccountsOptions', 'catalogPlugin', 'CatalogOptions', 'Config',
    'Guard', 'PlinthGuards', 'PlinthAccount', 'ResourceRow']) {
    t.match(index, new RegExp(`\\b${name}\\b`), name)
  }
  const schemas = declarations('schemas/index.d.ts')
  for (const [module, name] of [['record', 'RecordCreate'], ['item', 'ItemCreate'], ['user', 'User']] as const) {
    t.match(schemas, `export * from './${module}.js'`)
    t.match(declarations(`schemas/${module}.d.ts`), new RegExp(`export type ${name} =`), name)
  }
})

t.test('plinth/client resolves to the generated OpenAPI types', async (t) => {
  t.same(pkg.exports['./client'], { types: './dist/client/schema.d.ts', default: './dist/client/schema.js' })
  t.match(readFileSync(new URL('dist/client/schema.d.ts', root), 'utf8'), /export interface paths \{/)
  await t.resolves(import(`${pkg.name}/client`), 'importable by name')
})

// What `npm publish` would ship from the current dist/ (no scripts: this test never builds).
async function packedFiles () {
  const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: fileURLToPath(root) })
  const [packed] = JSON.parse(stdout) as [{ files: Array<{ path: string }> }]
  return packed.files.map((file) => file.path)
}

t.test('the tarball holds the product only: compiled JavaScript, declarations and migrations', async (t) => {
  const files = await packedFiles()
  const migrations = readdirSync(new URL('db/migrations', root)).filter((name) => name.endsWith('.sql'))
  t.ok(migrations.length > 0, 'there are migrations to ship')
  const expected = ['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts', 'dist/cli/index.js', 'dist/server.js',
    ...SUBPATHS.flatMap(([, dir]) => [`dist/${dir}/index.js`, `dist/${dir}/index.d.ts`]), 'dist/client/schema.d.ts', 'dist/db/migrations/meta/_journal.json', ...migrations.map((name) => `dist/db/migrations/${name}`)]
  for (const file of expected) t.ok(files.includes(file), file)
  const product = (file: string) => ['package.json', 'README.md', 'LICENSE'].includes(file) ||
    /^dist\/.+\.(js|d\.ts)$/.test(file) || file.startsWith('dist/db/migrations/')
  t.same(files.filter((file) => !product(file)), [], 'nothing but package.json, README.md, LICENSE and dist/')
  t.same(files.filter((file) => /^(dist\/)?(bench|test|scripts|build)\/|\.map$|tsbuildinfo|generate/.test(file)), [],
    'no bench, tests, scripts, source maps, build info or client generator')
})

t.test('the published manifest has no script for npm to run at install, and none naming the unshipped scripts/', async (t) => {
  // What npm 11 lists for allowScripts at an install: a package with none installs silently.
  const install = ['preinstall', 'install', 'postinstall', 'prepublish', 'preprepare', 'prepare', 'postprepare']
  t.same(install.filter((name) => pkg.scripts[name] !== undefined), [], 'no install lifecycle script')
  t.notOk((await packedFiles()).some((file) => file.startsWith('scripts/')), 'scripts/ is not shipped')
  for (const [name, script] of Object.entries(pkg.scripts as Record<string, string>)) {
    t.notMatch(script, /(^|[\s"'])scripts\//, `${name} runs no file of scripts/`)
  }
})

t.test('npm ci && npm start on a fresh clone builds dist/ first, and a built one is not built again', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plinth-fresh-clone-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // The repository's own start and pretest hooks, with a build that records each run instead of compiling.
  const build = 'node -e "const fs = require(\'node:fs\'); fs.mkdirSync(\'dist\', { recursive: true }); fs.writeFileSync(\'dist/server.js\', \'console.log(1)\'); fs.appendFileSync(\'builds\', \'x\')"'
  await writeFile(join(dir, 'package.json'), JSON.stringify({
    name: 'fresh-clone', private: true, scripts: { prestart: pkg.scripts.prestart, start: 'node dist/server.js', pretest: pkg.scripts.pretest, test: 'node dist/server.js', build }
  }))
  const npm = (script: string) => promisify(execFile)('npm', [script, '--silent'], { cwd: dir })
  const builds = () => readFile(join(dir, 'builds'), 'utf8').catch(() => '')
  t.equal((await npm('start')).stdout.trim(), '1', 'npm start on a fresh clone: built, then started')
  t.equal(await builds(), 'x', 'one build')
  t.equal((await npm('start')).stdout.trim(), '1')
  t.equal((await npm('test')).stdout.trim(), '1')
  t.equal(await builds(), 'x', 'dist/ there: no build again')
  await rm(join(dir, 'dist'), { recursive: true })
  t.equal((await npm('test')).stdout.trim(), '1', 'npm test builds a missing dist/ too')
  t.equal(await builds(), 'xx')
})

t.test('the tarball\'s bin is a script node can run', async (t) => {
  const bin = (pkg.bin.plinth as string).replace(/^\.\//, '')
  t.equal(bin, 'dist/cli/index.js')
  t.ok((await packedFiles()).includes(bin), 'shipped')
  t.match(readFileSync(new URL(bin, root), 'utf8').split('\n')[0], /^#!\/usr\/bin\/env node$/, 'with a shebang')
})

t.test('fastify and TypeBox are the host\'s (peers), PGlite an optional peer, none of them a dependency', async (t) => {
  for (const name of ['fastify', '@sinclair/typebox']) {
    t.ok(pkg.peerDependencies?.[name], `${name} is a peer`)
    // npm installs a package's own peers; as dev dependencies `npm ci --omit=dev` would drop them.
    t.notOk(pkg.devDependencies?.[name], `${name} is not a dev dependency, so a production install keeps it`)
  }
  t.ok(pkg.peerDependencies?.['@electric-sql/pglite'], 'PGlite is a peer')
  t.same(pkg.peerDependenciesMeta?.['@electric-sql/pglite'], { optional: true }, 'an optional one')
  for (const name of ['fastify', '@sinclair/typebox', '@electric-sql/pglite']) t.notOk(pkg.dependencies?.[name], `${name} is not a dependency`)
})

t.test('the registry metadata is filled in', async (t) => {
  t.equal(pkg.license, 'MIT')
  t.ok(existsSync(new URL('LICENSE', root)), 'LICENSE')
  t.same(pkg.repository, { type: 'git', url: 'git+https://github.com/plinth-dev/plinth.git' })
  t.same(pkg.keywords, ['fastify', 'fastify-plugin', 'typebox', 'drizzle', 'oauth2', 'jwt', 'crud', 'openapi', 'postgresql', 'pglite'])
})
