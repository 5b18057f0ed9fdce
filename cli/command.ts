import type { FileSettings } from '../settings/files.js'

export const DOCS = 'https://github.com/plinth-dev/plinth/blob/main/docs'

/** A command line plinth cannot run: exit code 2, the message, then `usage` if any. */
export class UsageError extends Error {
  constructor (message: string, readonly usage = '') { super(message) }
}

/** What an error says at its root, the cause of its causes. */
export function rootMessage (error: unknown): string {
  let current = error
  while (current instanceof Error && current.cause instanceof Error) current = current.cause
  if (!(current instanceof Error)) return String(current)
  return current.message || String((current as { code?: unknown }).code ?? current.name)
}

/** Ctrl-C at a prompt: exit code 130, as the shell gives. */
export class Interrupted extends Error {}

export type Values = Record<string, string | boolean | undefined>

export interface Option {
  type: 'string' | 'boolean'
  value?: string
  description: string
}

/** What --help says of a command and how it runs; `run` loads what it needs, so --help answers at once. */
export interface Command {
  words?: string[]
  synopsis: string
  summary: string
  description: string
  notes: string
  options: Record<string, Option>
  run (values: Values, usage: string): Promise<void>
}

export const APP: Option = { type: 'string', value: 'MODULE', description: 'a host app: a module whose buildApp export (or default export) builds it' }

export async function readConfig () {
  const { loadConfig } = await import('../config.js')
  return configured(loadConfig)
}

/** Only the files `settings` name, read as a server start reads them. */
export async function readFiles (settings: FileSettings) {
  const { readSettingFiles } = await import('../settings/files.js')
  return configured(() => readSettingFiles(settings))
}

async function configured<T> (read: () => T): Promise<T> {
  const { ConfigError } = await import('../config.js')
  try {
    return read()
  } catch (error) {
    throw error instanceof ConfigError ? new Error(`invalid configuration: ${error.message}`) : error
  }
}
