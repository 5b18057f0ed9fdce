import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { exitWithin, outcome, run, startApp, succeeded, userEnv } from '../support/consumer.js'
import { freshPostgresUrl, TEST_DATABASE_URL } from '../support/database.js'
import { httpRequest, type HttpRequestOptions } from '../support/http.js'
import { PROBLEM_TYPE } from '../support/responses.js'
import { freePort } from '../support/server-process.js'

// A new user's experience, end to end: the packed tarball installed into a scratch host app
// outside the repo, with the host apps of the README ("As plugins in your own Fastify app") and of
// docs/plugins.md (the RESOURCES_FILE in a host) as they are written there, type-checked and run on
// the lowest and the highest fastify 5.

const root = fileURLToPath(new URL('../../', import.meta.url))
const docs = ['README.md', 'docs/plugins.md'].map((file) => readFileSync(join(root, file), 'utf8')).join('\n')
const example = (file: string) =>
  new RegExp(`<!-- consumer: ${file.replace(/\./g, '\\.')} -->\\s*\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(docs)?.[1]
/** The examples the scratch app holds: TypeScript to compile, and the resources file one of them reads. */
const SOURCES = ['host.ts', 'fails-closed.ts', 'resources-file.ts']
const EXAMPLES = [...SOURCES, 'resources.json']

const MINUTE = 60_000
/** The fastify versions to run on: the lowest plinth supports, and the highest 5.x. */
const FASTIFY = ['5.5.0', '5']
const describeSpec = (spec: string) => spec === FASTIFY[0] ? 'the lowest supported' : 'the highest 5.x'
const PGLITE_MISSING = 'needs @electric-sql/pglite: run `npm install @electric-sql/pglite`'
const NO_GUARD = 'resource plugin: "notes": guard must be a function such as app.authenticate (got undefined)'

const scratch = mkdtempSync(join(tmpdir(), 'plinth-consumer-'))
const app = join(scratch, 'host')
t.teardown(() => rmSync(scratch, { recursive: true, force: true }))
t.comment(`scratch host app: ${app}`)

const npm = (args: string[], timeout = 5 * MINUTE) => run('npm', args, { cwd: app, timeout })
const installedFastify = () => (JSON.parse(readFileSync(join(app, 'node_modules/fastify/package.json'), 'utf8')) as { version: string }).version

/**
 * Steps that build on each other: once one fails, the ones after it are skipped (naming it)
 * rather than failing again for the same reason.
 */
function sequence () {
  let failed = ''
  return async (t: Test, name: string, fn: (t: Test) => Promise<void>) => {
    await t.test(name, { skip: failed && `"${failed}" failed` }, async (t) => {
      try {
        await fn(t)
      } catch (err) {
        failed ||= name
        throw err
      }
      if (!t.passing()) failed ||= name
    })
  }
}

const step = sequence()
let tarball = ''
let databaseKind = ''

await step(t, 'npm pack builds the package and packs a tarball', async (t) => {
  const destination = join(scratch, 'pack')
  mkdirSync(destination)
  const packed = await run('npm', ['pack', '--json', '--pack-destination', destination], { cwd: root, timeout: 5 * MINUTE })
  if (!succeeded(t, packed, 'npm pack (with its prepack build) exits 0')) return
  const json = packed.stdout.slice(Math.max(0, packed.stdout.search(/^\[/m)))
  const [{ filename }] = JSON.parse(json) as [{ filename: string }]
  tarball = join(destination, filename)
  t.ok(existsSync(tarball), `the tarball is there: ${filename}`)
})

await step(t, `a scratch host app holds the docs' ${EXAMPLES.join(', ')}, verbatim`, async (t) => {
  mkdirSync(app)
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'host', private: true, type: 'module' }, null, 2) + '\n')
  const compilerOptions = {
    strict: true,
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    target: 'ES2022',
    outDir: 'build',
    types: ['node'],
    // As docs/plugins.md requires: false fails on drizzle-orm's own declarations (drizzle-orm#5187),
    // which the check below holds to be the only ones failing.
    skipLibCheck: true
  }
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: SOURCES }, null, 2) + '\n')
  // The same, reading every declaration file: the errors that fall in plinth's are the test's.
  writeFileSync(join(app, 'tsconfig.declarations.json'), JSON.stringify({
    extends: './tsconfig.json', compilerOptions: { noEmit: true, skipLibCheck: false }
  }, null, 2) + '\n')
  for (const file of EXAMPLES) {
    const code = example(file)
    if (!t.ok(code, `the docs have a \`<!-- consumer: ${file} -->\` block`)) continue
    writeFileSync(join(app, file), code!)
  }
})

