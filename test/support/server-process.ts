import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { createInterface } from 'node:readline'
import type { Test } from 'tap'
import { ConfigSchema } from '../../config.js'
import { NO_EVENT_LOOP_SHEDDING, NO_RATE_LIMITS } from './app.js'
import { childPoolMode } from './database.js'

const serverTs = new URL('../../server.ts', import.meta.url).pathname
// The child runs server.ts through the same TypeScript loader (and its environment) as this test,
// minus any setting of ours that the outer environment may carry.
const loader = process.execArgv.filter((arg) => arg.includes('@tapjs/typescript'))
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in ConfigSchema.properties)))

/**
 * server.ts in a child process, as `npm start` runs it, on a free port of 127.0.0.1. Resolves
 * `listening` with its base URL; `logs` collects its pino lines. Killed when the test ends.
 */
export function startServer (t: Test, env: Record<string, string>) {
  const child = spawn(process.execPath, [...loader, serverTs], {
    env: { ...baseEnv, HOST: '127.0.0.1', PORT: '0', ...Object.fromEntries(Object.entries({ ...NO_RATE_LIMITS, ...NO_EVENT_LOOP_SHEDDING }).map(([name, value]) => [name, String(value)])), ...childPoolMode(env), ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const logs: Array<Record<string, unknown>> = []
  let stderr = ''
  child.stderr.on('data', (chunk) => { stderr += chunk })
  const listening = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const entry = JSON.parse(line)
      logs.push(entry)
      const address = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(String(entry.msg))?.[1]
      if (address) resolve(address)
    })
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}${JSON.stringify(logs.at(-1))}`)))
  })
  listening.catch(() => {}) // a test that expects an early exit never awaits it
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>
  return { child, logs, listening, exited, stderr: () => stderr }
}

export type ServerProcess = ReturnType<typeof startServer>

/** A TCP port that was free a moment ago on 127.0.0.1, for a server that cannot be told to take port 0. */
export async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}
