#!/usr/bin/env node
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { isDatabaseUnavailable, sqlState } from '../db/errors.js'
import { DOCS, Interrupted, UsageError, rootMessage, type Command, type Option, type Values } from './command.js'
import { createSuperuser } from './create-superuser.js'
import { createUser } from './create-user.js'
import { keys } from './keys.js'
import { migrate } from './migrate.js'
import { openapi } from './openapi.js'
import { secret } from './secret.js'
import { serve } from './serve.js'

const commands: Record<string, Command> = {
  serve,
  migrate,
  'create-superuser': createSuperuser,
  'create-user': createUser,
  keys,
  secret,
  openapi
}

const HELP: Option = { type: 'boolean', description: 'print this help' }

const columns = (rows: Array<[string, string]>) => {
  const width = Math.max(...rows.map(([term]) => term.length)) + 3
  return rows.map(([term, text]) => `  ${term.padEnd(width)}${text}`.trimEnd()).join('\n')
}

function usage (name?: string): string {
  if (name === undefined) {
    return `Usage: plinth <command> [options]

Commands:
${columns(Object.entries(commands).map(([name, command]) => [`${name} ${command.synopsis}`, command.summary]))}

Run plinth <command> --help for what a command does and its options, plinth --version for the
version. Settings come from the environment, as for the server: DATABASE_URL, RESOURCES,
PASSWORD_MIN_LENGTH... (see ${DOCS}/configuration.md).
Exit codes: 0 done, 1 failed, 2 usage error.
`
  }
  const command = commands[name]!
  const options = Object.entries(command.options).map(([option, { value, description }]): [string, string] =>
    [`--${option}${value ? ` ${value}` : ''}`, description])
  const list = options.length > 0 ? columns([...options, ['-h, --help', HELP.description]]) : '  none (-h, --help prints this help)'
  return `Usage: plinth ${`${name} ${command.synopsis}`.trimEnd()}

${command.description}

Options:
${list}

${command.notes}
`
}

function packageVersion (): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json')
    if (existsSync(file)) {
      const { name, version } = JSON.parse(readFileSync(file, 'utf8'))
      if (name === 'plinth' && typeof version === 'string') return version
    }
    if (dirname(dir) === dir) throw new Error('cannot find the package.json of plinth')
  }
}

/** The driver's own words: Drizzle's wrapper quotes the query and its parameters, a password hash among them. */
function report (error: unknown): number {
  if (error instanceof UsageError) {
    process.stderr.write(`plinth: ${error.message}\n${error.usage && `\n${error.usage}`}`)
    return 2
  }
  if (error instanceof Interrupted) return 130
  if (isDatabaseUnavailable(error)) console.error(`plinth: cannot reach the database of DATABASE_URL: ${rootMessage(error)}`)
  else if (sqlState(error) === '42P01') console.error(`plinth: ${rootMessage(error)}: run plinth migrate first, or leave CREATE_TABLES_ON_STARTUP on`)
  else console.error(`plinth: ${rootMessage(error)}`)
  return 1
}

async function main (args: string[]): Promise<void> {
  // Refused before anything else, however it is written: even a failed parse must not go further.
  if (args.some((arg) => /^--password(=|$)/.test(arg))) {
    const example = args[0] === 'create-user' ? 'create-user' : 'create-superuser'
    throw new UsageError('--password is refused: a password on the command line shows in the process list and the ' +
      `shell history. Type it at the prompt, or pipe it on stdin: plinth ${example} --email EMAIL < password-file`)
  }
  const [name, ...rest] = args
  if (name === '--help' || name === '-h') {
    process.stdout.write(usage())
    return
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${packageVersion()}\n`)
    return
  }
  if (name === undefined) throw new UsageError('no command given', usage())
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined
  if (!command) throw new UsageError(`unknown command "${name}"`, usage())
  const options = {
    ...Object.fromEntries(Object.entries(command.options).map(([option, { type }]) => [option, { type }])),
    help: { type: HELP.type, short: 'h' }
  }
  let values: Values
  let positionals: string[]
  try {
    ({ values, positionals } = parseArgs({ args: rest, options, strict: true, allowPositionals: command.words !== undefined }))
  } catch (error) {
    throw new UsageError(`${name}: ${(error as Error).message}`, usage(name))
  }
  if (!values.help && command.words && positionals.join(' ') !== command.words.join(' ')) {
    throw new UsageError(`${name}: expected "${name} ${command.words.join(' ')}"`, usage(name))
  }
  if (values.help) process.stdout.write(usage(name))
  else await command.run(values, usage(name))
}

// A reader that stops early (`plinth openapi | head`) closes the pipe: not a failure of ours.
process.stdout.on('error', (error: NodeJS.ErrnoException) => { if (error.code !== 'EPIPE') throw error })
// No process.exit on success: stdout may be a pipe still draining the OpenAPI document.
await main(process.argv.slice(2)).catch((error: unknown) => { process.exitCode = report(error) })