await step(t, `npm install the tarball, fastify@${FASTIFY[0]} and the host's own plugins (no PGlite)`, async (t) => {
  const installed = await npm(['install', '--no-audit', '--no-fund', tarball, `fastify@${FASTIFY[0]}`, '@sinclair/typebox@^0.34',
    '@fastify/jwt', '@fastify/swagger', '@fastify/formbody', '@fastify/cors', 'typescript@5.9', '@types/node@20'])
  succeeded(t, installed, 'npm install exits 0')
  t.ok(existsSync(join(app, 'node_modules/plinth/dist/index.js')), 'plinth is installed with its dist/')
  t.notOk(existsSync(join(app, 'node_modules/@electric-sql/pglite')), 'PGlite is not installed: it is an optional peer')
})

await step(t, 'without PGlite, plinth/db\'s connect(\'memory://\') fails with one line saying what to install', async (t) => {
  const probe = await run(process.execPath, ['--input-type=module', '-e', "const { connect } = await import('plinth/db'); await connect('memory://')"],
    { cwd: app, timeout: MINUTE })
  t.equal(probe.code, 1, 'exit code 1', outcome(probe))
  t.match(probe.stderr, PGLITE_MISSING, 'stderr names the package and the command', outcome(probe))
})

await step(t, 'a database for the host app', async (t) => {
  if (TEST_DATABASE_URL) {
    databaseKind = 'PostgreSQL: a new database on TEST_DATABASE_URL for each fastify version'
  } else {
    succeeded(t, await npm(['install', '--no-audit', '--no-fund', '@electric-sql/pglite']), 'npm install @electric-sql/pglite exits 0')
    databaseKind = 'in-memory PGlite (memory://), installed in the host app'
  }
  t.comment(`database: ${databaseKind}`)
  t.pass(databaseKind)
})

