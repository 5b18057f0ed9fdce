import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t, { type Test } from 'tap'
import { ConfigSchema } from '../config.js'
import { connectPglite } from '../db/client.js'
import { items } from '../db/schema.js'
import { httpRequest, parseJson } from './support/http.js'
import { TEST_DATABASE_URL, childPoolMode, freshPostgresUrl, TEST_POOL_MODE } from './support/database.js'
import { readMetrics, valueOf } from './support/metrics.js'
import { freePort, startServer } from './support/server-process.js'
import { until } from './support/until.js'

t.test('serves health and docs on PGlite, stops on SIGTERM, and keeps its data', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-server-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const env = { DATABASE_URL: `pglite://${dir}` }

  const first = startServer(t, env)
  const base = await first.listening
  t.equal((await httpRequest(base, '/api/v1/health')).status, 200)
  t.equal((await httpRequest(base, '/api/v1/health/ready')).status, 200)
  const docs = await httpRequest(base, '/docs')
  t.equal(docs.status, 200)
  t.match(docs.text, /swagger-ui/i)
  t.ok(first.logs.some((entry) => entry.level === 40 && /SECRET_KEY is not set/.test(String(entry.msg))), 'warns about SECRET_KEY')
  first.child.kill('SIGTERM')
  t.same(await first.exited, [0, null], 'exits 0 on SIGTERM')

  // Write through the database while the server is down, then restart on the same folder.
  const db = await connectPglite(dir)
  await db.db.insert(items).values({ name: 'survivor', price: 1 })
  await db.close()

  const second = startServer(t, env)
  const again = await second.listening
  t.equal((await httpRequest(again, '/api/v1/health/ready')).status, 200, 'restarts on the same folder')
  second.child.kill('SIGINT')
  t.same(await second.exited, [0, null], 'exits 0 on SIGINT')

  const check = await connectPglite(dir)
  t.same((await check.db.select({ name: items.name }).from(items)), [{ name: 'survivor' }], 'data survived two restarts')
  await check.close()
})

t.test('METRICS_PORT serves /metrics on a listener of its own, closed with the server', async (t) => {
  const server = startServer(t, { DATABASE_URL: 'memory://', METRICS_PORT: '0' })
  const base = await server.listening
  for (let i = 0; i < 3; i++) t.equal((await httpRequest(base, '/api/v1/health')).status, 200)
  const url = await until('the metrics listener', () => server.logs.find((entry) => entry.msg === 'metrics listening')?.url as string | undefined)
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, 'on the loopback by default')
  const scrape = await httpRequest(url, '')
  t.equal(scrape.status, 200)
  const metrics = readMetrics(scrape.text)
  t.equal(valueOf(metrics, 'http_request_duration_seconds', { method: 'GET', route: '/api/v1/health', status_class: '2xx' }), 3)
  t.equal(valueOf(metrics, 'plinth_db_pool_size', { driver: 'pglite' }), 1)
  t.equal((await httpRequest(base, '/metrics')).status, 404, 'never on the API port')
  server.child.kill('SIGTERM')
  t.same(await server.exited, [0, null])
  await t.rejects(fetch(url), 'the metrics port is closed')
})

t.test('no SECRET_KEY warning when the key is set', async (t) => {
  const server = startServer(t, { DATABASE_URL: 'memory://', SECRET_KEY: 'a-shared-secret-of-at-least-32-bytes' })
  await server.listening
  t.notOk(server.logs.some((entry) => /SECRET_KEY/.test(String(entry.msg))))
  server.child.kill('SIGTERM')
  t.same(await server.exited, [0, null])
})

t.test('a bad setting stops the start with one line naming it', async (t) => {
  const server = startServer(t, { PORT: 'abc' })
  const [code] = await server.exited
  t.equal(code, 1)
  t.equal(server.stderr(), 'plinth: invalid configuration: PORT must be an integer (got "abc")\n')
})

/** server.ts started with `env`, expected to stop at once: its stderr. */
async function failedStart (t: Test, env: Record<string, string>) {
  const server = startServer(t, env)
  const [code] = await server.exited
  t.equal(code, 1, 'exits 1')
  t.notOk(server.logs.some((entry) => Number(entry.level) >= 50), 'no error or fatal log line, so no stack')
  return server.stderr()
}

