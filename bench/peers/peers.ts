import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { POOL } from '../../db/client.js'
import { startServer, track, type Pinning } from '../servers.js'

const START_TIMEOUT_MS = 60_000

/** Where the README's install command puts Platformatic DB; PLATFORMATIC_DIR overrides it. */
export const DEFAULT_PLATFORMATIC_DIR = '/tmp/plinth-peers/platformatic'

/** A server under load: where to send the three scenarios' requests. */
export interface Target {
  name: string
  url: string
  /** Path of one item. */
  itemPath (id: number): string
  /** Path of the first page of 20 items, ordered by id, with the total count. */
  listPath: string
  /** How the list's total is read back, to check the peer serves the seeded table. */
  total (body: unknown, headers: Headers): number
  /** Path of the 20 open tasks of highest priority (ties by id, descending), without a total. */
  tasksPath: string
  rss (): Promise<number>
}

export type Detection =
  | { available: true, note: string, start (database: string, pinning: Pinning): Promise<Target> }
  | { available: false, reason: string }

export interface Peer {
  name: string
  detect (): Detection
}

async function freePort () {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  return port
}

/** The parent's death (even SIGKILL) takes the peer down too: it must not keep a CPU busy. */
const pdeathsig = spawnSync('setpriv', ['--help']).status === 0 ? ['setpriv', '--pdeathsig', 'TERM'] : []

/** Resident set size of a process by pid (Linux), 0 when unknown. */
function rssOf (pid: number | undefined) {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return Number(kb ?? 0) * 1024
  } catch {
    return 0
  }
}

/**
 * Spawns a peer pinned like the other servers and waits until `probe` answers 200.
 * taskset and setpriv exec the command, so the child's pid is the server's (for its RSS).
 */