/** The checks over HTTP of the README's host app, listening at `base`. */
async function checkHost (t: Test, base: string) {
  const diag = (res: { status: number, text: string }) => ({ status: res.status, body: res.text.slice(0, 2000) })
  // A time limit on each request: a host app that hangs fails its check instead of the whole run.
  const call = (path: string, options: HttpRequestOptions = {}) => httpRequest(base, path, { timeoutMs: 15_000, ...options })

  await t.test('the host\'s own JWT: its token, its request.user', async (t) => {
    const issued = await call('/host/token', { method: 'POST' })
    t.equal(issued.status, 200, 'POST /host/token answers 200', diag(issued))
    t.type(issued.json?.token, 'string', 'with { token }', diag(issued))
    const whoami = await call('/host/whoami', { token: issued.json?.token })
    t.equal(whoami.status, 200, 'GET /host/whoami with the host\'s token answers 200', diag(whoami))
    t.same(whoami.json, { who: 'host' }, '{ "who": "host" }', diag(whoami))
  })

  const email = `consumer-${randomBytes(4).toString('hex')}@example.com`
  const password = 'correct horse battery'
  let access = ''
  let hostToken = ''
  await t.test('plinth\'s register and login', async (t) => {
    const registered = await call('/api/v1/auth/register', { json: { email, password } })
    t.equal(registered.status, 201, 'POST /api/v1/auth/register answers 201', diag(registered))
    t.equal(registered.json?.email, email, 'with the account', diag(registered))
    const login = await call('/api/v1/auth/login', { form: { username: email, password } })
    t.equal(login.status, 200, 'POST /api/v1/auth/login (form) answers 200', diag(login))
    t.type(login.json?.access_token, 'string', 'with an access_token', diag(login))
    access = login.json?.access_token ?? ''
    hostToken = (await call('/host/token', { method: 'POST' })).json?.token ?? ''
  })

  await t.test('plinth\'s guard on the host\'s own route; the host\'s JWT and plinth\'s kept apart', async (t) => {
    const reports = await call('/host/reports', { token: access })
    t.equal(reports.status, 200, 'GET /host/reports with plinth\'s access token answers 200', diag(reports))
    t.same(reports.json, { email }, 'with the account\'s email from request.account', diag(reports))

    const anonymous = await call('/host/reports')
    t.equal(anonymous.status, 401, 'without a token: 401', diag(anonymous))
    t.equal(anonymous.headers.get('content-type'), PROBLEM_TYPE, 'a problem document', diag(anonymous))
    t.equal(anonymous.json?.code, 'AUTH_NOT_AUTHENTICATED', 'code AUTH_NOT_AUTHENTICATED', diag(anonymous))

    const foreign = await call('/host/reports', { token: hostToken })
    t.equal(foreign.status, 401, 'with the host\'s token: 401, it is not one of plinth\'s', diag(foreign))
    t.equal(foreign.headers.get('content-type'), PROBLEM_TYPE, 'a problem document', diag(foreign))

    const crossed = await call('/host/whoami', { token: access })
    t.equal(crossed.status, 401, 'GET /host/whoami with plinth\'s token: 401, it is not one of the host\'s', diag(crossed))
  })

  await t.test('a guarded resource refuses anonymous writes', async (t) => {
    const anonymous = await call('/api/v1/notes', { json: { title: 'x' } })
    t.equal(anonymous.status, 401, 'POST /api/v1/notes without a token: 401', diag(anonymous))
    const none = await call('/api/v1/notes', { token: access })
    t.equal(none.status, 200, 'GET /api/v1/notes with the token answers 200', diag(none))
    t.same(none.json, [], 'and no row was written', diag(none))
    const created = await call('/api/v1/notes', { json: { title: 'x' }, token: access })
    t.equal(created.status, 201, 'POST /api/v1/notes with the token: 201', diag(created))
    t.match(created.json, { title: 'x' }, 'the note', diag(created))
    const one = await call('/api/v1/notes', { token: access })
    t.match(one.json, [{ title: 'x' }], 'listed', diag(one))
  })

  await t.test('plinth\'s routes answer with a trailing slash as without, on the host\'s default router', async (t) => {
    for (const [path, query = ''] of [['/api/v1/notes'], ['/api/v1/notes/1'], ['/api/v1/users/me'], ['/api/v1/items', '?limit=2']]) {
      const plain = await call(`${path}${query}`, { token: access })
      const slashed = await call(`${path}/${query}`, { token: access })
      t.equal(plain.status, 200, `GET ${path}${query}: 200`, diag(plain))
      t.same([slashed.status, slashed.json], [plain.status, plain.json], `GET ${path}/${query}: the same answer`, diag(slashed))
    }
  })

  await t.test('the host\'s OpenAPI document has the host\'s routes and plinth\'s', async (t) => {
    const res = await call('/openapi.json')
    t.equal(res.status, 200, 'GET /openapi.json answers 200', diag(res))
    const doc = res.json ?? {}
    const paths = Object.keys(doc.paths ?? {})
    t.equal(doc.info?.title, 'host', 'info.title is the host\'s')
    for (const path of ['/host/token', '/host/whoami', '/host/reports', '/api/v1/auth/login', '/api/v1/items/{item_id}']) {
      t.ok(paths.includes(path), path, { paths })
    }
    t.ok(paths.includes('/api/v1/notes'), 'the notes collection, as the standalone server documents /api/v1/records', { paths })
    t.same(paths.filter((path) => path.length > 1 && path.endsWith('/')), [], 'no path with a trailing slash', { paths })
    t.ok(doc.components?.securitySchemes?.OAuth2PasswordBearer, 'components.securitySchemes.OAuth2PasswordBearer', { components: doc.components })
  })
}

