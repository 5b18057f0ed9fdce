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
// outside the repo, with the host app of the README ("As plugins in your own Fastify app") as it
// is written there, type-checked and run on the lowest and the highest fastify 5.

const root = fileURLToPath(new URL('../../', import.meta.url))
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const example = (file: string) =>
  new RegExp(`<!-- consumer: ${file.replace(/\./g, '\\.')} -->\\s*\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(readme)?.[1]

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

await step(t, 'a scratch host app holds the README\'s host.ts and fails-closed.ts, verbatim', async (t) => {
  mkdirSync(app)
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'host', private: true, type: 'module' }, null, 2) + '\n')
  const compilerOptions = {
    strict: true,
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    target: 'ES2022',
    outDir: 'build',
    types: ['node'],
    // false fails on drizzle-orm's own declarations (gel, mysql2, singlestore: modules and members
    // it does not ship); plinth's declarations are checked on their own below.
    skipLibCheck: true
  }
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['host.ts', 'fails-closed.ts'] }, null, 2) + '\n')
  // The same, reading every declaration file: the errors that fall in plinth's are the test's.
  writeFileSync(join(app, 'tsconfig.declarations.json'), JSON.stringify({
    extends: './tsconfig.json', compilerOptions: { noEmit: true, skipLibCheck: false }
  }, null, 2) + '\n')
  for (const file of ['host.ts', 'fails-closed.ts']) {
    const code = example(file)
    if (!t.ok(code, `README.md has a \`<!-- consumer: ${file} -->\` TypeScript block`)) continue
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

await step(t, 'without PGlite, connect(\'memory://\') fails with one line saying what to install', async (t) => {
  const probe = await run(process.execPath, ['--input-type=module', '-e', "const { connect } = await import('plinth'); await connect('memory://')"],
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

  await t.test('the host\'s OpenAPI document has the host\'s routes and plinth\'s', async (t) => {
    const res = await call('/openapi.json')
    t.equal(res.status, 200, 'GET /openapi.json answers 200', diag(res))
    const doc = res.json ?? {}
    const paths = Object.keys(doc.paths ?? {})
    t.equal(doc.info?.title, 'host', 'info.title is the host\'s')
    for (const path of ['/host/token', '/host/whoami', '/host/reports', '/api/v1/auth/login', '/api/v1/items/{item_id}']) {
      t.ok(paths.includes(path), path, { paths })
    }
    const notes = paths.filter((path) => path === '/api/v1/notes' || path === '/api/v1/notes/')
    t.ok(notes.length > 0, `the notes collection (${notes.join(', ') || 'missing'})`, { paths })
    t.ok(doc.components?.securitySchemes?.OAuth2PasswordBearer, 'components.securitySchemes.OAuth2PasswordBearer', { components: doc.components })
  })
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

    await t.test(`plinth's declarations type-check on fastify ${version} (skipLibCheck: false)`, { skip: !version && 'fastify is not installed' }, async (t) => {
      const checked = await run('npx', ['--no', '--', 'tsc', '-p', 'tsconfig.declarations.json'], { cwd: app, timeout: 3 * MINUTE })
      const errors = [...checked.stdout.matchAll(/^(\S[^(\n]*)\(\d+,\d+\): error TS\d+: .*$/gm)]
      const ours = errors.filter(([, file]) => !file!.startsWith('node_modules/') || file!.startsWith('node_modules/plinth/'))
      t.same(ours.map(([line]) => line), [], 'no error in plinth\'s declarations or the host\'s files', outcome(checked))
      if (checked.code !== 0 && errors.length === 0) t.fail('tsc failed without reporting an error', outcome(checked))
      const others = new Map<string, number>()
      for (const [, file] of errors) {
        const name = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file!)?.[1]
        if (name && name !== 'plinth') others.set(name, (others.get(name) ?? 0) + 1)
      }
      if (others.size) t.comment(`ignored: errors in other packages' declarations: ${[...others].map(([name, n]) => `${name} (${n})`).join(', ')}`)
    })

    await step(t, `tsc emits build/host.js and build/fails-closed.js on fastify ${version}`, async (t) => {
      succeeded(t, await run('npx', ['--no', '--', 'tsc'], { cwd: app, timeout: 3 * MINUTE }), 'npx tsc exits 0')
      for (const file of ['host.js', 'fails-closed.js']) t.ok(existsSync(join(app, 'build', file)), `build/${file}`)
    })

    const env = (extra: Record<string, string>) => userEnv({ DATABASE_URL: databaseUrl, ...extra })

    await step(t, `host.ts runs on fastify ${version}`, async (t) => {
      const port = await freePort()
      const host = startApp(t, 'build/host.js', {
        cwd: app,
        env: env({ PORT: String(port), SECRET_KEY: randomBytes(32).toString('hex') }),
        timeout: 2 * MINUTE
      })
      let base: string
      try {
        base = await host.listening
      } catch (err) {
        const { message, stdout, stderr } = err as Error & { stdout: string, stderr: string }
        t.fail(`node build/host.js listens: ${message}`, { stdout, stderr })
        return
      }
      t.pass(`node build/host.js listens at ${base}`)
      await checkHost(t, base)
      host.child.kill('SIGTERM')
      const ended = await exitWithin(host.exited, 20_000)
      t.ok(ended, `stops on SIGTERM (${ended ? ended[1] ?? ended[0] : 'still running'})`, host.output())
    })

    await step(t, `buildApp serves every route with and without the trailing slash on fastify ${version}`, async (t) => {
      const script = 'const { buildApp } = await import(\'plinth\'); const app = await buildApp({ DATABASE_URL: process.env.DATABASE_URL }, { logger: false }); ' +
        'const codes = []; for (const url of [\'/api/v1/health\', \'/api/v1/health/\', \'/api/v1/items\', \'/api/v1/items/\']) codes.push((await app.inject(url)).statusCode); ' +
        'await app.close(); console.log(codes.join(\' \'))'
      const built = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app, env: env({}), timeout: MINUTE })
      t.equal(built.stdout.trim(), '200 200 200 200', 'GET /api/v1/health, /health/, /items and /items/', outcome(built))
    })

    await step(t, `fails-closed.ts fails the boot on fastify ${version}, naming the fix`, async (t) => {
      const boot = await run(process.execPath, ['build/fails-closed.js'], { cwd: app, env: env({}), timeout: MINUTE })
      t.notOk(boot.timedOut, 'ends within a minute', outcome(boot))
      t.ok(boot.code !== 0 && boot.code !== null, `exits non-zero (${boot.code})`, outcome(boot))
      t.match(boot.stderr, NO_GUARD, 'stderr says the guard is missing and what it should be', outcome(boot))
    })
  })
}
