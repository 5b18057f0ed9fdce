import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { Validator } from '@seriousme/openapi-schema-validator'
import { sql } from 'drizzle-orm'
import t, { type Test } from 'tap'
import { clientTypes } from '../scripts/generate-client.js'
import { plinth } from './support/cli.js'
import { TEST_DATABASE_URL, freshPostgresUrl, connectTo } from './support/database.js'
import { typecheck } from './support/typecheck.js'

// `--app MODULE`: plinth's openapi and migrate for a host app of one's own (test/fixtures/host-app.ts),
// its TypeScript-defined resources and its own routes included, as docs/plugins.md walks through.

const hostApp = new URL('./fixtures/host-app.ts', import.meta.url).pathname
const fastify = new URL('../node_modules/fastify/fastify.js', import.meta.url).href
const driver = TEST_DATABASE_URL ? 'postgres' : 'pglite'

async function scratch (t: Test) {
  const dir = await mkdtemp('/tmp/plinth-cli-app-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

let document: { paths: Record<string, Record<string, unknown>>, components: { schemas: Record<string, { properties: object }> } }

t.test('openapi --app prints the host app\'s own document, its routes and TypeScript resources, without opening its database', async (t) => {
  const dir = await scratch(t)
  const run = await plinth(['openapi', '--app', hostApp], { env: { DATABASE_URL: `pglite://${dir}/data` } })
  t.equal(run.code, 0, run.stderr)
  t.equal(run.stderr, '')
  document = JSON.parse(run.stdout)
  const paths = Object.keys(document.paths)
  t.ok(paths.includes('/host/hello'), 'the host\'s own route')
  t.ok(paths.some((path) => /^\/api\/v1\/tasks\/?$/.test(path)), 'its TypeScript resource')
  t.ok(paths.includes('/api/v1/notes/{notes_id}'), 'and the one it registers inside a plugin of its own')
  t.ok(paths.includes('/api/v1/auth/login'), 'plinth\'s profiles')
  t.match(document.components.schemas.TasksRecord!.properties, { priority: { type: 'integer', maximum: 5 } })
  const validation = await new Validator().validate(document)
  t.ok(validation.valid, JSON.stringify(validation.errors))
  t.notOk(await stat(`${dir}/data`).then(() => true, () => false), 'no database opened, none created')
})

t.test('openapi --app of a host that logs to stdout (logger: true) prints only the document there, its log lines on stderr', async (t) => {
  const run = await plinth(['openapi', '--app', hostApp], { env: { HOST_APP_LOGGER: '1' } })
  t.equal(run.code, 0, run.stderr)
  const printed = JSON.parse(run.stdout) as typeof document
  t.equal(run.stdout, `${JSON.stringify(printed, null, 2)}\n`, 'stdout holds the document and nothing else')
  if (document) t.same(printed, document, 'the same document as without the logger')
  const lines = run.stderr.trim().split('\n').map((line) => JSON.parse(line) as { msg: string })
  t.ok(lines.some(({ msg }) => msg === 'the host app is building'), 'the host\'s own log line, on stderr')
})

t.test('the generator turns that document into a typed client of the host\'s routes and resources', async (t) => {
  if (!t.ok(document, 'the document of the test before')) return
  const tasks = Object.keys(document.paths).find((path) => /^\/api\/v1\/tasks\/?$/.test(path))!
  const errors = await typecheck(t, {
    'host-api.ts': await clientTypes(document),
    'use.ts': `import createClient from 'openapi-fetch'
import type { paths } from './host-api.js'
const api = createClient<paths>({ baseUrl: 'http://127.0.0.1:3000' })
const created = await api.POST('${tasks}', { body: { title: 'write the report', priority: 2 } })
// A create answers a row, or the rows of an array body: the union is the document's.
export const priority: number | undefined = Array.isArray(created.data) ? undefined : created.data?.priority
export const hello: string | undefined = (await api.GET('/host/hello')).data?.hello
// @ts-expect-error priority is an integer, not text
await api.POST('${tasks}', { body: { title: 'x', priority: 'high' } })
// @ts-expect-error title is required
await api.POST('${tasks}', { body: { priority: 1 } })
`
  })
  t.same(errors, [], 'the generated types compile, and refuse what the host\'s API refuses')
})

t.test('migrate --app creates the tables of the host\'s resources, which its own boot never does, and says what it did', async (t) => {
  const url = TEST_DATABASE_URL ? await freshPostgresUrl(t) : `pglite://${await scratch(t)}/data`
  const first = await plinth(['migrate', '--app', hostApp], { env: { DATABASE_URL: url } })
  t.equal(first.stderr, '')
  t.match(first, { code: 0, stdout: new RegExp(`^applied \\d+ migrations; created the tables tasks, notes \\(${driver}\\)\\n$`) })
  const again = await plinth(['migrate', '--app', hostApp], { env: { DATABASE_URL: url } })
  t.match(again, { code: 0, stdout: new RegExp(`^nothing to do: \\d+ migrations applied before; tasks, notes up to date \\(${driver}\\)\\n$`) })
  const grown = await plinth(['migrate', '--app', hostApp], { env: { DATABASE_URL: url, HOST_APP_TASK_DUE: '1' } })
  t.same(grown, { code: 0, stdout: `updated the table tasks; notes up to date (${driver})\n`, stderr: '' }, 'a new field of the host\'s next release')

  const client = await connectTo(url)
  t.teardown(() => client.close())
  const rows = async (query: ReturnType<typeof sql>) => {
    const result = await client.db.execute(query) as unknown
    return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<Record<string, unknown>>
  }
  const columns = await rows(sql`select column_name as name from information_schema.columns where table_name = 'tasks' order by ordinal_position`)
  t.same(columns.map((column) => column.name), ['id', 'created_at', 'updated_at', 'owner_id', 'title', 'priority', 'due'])
  t.same(await rows(sql`select email from users`), [], 'the app\'s first superuser is the server\'s business, not the migration\'s')
})

t.test('--app refuses a missing module, one without buildApp, or an app without what the command needs, in one line', async (t) => {
  const dir = await scratch(t)
  await writeFile(`${dir}/nothing.mjs`, 'export const answer = 42\n')
  await writeFile(`${dir}/bare.mjs`, `import Fastify from '${fastify}'\nexport default async () => Fastify()\n`)
  await writeFile(`${dir}/broken.mjs`, `import Fastify from '${fastify}'\nexport const buildApp = () => { const app = Fastify(); app.register(async () => { throw new Error('the host plugin failed') }); return app }\n`)
  await writeFile(`${dir}/number.mjs`, 'export const buildApp = () => 42\n')
  await writeFile(`${dir}/exits.mjs`, 'export const buildApp = () => process.exit(3)\n')
  const cases: Array<[string[], string]> = [
    [['openapi', '--app', `${dir}/missing.js`], `plinth: --app ${dir}/missing.js: no such file\n`],
    [['migrate', '--app', `${dir}/nothing.mjs`], `plinth: --app ${dir}/nothing.mjs: the module exports no buildApp function, nor a default one, that builds the app\n`],
    [['openapi', '--app', `${dir}/number.mjs`], `plinth: --app ${dir}/number.mjs: buildApp returned 42, not a Fastify app\n`],
    [['openapi', '--app', `${dir}/bare.mjs`], `plinth: --app ${dir}/bare.mjs: the app has no OpenAPI document: register docsPlugin (or @fastify/swagger) in buildApp\n`],
    [['migrate', '--app', `${dir}/bare.mjs`], `plinth: --app ${dir}/bare.mjs: the app registers no dbPlugin: there is no database to migrate\n`],
    [['openapi', '--app', `${dir}/broken.mjs`], 'plinth: the host plugin failed\n'],
    [['openapi', '--app', `${dir}/exits.mjs`], `plinth: --app ${dir}/exits.mjs: the app's process ended (exit code 3) before it gave its document\n`]
  ]
  const runs = await Promise.all(cases.map(([args]) => plinth(args)))
  runs.forEach((run, i) => t.same(run, { code: 1, stdout: '', stderr: cases[i]![1] }, cases[i]![0].join(' ')))
})
