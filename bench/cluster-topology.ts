import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { ConfigSchema } from '../config.js'
import { listenPort } from '../scripts/listen-port.js'
import { START_FLAGS } from './servers.js'

const run = promisify(execFile)
// build/bench/ -> the repository.
const root = new URL('../../', import.meta.url).pathname
const script = `${root}scripts/cluster.sh`
const serverJs = `${root}dist/server.js`
const nginxTemplate = `${root}scripts/cluster/nginx.conf`
const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find(existsSync)
const READY_MS = 60_000
const STOP_MS = 5_000
// The instances' settings come from here alone, not from whoever runs the bench.
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in ConfigSchema.properties)))

const children = new Set<ChildProcess>()

export interface Cluster { dir: string, primaryUrl: string, sessionUrl: string, transactionUrl: string }
export interface Target { name: string, address: string, url: string }

/** scripts/cluster.sh start in a new /tmp folder; its watchdog stops it if this process dies. */
export async function startCluster (): Promise<Cluster> {
  if (!NGINX) throw new Error('nginx not found in /usr/sbin or /usr/local/sbin')
  if (!existsSync(serverJs)) throw new Error('dist/server.js is missing: run `npm run build` first')
  const dir = mkdtempSync('/tmp/plinth-bench-cluster-')
  const env = { ...process.env, CLUSTER_OWNER_PID: String(process.pid), CLUSTER_MAX_SECONDS: '900' }
  let stdout: string
  try {
    ({ stdout } = await run('bash', [script, 'start', dir], { env, timeout: 180_000 }))
  } catch (err) {
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  mkdirSync(`${dir}/procs`)
  const urls = Object.fromEntries(stdout.trim().split('\n').map((line) => line.split('=', 2) as [string, string]))
  return { dir, primaryUrl: urls.PRIMARY_URL!, sessionUrl: urls.BOUNCER_SESSION_URL!, transactionUrl: urls.BOUNCER_TRANSACTION_URL! }
}

/** Ends every process started here, then the cluster, and removes its folder. */
export async function stopCluster (cluster: Cluster | undefined) {
  await Promise.all([...children].map(async (child) => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    // SIGTERM first: an nginx master killed outright would leave its worker serving.
    child.kill('SIGTERM')
    const late = setTimeout(() => child.kill('SIGKILL'), STOP_MS)
    await exited
    clearTimeout(late)
  }))
  if (!cluster) return
  await run('bash', [script, 'stop', cluster.dir], { timeout: 120_000 })
  rmSync(cluster.dir, { recursive: true, force: true })
}

/** Synchronous last resort, for process 'exit'; the cluster's watchdog stops PostgreSQL and PgBouncer. */
export function killChildren () {
  for (const child of children) child.kill('SIGKILL')
}

/** Spawns a process whose pid goes in DIR/procs, where the cluster's stop and watchdog find it too. */
function spawnTracked (cluster: Cluster, name: string, command: string, args: string[], env?: NodeJS.ProcessEnv) {
  const child = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] })
  children.add(child)
  child.once('exit', () => children.delete(child))
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4000) })
  writeFileSync(`${cluster.dir}/procs/${name}.pid`, String(child.pid))
  return { child, stderr: () => stderr }
}

/** Resolves once `url` answers 200; rejects if the process exits first or after READY_MS. */
async function untilReady (name: string, url: string, child: ChildProcess, stderr: () => string) {
  for (const deadline = Date.now() + READY_MS; ;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${stderr()}`)
    const status = await fetch(`${url}/api/v1/health/ready`, { signal: AbortSignal.timeout(2000) }).then((res) => res.status, () => 0)
    if (status === 200) return
    if (Date.now() > deadline) throw new Error(`${name} not ready within ${READY_MS} ms: ${stderr()}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** One `node dist/server.js`, with the Node flags of `npm start`, on a port of its own. */
export async function startInstance (cluster: Cluster, name: string, env: Record<string, string>): Promise<Target> {
  const port = await listenPort()
  const address = `127.0.0.1:${port}`
  const { child, stderr } = spawnTracked(cluster, name, process.execPath, [...START_FLAGS, serverJs], {
    ...baseEnv,
    HOST: '127.0.0.1',
    PORT: String(port),
    SECRET_KEY: 'bench-cluster-shared-secret-of-32-bytes-or-more',
    TRUST_PROXY: '127.0.0.1',
    LOG_LEVEL: 'warn',
    // Every process here shares two cores: a slow event loop is contention, not overload to shed.
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
    // The load comes from one address, directly or as nginx's kept-alive connections.
    MAX_CONNECTIONS_PER_ADDRESS: '1000000000',
    ...env
  })
  const url = `http://${address}`
  await untilReady(name, url, child, stderr)
  return { name, address, url }
}

/** nginx from scripts/cluster/nginx.conf, as the cluster tests run it, in front of `upstreams`. */
export async function startNginx (cluster: Cluster, name: string, upstreams: Target[]): Promise<Target> {
  const dir = `${cluster.dir}/${name}`
  mkdirSync(dir)
  const port = await listenPort()
  const conf = `${dir}/nginx.conf`
  writeFileSync(conf, readFileSync(nginxTemplate, 'utf8')
    .replaceAll('{{DIR}}', dir)
    .replaceAll('{{PORT}}', String(port))
    .replace('{{SERVERS}}', upstreams.map((one) => `    server ${one.address} max_fails=1 fail_timeout=2s;`).join('\n')))
  const { child, stderr } = spawnTracked(cluster, name, NGINX!, ['-p', dir, '-c', conf, '-e', `${dir}/error.log`])
  const address = `127.0.0.1:${port}`
  await untilReady(name, `http://${address}`, child, stderr)
  return { name, address, url: `http://${address}` }
}