t.test('a URL in a configuration error is printed without its password', async (t) => {
  const stderr = await failedStart(t, { DATABASE_URL: 'mysql://admin:pw-s3cret@db.example.com/app' })
  t.equal(stderr, 'plinth: invalid configuration: DATABASE_URL: must be a postgres://, postgresql://, pglite://PATH or memory:// URL ' +
    '(got "mysql://admin:***@db.example.com/app")\n')
})

t.test('a malformed postgres:// URL stops the start with one line naming DATABASE_URL, without its password', async (t) => {
  const stderr = await failedStart(t, { DATABASE_URL: 'postgres://admin:pw/s3cret@127.0.0.1:5432/app' })
  t.match(stderr, /^plinth: DATABASE_URL: postgres:\/\/admin:\*\*\*@127\.0\.0\.1:5432\/app is not a valid URL: .*\n$/)
  t.notMatch(stderr, /s3cret/)
})

t.test('DATABASE_URL=pglite:// without a folder stops the start instead of running in memory', async (t) => {
  const stderr = await failedStart(t, { DATABASE_URL: 'pglite://' })
  t.match(stderr, /^plinth: invalid configuration: DATABASE_URL: pglite:\/\/ needs the path of a folder, such as pglite:\/\/\.\/data\/pglite; .*memory:\/\/.*\n$/)
})

t.test('a pglite:// path that is a file stops the start with one line naming DATABASE_URL', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-server-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await writeFile(join(dir, 'file'), '')
  const stderr = await failedStart(t, { DATABASE_URL: `pglite://${dir}/file` })
  t.equal(stderr, `plinth: DATABASE_URL: ${dir}/file is a file, not a folder: pglite:// takes the path of a folder\n`)
})

t.test('a refused connection to PostgreSQL stops the start with one line naming DATABASE_URL, without its password', async (t) => {
  const port = await freePort()
  const stderr = await failedStart(t, { DATABASE_URL: `postgres://plinth:pw-s3cret@127.0.0.1:${port}/plinth` })
  t.equal(stderr, `plinth: DATABASE_URL: cannot reach postgres://plinth:***@127.0.0.1:${port}/plinth: connect ECONNREFUSED 127.0.0.1:${port}\n`)
})

t.test('EdDSA without a key stops the start before the database is opened', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-server-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const stderr = await failedStart(t, { DATABASE_URL: `pglite://${dir}/data`, JWT_ALGORITHM: 'EdDSA' })
  t.equal(stderr, 'plinth: invalid configuration: JWT_ALGORITHM: EdDSA needs a privateKey (JWT_PRIVATE_KEY or JWT_PRIVATE_KEY_FILE); `plinth keys generate` makes one\n')
  t.same(await readdir(dir), [], 'no database folder was made')
})

t.test('a port in use stops the start with one line naming PORT or METRICS_PORT', async (t) => {
  const taken = createServer().listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => { taken.close() })
  const { port } = taken.address() as AddressInfo
  t.equal(await failedStart(t, { DATABASE_URL: 'memory://', PORT: String(port) }),
    `plinth: PORT: 127.0.0.1:${port} is in use by another process; stop it, or choose another PORT\n`)
  t.equal(await failedStart(t, { DATABASE_URL: 'memory://', METRICS_PORT: String(port) }),
    `plinth: METRICS_PORT: 127.0.0.1:${port} is in use by another process; stop it, or choose another METRICS_PORT\n`)
})

t.test('a HOST that is not an address of this machine stops the start with one line naming HOST', async (t) => {
  // 192.0.2.1 is TEST-NET-1, reserved for documentation: no machine has it.
  t.equal(await failedStart(t, { DATABASE_URL: 'memory://', HOST: '192.0.2.1' }), 'plinth: HOST: 192.0.2.1 is not an address of this machine\n')
})

