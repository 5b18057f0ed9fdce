import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import t from 'tap'
import { connectPglite } from '../db/client.js'
import { items } from '../db/schema.js'
import { httpRequest } from './support/http.js'
import { readMetrics, valueOf } from './support/metrics.js'
import { startServer } from './support/server-process.js'
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
