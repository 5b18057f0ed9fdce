import { mkdtemp, rm } from 'node:fs/promises'
import t from 'tap'
import { connectPglite } from '../db/client.js'
import { items } from '../db/schema.js'
import { startServer } from './server-process.js'

t.test('serves health and docs on PGlite, stops on SIGTERM, and keeps its data', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-server-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const env = { DATABASE_URL: `pglite://${dir}` }

  const first = startServer(t, env)
  const base = await first.listening
  t.equal((await fetch(`${base}/api/v1/health`)).status, 200)
  t.equal((await fetch(`${base}/api/v1/health/ready`)).status, 200)
  const docs = await fetch(`${base}/docs`)
  t.equal(docs.status, 200)
  t.match(await docs.text(), /swagger-ui/i)
  t.ok(first.logs.some((entry) => entry.level === 40 && /SECRET_KEY is not set/.test(String(entry.msg))), 'warns about SECRET_KEY')
  first.child.kill('SIGTERM')
  t.same(await first.exited, [0, null], 'exits 0 on SIGTERM')

  // Write through the database while the server is down, then restart on the same folder.
  const db = await connectPglite(dir)
  await db.db.insert(items).values({ name: 'survivor', price: 1 })
  await db.close()

  const second = startServer(t, env)
  const again = await second.listening
  t.equal((await fetch(`${again}/api/v1/health/ready`)).status, 200, 'restarts on the same folder')
  second.child.kill('SIGINT')
  t.same(await second.exited, [0, null], 'exits 0 on SIGINT')

  const check = await connectPglite(dir)
  t.same((await check.db.select({ name: items.name }).from(items)), [{ name: 'survivor' }], 'data survived two restarts')
  await check.close()
})

t.test('no SECRET_KEY warning when the key is set', async (t) => {
  const server = startServer(t, { DATABASE_URL: 'memory://', SECRET_KEY: 'a-shared-secret' })
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