/** The checks over HTTP of docs/plugins.md's host app that mounts resources.json, listening at `base`. */
async function checkResourcesFile (t: Test, base: string) {
  const diag = (res: { status: number, text: string }) => ({ status: res.status, body: res.text.slice(0, 2000) })
  const call = (path: string, options: HttpRequestOptions = {}) => httpRequest(base, path, { timeoutMs: 15_000, ...options })
  const email = `json-${randomBytes(4).toString('hex')}@example.com`
  const password = 'correct horse battery'

  t.equal((await call('/api/v1/tasks', { json: { title: 'x' } })).status, 401, 'the file\'s owned tasks need a token')
  t.equal((await call('/api/v1/auth/register', { json: { email, password } })).status, 201, 'register')
  const token = (await call('/api/v1/auth/login', { form: { username: email, password } })).json?.access_token as string
  const refused = await call('/api/v1/tasks', { json: { title: 'x' }, token })
  t.equal(refused.status, 403, '{ "scopes": ["tasks:write"] } in the file guards the writes', diag(refused))
  t.equal(refused.json?.code, 'AUTH_INSUFFICIENT_SCOPE', 'code AUTH_INSUFFICIENT_SCOPE', diag(refused))
  for (const path of ['/api/v1/tasks', '/api/v1/tasks/', '/host/my-open-tasks']) {
    const listed = await call(path, { token })
    t.same([listed.status, listed.json], [200, []], `GET ${path}: 200, no task yet`, diag(listed))
  }
  const counted = await call('/host/task-count')
  t.same(counted.json, { tasks: 0 }, 'rowsOf reads the raw count', diag(counted))

  const document = await call('/openapi.json')
  t.equal(document.status, 200, 'GET /openapi.json answers 200', diag(document))
  t.same(document.json?.info, { title: 'Example', version: '1.2.0', description: 'Tasks, from the resources file the server reads too.' }, 'docsPlugin\'s info')
  t.same(document.json?.servers, [{ url: 'https://api.example.com', description: 'production' }], 'and servers')
  const paths = Object.keys(document.json?.paths ?? {})
  for (const path of ['/api/v1/tasks', '/api/v1/tasks/{tasks_id}', '/api/v1/users/me']) t.ok(paths.includes(path), path, { paths })
  t.same(paths.filter((path) => path.length > 1 && path.endsWith('/')), [], 'no path with a trailing slash', { paths })
}

