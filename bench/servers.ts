import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { performance } from 'node:perf_hooks'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import type { ChildMessage, ParentMessage } from './child.js'

const START_TIMEOUT_MS = 60_000
const ANSWER_TIMEOUT_MS = 5_000
const STOP_TIMEOUT_MS = 5_000

const children = new Set<ChildProcess>()

/**
 * The Node flags `npm start` runs the server with (package.json), given to every server child,
 * the bare baseline included, so the bench measures the server as it is deployed.
 */
export const START_FLAGS: string[] = (() => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }
  return pkg.scripts.start.split(/\s+/).filter((word) => word.startsWith('--'))
})()

export interface Pinning {
  /** Prefix for the server children's command line. */
  prefix: string[]
  note: string
}

/**
 * Server children on CPU 0, this process (the load generator) on CPU 1, so that neither
 * measures the other's work. Children inherit CPU 1 from us, hence their own taskset.
 */
export function pinCpus (): Pinning {
  const unpinned = (why: string) => ({ prefix: [], note: `unpinned: ${why}` })
  if (availableParallelism() < 2) return unpinned('fewer than 2 CPUs')
  const self = spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { encoding: 'utf8' })
  if (self.error) return unpinned('taskset not found')
  if (self.status !== 0) return unpinned(`taskset failed: ${self.stderr.trim()}`)
  return { prefix: ['taskset', '-c', '0'], note: 'servers pinned to CPU 0, load generator to CPU 1 (taskset)' }
}

export interface Server {
  name: string
  url: string
  pid: number | undefined
  /** From spawning the process to its listening, in ms. */
  startMs: number
  /** The child's resident set size in bytes, now. */
  rss (): Promise<number>
}

/** Resolves with the child's next message of `type`; rejects if it exits, fails or is silent for `ms`. */
function answer<T extends ChildMessage['type']> (child: ChildProcess, type: T, ms: number, what: string) {
  return new Promise<Extract<ChildMessage, { type: T }>>((resolve, reject) => {
    const done = (err: Error | undefined, message?: ChildMessage) => {
      clearTimeout(timer)
      child.off('message', onMessage).off('exit', onExit).off('error', done)
      if (err) reject(err)
      else resolve(message as Extract<ChildMessage, { type: T }>)
    }
    const onMessage = (message: ChildMessage) => { if (message.type === type) done(undefined, message) }
    const onExit = (code: number | null, signal: string | null) =>
      done(new Error(`${what}: the server exited (${signal ?? `code ${code}`})`))
    const timer = setTimeout(() => done(new Error(`${what}: no answer within ${ms} ms`)), ms)
    child.on('message', onMessage).on('exit', onExit).on('error', done)
  })
}

/** Starts build/bench/<entry>.js in a child process and waits until it listens. */
export async function startServer (name: string, entry: string, pinning: Pinning, env: NodeJS.ProcessEnv = {}): Promise<Server> {
  const file = fileURLToPath(new URL(`./${entry}.js`, import.meta.url))
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []
  const [command = process.execPath, ...args] = [...pinning.prefix, process.execPath, ...START_FLAGS, ...profile, file]
  const started = performance.now()
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, ...env } })
  track(child)
  const { port } = await answer(child, 'ready', START_TIMEOUT_MS, `starting the ${name} server`)
  return {
    name,
    startMs: performance.now() - started,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    async rss () {
      const reply = answer(child, 'rss', ANSWER_TIMEOUT_MS, `asking the ${name} server for its RSS`)
      child.send({ type: 'rss' } satisfies ParentMessage)
      return (await reply).rss
    }
  }
}

/** Stops one server child (SIGTERM, then SIGKILL after STOP_TIMEOUT_MS). */
export async function stopServer (server: Server) {
  const child = [...children].find((c) => c.pid === server.pid)
  if (child) await stop(child)
}

/** Runs build/bench/<entry>.js to completion on the servers' CPU; resolves with its stdout. */
export async function runPinned (entry: string, args: string[], pinning: Pinning, timeoutMs: number) {
  const file = fileURLToPath(new URL(`./${entry}.js`, import.meta.url))
  const [command = process.execPath, ...rest] = [...pinning.prefix, process.execPath, file, ...args]
  const { stdout } = await promisify(execFile)(command, rest, { timeout: timeoutMs, encoding: 'utf8' })
  return stdout
}

/** A child that stopServers and killServers end with the others (bench/peers starts its own). */
export function track (child: ChildProcess) {
  children.add(child)
  child.once('exit', () => children.delete(child))
}

async function stop (child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
  child.kill('SIGTERM')
  await exited
  clearTimeout(timer)
}

/** Closes every server child, forcefully after STOP_TIMEOUT_MS. */
export async function stopServers () {
  await Promise.all([...children].map(stop))
}

/** Synchronous last resort, for process 'exit'. */
export function killServers () {
  for (const child of children) child.kill('SIGKILL')
}