async function startProcess (name: string, command: string[], options: { cwd: string, env: NodeJS.ProcessEnv, pinning: Pinning, probe: string }) {
  const [file = '', ...args] = [...pdeathsig, ...options.pinning.prefix, ...command]
  const child = spawn(file, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'inherit', 'inherit'] })
  track(child)
  const exited = once(child, 'exit').then(([code, signal]) => { throw new Error(`${name} exited during startup (${signal ?? `code ${code}`})`) })
  exited.catch(() => {})
  const deadline = Date.now() + START_TIMEOUT_MS
  while (true) {
    if (child.exitCode !== null || child.signalCode !== null) await exited
    try {
      const res = await fetch(options.probe)
      if (res.ok) break
    } catch {}
    if (Date.now() > deadline) throw new Error(`${name} did not answer ${options.probe} within ${START_TIMEOUT_MS} ms`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return { rss: async () => rssOf(child.pid) }
}

/** The first Python that imports the app's modules, with their versions; PEERS_PYTHON first. */
function findPython () {
  const candidates = [...new Set([process.env.PEERS_PYTHON, 'python3', '/usr/bin/python3'].filter((p): p is string => !!p))]
  const probe = `import importlib, json
found = {}
for name in ('fastapi', 'uvicorn', 'asyncpg', 'uvloop', 'httptools'):
    try:
        found[name] = getattr(importlib.import_module(name), '__version__', '?')
    except Exception:
        pass
print(json.dumps(found))`
  for (const python of candidates) {
    const run = spawnSync(python, ['-c', probe], { encoding: 'utf8' })
    if (run.status !== 0) continue
    const versions = JSON.parse(run.stdout) as Record<string, string>
    if (versions.fastapi && versions.uvicorn && versions.asyncpg) return { python, versions }
  }
  return undefined
}

// Source files are not copied into build/: the app is read from the source tree.
const FASTAPI_DIR = fileURLToPath(new URL('../../../bench/peers/', import.meta.url))

export const fastapi: Peer = {
  name: 'fastapi',
  detect () {
    const found = findPython()
    if (!found) return { available: false, reason: 'skipped: not installed (see README)' }
    const { python, versions: v } = found
    // What `pip install uvicorn[standard]` would run: uvloop and httptools when present.
    const loop = v.uvloop ? 'uvloop' : 'asyncio'
    const http = v.httptools ? 'httptools' : 'h11'
    return {
      available: true,
      note: `${python}: fastapi ${v.fastapi}, uvicorn ${v.uvicorn} (1 worker, ${loop}, ${http}), asyncpg ${v.asyncpg}`,
      async start (database, pinning) {
        const port = await freePort()
        const url = `http://127.0.0.1:${port}`
        const { rss } = await startProcess('fastapi', [
          python, '-m', 'uvicorn', 'fastapi_app:app', '--host', '127.0.0.1', '--port', String(port),
          '--workers', '1', '--loop', loop, '--http', http, '--no-access-log', '--log-level', 'warning'
        ], { cwd: FASTAPI_DIR, env: { PEER_DATABASE_URL: database }, pinning, probe: `${url}/items?limit=1` })
        return {
          name: 'fastapi',
          url,
          itemPath: (id) => `/items/${id}`,
          listPath: '/items?offset=0&limit=20',
          total: (body) => (body as { total: number }).total,
          tasksPath: '/tasks?status=open&sort=-priority&limit=20',
          rss
        }
      }
    }
  }
}

export const platformatic: Peer = {
  name: 'platformatic',
  detect () {
    const dir = process.env.PLATFORMATIC_DIR || DEFAULT_PLATFORMATIC_DIR
    const db = join(dir, 'node_modules', '@platformatic', 'db')
    if (!existsSync(join(db, 'package.json'))) return { available: false, reason: 'skipped: not installed (see README)' }
    const { version } = JSON.parse(readFileSync(join(db, 'package.json'), 'utf8')) as { version: string }
    // 3.x changed the configuration and needs Node 22; this runner speaks 2.x.
    if (!version.startsWith('2.')) return { available: false, reason: `skipped: @platformatic/db ${version} in ${dir}; install 2.x (see README)` }
    return {
      available: true,
      note: `@platformatic/db ${version} from ${dir}`,
      async start (database, pinning) {
        const port = await freePort()
        const url = `http://127.0.0.1:${port}`
        const folder = mkdtempSync(join(tmpdir(), 'plinth-peers-'))
        // No migrations: Platformatic reads the schema plinth's migrations and resource plugin
        // made and generates REST routes for `items` and `tasks` only. Logging, GraphQL and events off, as in the other servers;
        // the same pool size as plinth's postgres.js client.
        const config = {
          // 'fatal': requests still queued when the run stops it fail noisily; errors under load show as non-2xx.
          server: { hostname: '127.0.0.1', port, logger: { level: 'fatal' } },
          db: {
            connectionString: database,
            poolSize: POOL,
            include: { items: true, tasks: true },
            openapi: true,
            graphql: false,
            events: false
          },
          watch: false
        }
        writeFileSync(join(folder, 'platformatic.db.json'), JSON.stringify(config, null, 2))
        try {
          const { rss } = await startProcess('platformatic', [
            process.execPath, join(db, 'db.mjs'), 'start', '-c', 'platformatic.db.json'
          ], { cwd: folder, env: {}, pinning, probe: `${url}/items?limit=1` })
          return {
            name: 'platformatic',
            url,
            itemPath: (id) => `/items/${id}`,
            // totalCount=true adds X-Total-Count, a count(*) whenever the page is full; without
            // orderby the rows come in no defined order, and plinth's pages are ordered by id.
            listPath: '/items?limit=20&offset=0&totalCount=true&orderby.id=asc',
            total: (_body, headers) => Number(headers.get('x-total-count')),
            // No totalCount: plinth's list sends X-Total-Count only with count=exact. orderby.id
            // breaks the ties in plinth's direction (the sort's last field).
            tasksPath: '/tasks?where.status.eq=open&orderby.priority=desc&orderby.id=desc&limit=20',
            rss
          }
        } finally {
          // Read once at startup: the folder is not needed afterwards.
          rmSync(folder, { recursive: true, force: true })
        }
      }
    }
  }
}

export const postgresJs: Peer = {
  name: 'postgres.js',
  detect () {
    // A dependency of plinth: always there.
    const { version } = JSON.parse(readFileSync(new URL('../../../node_modules/postgres/package.json', import.meta.url), 'utf8')) as { version: string }
    return {
      available: true,
      note: `bare Fastify + postgres.js ${version} (its defaults: prepared statements, pipelining), one query per request (bench/peers/raw-server.ts)`,
      async start (database, pinning) {
        const server = await startServer('postgres.js', 'peers/raw-server', pinning, { BENCH_DATABASE_URL: database })
        return {
          name: 'postgres.js',
          url: server.url,
          itemPath: (id) => `/items/${id}`,
          listPath: '/items?offset=0&limit=20',
          total: (body) => (body as { total: number }).total,
          tasksPath: '/tasks?status=open&sort=-priority&limit=20',
          rss: () => server.rss()
        }
      }
    }
  }
}

export const peers: Peer[] = [postgresJs, fastapi, platformatic]