for (const spec of FASTIFY) {
  await t.test(`fastify@${spec} (${describeSpec(spec)})`, { skip: !tarball || !databaseKind ? 'the scratch host app is not set up' : false }, async (t) => {
    const step = sequence()
    let version = ''
    // A database of its own for each version's host app (dropped when this subtest ends).
    const databaseUrl = TEST_DATABASE_URL ? await freshPostgresUrl(t) : 'memory://'

    await step(t, `npm install fastify@${spec}`, async (t) => {
      succeeded(t, await npm(['install', '--no-audit', '--no-fund', `fastify@${spec}`]), `npm install fastify@${spec} exits 0`)
      version = installedFastify()
      if (/^\d+\.\d+\.\d+$/.test(spec)) t.equal(version, spec, `fastify ${version} is installed`)
      else t.match(version, /^5\.\d+\.\d+$/, `fastify ${version} is installed`)
      t.notOk(existsSync(join(app, 'node_modules/plinth/node_modules/fastify')), 'one copy of fastify: plinth uses the host\'s')
    })

    await step(t, `tsc --noEmit passes on fastify ${version} (strict, NodeNext)`, async (t) => {
      succeeded(t, await run('npx', ['--no', '--', 'tsc', '--noEmit'], { cwd: app, timeout: 3 * MINUTE }), 'npx tsc --noEmit exits 0')
    })

    await t.test(`with skipLibCheck: false on fastify ${version}, the only errors are drizzle-orm's own, as docs/plugins.md says`, { skip: !version && 'fastify is not installed' }, async (t) => {
      const checked = await run('npx', ['--no', '--', 'tsc', '-p', 'tsconfig.declarations.json'], { cwd: app, timeout: 3 * MINUTE })
      const errors = [...checked.stdout.matchAll(/^(\S[^(\n]*)\(\d+,\d+\): error TS\d+: .*$/gm)]
      const elsewhere = errors.filter(([, file]) => !file!.startsWith('node_modules/drizzle-orm/'))
      t.same(elsewhere.map(([line]) => line), [], 'none in plinth\'s declarations, the host\'s files or another package\'s', outcome(checked))
      if (checked.code !== 0 && errors.length === 0) t.fail('tsc failed without reporting an error', outcome(checked))
      t.comment(`drizzle-orm's declarations: ${errors.length - elsewhere.length} errors (drizzle-orm#5187)`)
    })

    await step(t, `tsc emits the examples' build/*.js on fastify ${version}`, async (t) => {
      succeeded(t, await run('npx', ['--no', '--', 'tsc'], { cwd: app, timeout: 3 * MINUTE }), 'npx tsc exits 0')
      for (const file of SOURCES.map((source) => source.replace(/\.ts$/, '.js'))) t.ok(existsSync(join(app, 'build', file)), `build/${file}`)
    })

    const env = (extra: Record<string, string>) => userEnv({ DATABASE_URL: databaseUrl, ...extra })

    /** Runs `node build/<script>` for `check`, then stops it with SIGTERM. */
    async function serving (t: Test, script: string, extra: Record<string, string>, check: (t: Test, base: string) => Promise<void>) {
      const port = await freePort()
      const server = startApp(t, `build/${script}`, {
        cwd: app,
        env: env({ PORT: String(port), SECRET_KEY: randomBytes(32).toString('hex'), ...extra }),
        timeout: 2 * MINUTE
      })
      let base: string
      try {
        base = await server.listening
      } catch (err) {
        const { message, stdout, stderr } = err as Error & { stdout: string, stderr: string }
        t.fail(`node build/${script} listens: ${message}`, { stdout, stderr })
        return
      }
      t.pass(`node build/${script} listens at ${base}`)
      await check(t, base)
      server.child.kill('SIGTERM')
      const ended = await exitWithin(server.exited, 20_000)
      t.ok(ended, `stops on SIGTERM (${ended ? ended[1] ?? ended[0] : 'still running'})`, server.output())
    }

    await step(t, `host.ts runs on fastify ${version}`, (t) => serving(t, 'host.js', {}, checkHost))

    await step(t, `resources-file.ts mounts resources.json, typed, on fastify ${version}`, (t) =>
      serving(t, 'resources-file.js', { RESOURCES_FILE: join(app, 'resources.json') }, checkResourcesFile))

    await step(t, `buildApp serves every route with and without the trailing slash on fastify ${version}`, async (t) => {
      const script = 'const { buildApp } = await import(\'plinth\'); const app = await buildApp({ DATABASE_URL: process.env.DATABASE_URL }, { logger: false }); ' +
        'const codes = []; for (const url of [\'/api/v1/health\', \'/api/v1/health/\', \'/api/v1/items\', \'/api/v1/items/\']) codes.push((await app.inject(url)).statusCode); ' +
        'const paths = Object.keys(app.swagger().paths); codes.push(paths.includes(\'/api/v1/records\'), paths.some((path) => path.endsWith(\'/\'))); ' +
        'await app.close(); console.log(codes.join(\' \'))'
      const built = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app, env: env({}), timeout: MINUTE })
      t.equal(built.stdout.trim(), '200 200 200 200 true false', 'GET /api/v1/health, /health/, /items and /items/; /api/v1/records documented, no path with a trailing slash', outcome(built))
    })

    await step(t, `fails-closed.ts fails the boot on fastify ${version}, naming the fix`, async (t) => {
      const boot = await run(process.execPath, ['build/fails-closed.js'], { cwd: app, env: env({}), timeout: MINUTE })
      t.notOk(boot.timedOut, 'ends within a minute', outcome(boot))
      t.ok(boot.code !== 0 && boot.code !== null, `exits non-zero (${boot.code})`, outcome(boot))
      t.match(boot.stderr, NO_GUARD, 'stderr says the guard is missing and what it should be', outcome(boot))
    })
  })
}
