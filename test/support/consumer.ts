import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import type { Test } from 'tap'
import { ConfigSchema } from '../../config.js'

// Helpers for the consumer tests, which install the packed tarball into a scratch app outside the
// repo and run it with plain node, as a new user would.

/**
 * The environment of a new user's shell: this process's, minus what tap and npm add for a test
 * run (tap's NODE_OPTIONS loader, npm's script variables that point into the repo) and minus any
 * setting of plinth's, so that only what a step sets explicitly reaches the scratch app.
 */
export function userEnv (extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const ours = new Set(Object.keys(ConfigSchema.properties))
  const foreign = (name: string) => ours.has(name) || name === 'NODE_OPTIONS' || name === 'INIT_CWD' ||
    /^(TAP|_TAPJS|TS_NODE)/.test(name) || (/^npm_/.test(name) && !/^npm_config_/.test(name)) ||
    name === 'npm_config_local_prefix'
  return { ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !foreign(name))), ...extra }
}

export interface Run {
  command: string
  code: number | null
  signal: NodeJS.Signals | null
  timedOut: boolean
  stdout: string
  stderr: string
}

/**
 * Runs a command to its end, killed (with its process group) after `timeout` ms. Never rejects:
 * the caller asserts on the result and shows it when a step fails.
 */
export async function run (file: string, args: string[], options: { cwd: string, env?: NodeJS.ProcessEnv, timeout: number }): Promise<Run> {
  const command = [file, ...args].join(' ')
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: options.env ?? userEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true // its own process group, so a timeout also stops what npm started
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      child.kill('SIGKILL')
    }
  }, options.timeout)
  try {
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
      child.once('error', (err) => { stderr += String(err); resolve([null, null]) })
      child.once('close', (code, signal) => resolve([code, signal]))
    })
    return { command, code, signal, timedOut, stdout, stderr }
  } finally {
    clearTimeout(timer)
  }
}

const tail = (text: string, lines = 60) => text.trimEnd().split('\n').slice(-lines).join('\n')

/** What a failed step shows: the command, how it ended and the end of its output. */
export function outcome (result: Run) {
  return {
    command: result.command,
    exit: result.timedOut ? 'timed out' : result.signal ?? result.code,
    stdout: tail(result.stdout),
    stderr: tail(result.stderr)
  }
}

/** Asserts that the command exited 0; its output is in the failure's diagnostics. */
export function succeeded (t: Test, result: Run, message: string) {
  return t.ok(result.code === 0 && !result.timedOut, message, outcome(result))
}

/**
 * `node <script>` in `cwd`, a long-running app logging pino lines on stdout. `listening` resolves
 * with the first "Server listening at" address, and rejects with the app's output when it exits
 * first or does not listen within `timeout` ms. SIGKILLed (by its pid) when the test ends.
 */
export function startApp (t: Test, script: string, options: { cwd: string, env: NodeJS.ProcessEnv, timeout: number }) {
  const child = spawn(process.execPath, [script], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  let stdout = ''
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  const output = () => ({ stdout: tail(stdout), stderr: tail(stderr) })
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(Object.assign(new Error(`${script} did not listen within ${options.timeout} ms`), output())), options.timeout)
    createInterface({ input: child.stdout }).on('line', (line) => {
      stdout += `${line}\n`
      const address = /Server listening at (http:\/\/[^\s"]+)/.exec(line)?.[1]
      if (address) {
        clearTimeout(timer)
        resolve(address)
      }
    })
    exited.then(([code, signal]) => {
      clearTimeout(timer)
      reject(Object.assign(new Error(`${script} exited (${signal ?? code}) before listening`), output()))
    })
  })
  listening.catch(() => {})
  return { child, listening, exited, output }
}

/** Waits for a child's exit for at most `timeout` ms: its [code, signal], or undefined. */
export async function exitWithin (exited: Promise<[number | null, NodeJS.Signals | null]>, timeout: number) {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), timeout) })
  try {
    return await Promise.race([exited, late])
  } finally {
    clearTimeout(timer)
  }
}
