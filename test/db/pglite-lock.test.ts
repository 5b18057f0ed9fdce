import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { ConfigSchema } from '../../config.js'
import { connectPglite } from '../../db/client.js'
import { LOCK_FILE, lockFolder } from '../../db/pglite-lock.js'
import { startServer } from '../support/server-process.js'

const loader = process.execArgv.filter((arg) => arg.includes('@tapjs/typescript'))
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in ConfigSchema.properties)))

async function folder (t: Test) {
  const dir = await mkdtemp('/tmp/plinth-lock-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** The PID of a process that has exited: what a lock left by a crash names. */
const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid

/** `node` with the TypeScript loader and `args`, as `npx plinth` runs in a shell: its exit code and stderr. */
async function run (args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [...loader, ...args], { env: { ...baseEnv, ...env }, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const [code] = await once(child, 'close') as [number | null]
  return { code, stderr }
}

t.test('a second client cannot open a PGlite folder another holds, and the first frees it at close', async (t) => {
  const dir = await folder(t)
  const first = await connectPglite(dir)
  t.teardown(() => first.close())
  await t.rejects(connectPglite(dir), {
    code: 'PLINTH_PGLITE_IN_USE',
    message: `${dir} is in use by process ${process.pid}: stop the server, or use PostgreSQL`
  })
  await first.close()
  t.notOk(existsSync(join(dir, LOCK_FILE)), 'no lock left behind')
  const second = await connectPglite(dir)
  await second.ping()
  await second.close()
})

t.test('a CLI command or a second server next to a running server on the same folder is refused, naming the server\'s process', async (t) => {
  const dir = await folder(t)
  const env = { DATABASE_URL: `pglite://${dir}` }
  const server = startServer(t, env)
  await server.listening
  const message = `${dir} is in use by process ${server.child.pid}: stop the server, or use PostgreSQL`

  const migrate = await run([new URL('../../cli/index.ts', import.meta.url).pathname, 'migrate'], env)
  t.same(migrate, { code: 1, stderr: `plinth: ${message}\n` }, 'plinth migrate')
  const second = startServer(t, env)
  const [code] = await second.exited
  t.equal(code, 1, 'a second server')
  t.equal(second.stderr(), `plinth: DATABASE_URL: ${message}\n`)

  server.child.kill('SIGTERM')
  t.same(await server.exited, [0, null])
  t.notOk(existsSync(join(dir, LOCK_FILE)), 'the server frees the folder as it stops')
})

t.test('the lock file names the process that holds the folder, and goes at release', async (t) => {
  const dir = await folder(t)
  const release = lockFolder(dir)
  t.equal(await readFile(join(dir, LOCK_FILE), 'utf8'), `${process.pid}\n`)
  t.throws(() => lockFolder(dir), { code: 'PLINTH_PGLITE_IN_USE' }, 'held, even by this process')
  release()
  t.notOk(existsSync(join(dir, LOCK_FILE)))
  release()
  t.pass('a second release is harmless')
})

t.test('a lock naming another running process is refused, whoever runs it', async (t) => {
  const dir = await folder(t)
  // PID 1 always runs: as another user, the check gets EPERM, which still means running.
  await writeFile(join(dir, LOCK_FILE), '1\n')
  t.throws(() => lockFolder(dir), { code: 'PLINTH_PGLITE_IN_USE', message: `${dir} is in use by process 1: stop the server, or use PostgreSQL` })
  t.equal(await readFile(join(dir, LOCK_FILE), 'utf8'), '1\n', 'left as it was')
})

t.test('a folder in the lock\'s place is an error, and stays', async (t) => {
  const dir = await folder(t)
  await mkdir(join(dir, LOCK_FILE))
  t.throws(() => lockFolder(dir), { code: 'EISDIR' })
  t.ok(existsSync(join(dir, LOCK_FILE)))
})

t.test('a lock whose process is gone is taken over', async (t) => {
  const dir = await folder(t)
  const stale = [`${deadPid()}\n`, '', 'not a pid\n']
  for (const content of stale) {
    await writeFile(join(dir, LOCK_FILE), content)
    const release = lockFolder(dir)
    t.equal(await readFile(join(dir, LOCK_FILE), 'utf8'), `${process.pid}\n`, JSON.stringify(content))
    release()
  }
})

t.test('a lock naming this process, which does not hold it, is a previous run\'s that had the same PID (as in a container)', async (t) => {
  const dir = await folder(t)
  await writeFile(join(dir, LOCK_FILE), `${process.pid}\n`)
  const release = lockFolder(dir)
  t.equal(await readFile(join(dir, LOCK_FILE), 'utf8'), `${process.pid}\n`)
  release()
})

t.test('a process that exits without closing frees the folder', async (t) => {
  const dir = await folder(t)
  const lock = new URL('../../db/pglite-lock.ts', import.meta.url).pathname
  const exited = await run(['--input-type=module', '-e', `import { lockFolder } from '${lock}'; lockFolder('${dir}'); process.exit(3)`], {})
  t.same(exited, { code: 3, stderr: '' })
  t.notOk(existsSync(join(dir, LOCK_FILE)))
})