t.test('a database PostgreSQL does not have stops the start with one line naming DATABASE_URL', { skip: !TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, async (t) => {
  const url = new URL(TEST_DATABASE_URL!)
  url.pathname = '/plinth_no_such_database'
  // Through the suite's PgBouncer the pooler answers for the server, as a protocol error (08P01) rather than 3D000.
  const said = TEST_POOL_MODE === 'transaction' ? `cannot reach ${url.href}:` : `${url.href} refused:`
  t.equal(await failedStart(t, { DATABASE_URL: url.href }), `plinth: DATABASE_URL: ${said} database "plinth_no_such_database" does not exist\n`)
})

t.test('with several workers, a port in use stops the server instead of restarting its workers', { skip: !TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, async (t) => {
  const taken = createServer().listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => { taken.close() })
  const { port } = taken.address() as AddressInfo
  const stderr = await failedStart(t, { DATABASE_URL: await freshPostgresUrl(t), WORKERS: '2', PORT: String(port), SECRET_KEY: 'a-shared-secret-of-at-least-32-bytes' })
  const lines = stderr.trimEnd().split('\n')
  t.ok(lines.length >= 1 && lines.length <= 2, 'a line from each worker at most')
  for (const line of lines) t.equal(line, `plinth: PORT: 127.0.0.1:${port} is in use by another process; stop it, or choose another PORT`)
})

t.test('several workers on PGlite are refused with a clear message', async (t) => {
  const server = startServer(t, { DATABASE_URL: 'memory://', WORKERS: '2' })
  const [code] = await server.exited
  t.equal(code, 1)
  t.ok(server.logs.some((entry) => entry.level === 60 && /WORKERS > 1 needs PostgreSQL/.test(String(entry.msg))))
})

t.test('logs are JSON lines on a pipe and pretty on a terminal', async (t) => {
  const piped = startServer(t, { DATABASE_URL: 'memory://', SECRET_KEY: 'a-shared-secret-of-at-least-32-bytes' })
  await piped.listening
  t.ok(piped.logs.length > 0 && piped.logs.every((entry) => typeof entry.level === 'number' && typeof entry.time === 'number'), 'every stdout line is a pino JSON object')
  piped.child.kill('SIGTERM')
  await piped.exited

  // script(1) gives the server a pseudo-terminal as stdout, as a developer's shell would.
  const loader = process.execArgv.filter((arg) => arg.includes('@tapjs/typescript')).join(' ')
  const command = `exec ${process.execPath} ${loader} ${new URL('../server.ts', import.meta.url).pathname}`
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    env: { ...process.env, DATABASE_URL: 'memory://', SECRET_KEY: 'a-shared-secret-of-at-least-32-bytes', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let output = ''
  child.stdout.on('data', (chunk) => { output += chunk })
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => { if (/Server listening at/.test(output)) resolve() })
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)))
  })
  const line = output.split('\n').find((text) => text.includes('Server listening at')) ?? ''
  t.match(line, /INFO/, 'the level is a word')
  t.notMatch(line, /^\s*\{/, 'not a JSON object')
  child.kill('SIGTERM')
  await once(child, 'exit')
})

/** Whether a process of this id is still running. */
const running = (pid: number) => {
  try { return process.kill(pid, 0) } catch { return false }
}

t.test('kill -TERM of npm start stops the server it started, and the port stops answering', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-server-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const database = TEST_DATABASE_URL ? await freshPostgresUrl(t) : `pglite://${dir}`
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in ConfigSchema.properties)))
  // As a reader runs it from the README: npm start in the repository, dist/ built.
  const npm = spawn('npm', ['start'], {
    cwd: new URL('..', import.meta.url).pathname,
    env: { ...env, DATABASE_URL: database, HOST: '127.0.0.1', PORT: '0', ...childPoolMode({ DATABASE_URL: database }) },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let server: { base: string, pid: number } | undefined
  t.teardown(() => {
    if (npm.exitCode === null) npm.kill('SIGKILL')
    if (server && running(server.pid)) process.kill(server.pid, 'SIGKILL')
  })
  let stderr = ''
  npm.stderr.on('data', (chunk) => { stderr += chunk })
  createInterface({ input: npm.stdout }).on('line', (line) => {
    const entry = parseJson(line) as { msg?: string, pid?: number } | undefined
    const base = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(entry?.msg ?? '')?.[1]
    if (base && entry?.pid) server = { base, pid: entry.pid }
  })
  const exited = once(npm, 'exit') as Promise<[number | null, string | null]>
  const { base, pid } = await until('npm start to listen', () => npm.exitCode === null ? server : { base: '', pid: 0 })
  if (!pid) return t.fail(`npm start exited before listening: ${stderr}`)
  t.equal((await httpRequest(base, '/api/v1/health')).status, 200)
  t.not(pid, npm.pid, 'the server is a process of its own')

  npm.kill('SIGTERM')
  await exited
  t.equal(await until('the server to exit', () => running(pid) ? undefined : true, 15_000).catch((error: Error) => error.message), true, 'no dist/server.js left running')
  await t.rejects(httpRequest(base, '/api/v1/health', { timeoutMs: 5_000 }), 'the port no longer answers')
})
