import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { ConfigSchema } from '../../config.js'
import { childPoolMode } from './database.js'

const cliTs = new URL('../../cli/index.ts', import.meta.url).pathname
// As test/support/server-process.ts does for server.ts: the same TypeScript loader, none of our settings.
const loader = process.execArgv.filter((arg) => arg.includes('@tapjs/typescript'))
export const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(name in ConfigSchema.properties)))
/** `plinth` from the sources: node, its loader and cli/index.ts. */
export const command = [process.execPath, ...loader, cliTs]

export interface Run { code: number | null, stdout: string, stderr: string }

/** `plinth ...args` in a child process, `input` piped to its stdin and then closed. */
export async function plinth (args: string[], { env = {}, input = '' }: { env?: Record<string, string>, input?: string } = {}): Promise<Run> {
  const child = spawn(command[0]!, [...command.slice(1), ...args], { env: { ...baseEnv, ...childPoolMode(env), ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  child.stdin.end(input)
  const [code] = await once(child, 'close') as [number | null]
  return { code, stdout, stderr }
}
