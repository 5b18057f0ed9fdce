import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readdirSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import postgres from 'postgres'
import type { Test } from 'tap'
import { ConfigSchema } from '../../config.js'
import { NGINX, startNginx } from './cluster-nginx.js'
import { bounded, listenPort, track } from './cluster-processes.js'

const run = promisify(execFile)
const root = new URL('../../', import.meta.url).pathname
const script = `${root}scripts/cluster.sh`
const serverJs = `${root}dist/server.js`
const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer'].find(existsSync)
// Plain node, as in production: none of tap's loaders and hooks, none of this run's plinth settings.
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) =>
  !(name in ConfigSchema.properties) && name !== 'NODE_OPTIONS' && !/^_?TAP/.test(name)))

/** Why the cluster tests cannot run here, or false. */
export const clusterSkip: string | false = !NGINX
  ? 'needs nginx (apt-get install nginx-light)'
  : !PGBOUNCER
      ? 'needs pgbouncer (apt-get install pgbouncer)'
      : !existsSync('/usr/lib/postgresql') || !readdirSync('/usr/lib/postgresql').some((version) => existsSync(`/usr/lib/postgresql/${version}/bin/pg_basebackup`))
          ? 'needs the PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)'
          : false

export const SECRET_KEY = 'cluster-tests-shared-secret-of-32-bytes-or-more'

/** Runs `npm run build` when dist/server.js is missing: `npm run test:cluster` builds first. */
async function ensureBuilt () {
  if (!existsSync(serverJs)) await run('npm', ['run', 'build', '--silent'], { cwd: root })
}

/**
 * The database side of the deployment (scripts/cluster.sh): a primary, a streaming replica that
 * applies WAL `replicaDelayMs` late, and PgBouncers in session and transaction modes; `sql` is a
 * connection to the primary. Stopped and removed when the test ends (kept with KEEP_CLUSTER=1, for
 * its logs: the servers', nginx's, and each instance's pid while it runs).
 */
export async function startCluster (t: Test, { replicaDelayMs = 0 } = {}) {
  await ensureBuilt()
  const dir = await mkdtemp('/tmp/plinth-cluster-')
  t.teardown(async () => {
    await run('bash', [script, 'stop', dir], { timeout: 120_000 })
    if (process.env.KEEP_CLUSTER) t.comment(`kept ${dir}`)
    else await rm(dir, { recursive: true, force: true })
  })
  const { stdout } = await run('bash', [script, 'start', dir, String(replicaDelayMs)], { env: { ...process.env, CLUSTER_OWNER_PID: String(process.pid) }, timeout: 180_000 })
  const urls = Object.fromEntries(stdout.trim().split('\n').map((line) => line.split('=', 2) as [string, string]))
  const sql = postgres(urls.PRIMARY_URL!, { max: 2, onnotice: () => {} })
  t.teardown(() => sql.end())
  await mkdir(`${dir}/procs`)
  return {
    dir,
    primaryUrl: urls.PRIMARY_URL!,
    replicaUrl: urls.REPLICA_URL!,
    bouncerSessionUrl: urls.BOUNCER_SESSION_URL!,
    bouncerTransactionUrl: urls.BOUNCER_TRANSACTION_URL!,
    sql
  }
}

export type Cluster = Awaited<ReturnType<typeof startCluster>>

const START_MS = 60_000

/**
 * One `node dist/server.js` on a port of its own, kept across restarts so nginx's upstream stays
 * right. `env` is what all its starts share; `start(more)` adds to it for that start.
 */
export function instance (t: Test, cluster: Cluster, name: string, port: number, env: Record<string, string>) {
  const address = `127.0.0.1:${port}`
  const state = {
    name,
    port,
    address,
    base: `http://${address}`,
    env,
    child: undefined as ChildProcess | undefined,
    /** The pino lines of every start, in order. */
    logs: [] as Array<Record<string, unknown>>,
    exited: Promise.resolve<[number | null, string | null]>([null, null]),
    async start (more: Record<string, string> = {}) {
      const metricsPort = await listenPort()
      const child = spawn(process.execPath, [serverJs], {
        cwd: root,
        env: { ...baseEnv, HOST: '127.0.0.1', PORT: String(port), METRICS_PORT: String(metricsPort), ...env, ...more },
        stdio: ['ignore', 'pipe', 'pipe']
      })
      state.child = child
      state.exited = once(child, 'exit') as Promise<[number | null, string | null]>
      await track(cluster.dir, name, child)
      let stderr = ''
      child.stderr!.on('data', (chunk) => { stderr += chunk })
      const listening = new Promise<void>((resolve, reject) => {
        createInterface({ input: child.stdout! }).on('line', (line) => {
          let entry: Record<string, unknown>
          try { entry = JSON.parse(line) } catch { entry = { msg: line } }
          state.logs.push(entry)
          if (String(entry.msg).startsWith('Server listening at')) resolve()
        })
        child.once('exit', (code) => reject(new Error(`${name} exited with ${code}: ${stderr}`)))
      })
      listening.catch(() => {})
      await bounded(listening, START_MS, `${name} listening`)
    },
    /** Sends `signal` and waits for the exit; SIGKILL past the server's own 10 s grace. */
    async stop (signal: NodeJS.Signals = 'SIGTERM') {
      const child = state.child
      if (!child || child.exitCode !== null || child.signalCode !== null) return state.exited
      child.kill(signal)
      const late = setTimeout(() => child.kill('SIGKILL'), 15_000)
      try { return await state.exited } finally { clearTimeout(late) }
    }
  }
  t.teardown(() => state.stop('SIGKILL'))
  return state
}

export type Instance = ReturnType<typeof instance>

export interface TopologyOptions {
  instances?: number
  replicaDelayMs?: number
  /**
   * The environment of every instance, over the topology's own; a function of the cluster when it
   * needs its URLs (`(cluster) => ({ DATABASE_REPLICA_URLS: cluster.replicaUrl })`).
   */
  env?: Record<string, string> | ((cluster: Cluster) => Record<string, string>)
}

/**
 * The whole deployment: the cluster, `instances` plinth processes (DATABASE_URL through the
 * session-mode PgBouncer, one SECRET_KEY, TRUST_PROXY for nginx) and nginx in front of them.
 */
export async function startTopology (t: Test, { instances: count = 3, replicaDelayMs = 0, env = {} }: TopologyOptions = {}) {
  const cluster = await startCluster(t, { replicaDelayMs })
  const nginxPort = await listenPort()
  const shared = {
    DATABASE_URL: cluster.bouncerSessionUrl,
    SECRET_KEY,
    TRUST_PROXY: '127.0.0.1',
    PUBLIC_URL: `http://127.0.0.1:${nginxPort}`,
    // Two cores shared by every process here: a slow event loop is no overload to shed.
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
    LOG_LEVEL: 'info',
    ...(typeof env === 'function' ? env(cluster) : env)
  }
  const instances: Instance[] = []
  for (let i = 1; i <= count; i++) instances.push(instance(t, cluster, `plinth-${i}`, await listenPort(), shared))
  // The first migrates the empty database alone, so the others' starts are quick and quiet.
  await instances[0]!.start()
  await Promise.all(instances.slice(1).map((one) => one.start()))
  const nginx = await startNginx(t, cluster.dir, nginxPort, instances)
  return { cluster, instances, nginx }
}

export type Topology = Awaited<ReturnType<typeof startTopology>>
