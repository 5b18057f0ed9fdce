#!/usr/bin/env node
import { parseArgs, type ParseArgsConfig } from 'node:util'
import type { TSchema } from '@sinclair/typebox'
import type { DatabaseClient } from './db/client.js'
import { isDatabaseUnavailable, sqlState } from './db/errors.js'

// Each command loads what it needs when it runs, so --help and usage errors answer at once
// (0.6 s instead of 2 s compiled, on this loaded machine).

const USAGE = `Usage: plinth <command> [options]

Commands:
  serve                            run the HTTP server, as npm start does
  migrate                          apply the migrations, create the RESOURCES tables, exit
  create-superuser --email EMAIL   create an active superuser, or promote the account with that
                                   email and replace its password; the password is typed at a
                                   hidden prompt, or read from stdin (one line) when piped
  openapi                          print the OpenAPI 3.1 document as JSON, without a database

Settings come from the environment, as for the server: DATABASE_URL, RESOURCES,
PASSWORD_MIN_LENGTH... (see the README). Exit codes: 0 done, 1 failed, 2 usage error.
`

/** A mistake in the command line or its input: exit 2, with the usage when it would help. */
class UsageError extends Error {
  constructor (message: string, readonly showUsage = false) { super(message) }
}

class Interrupted extends Error {}

type Values = Record<string, string | boolean | undefined>

interface Command {
  options: NonNullable<ParseArgsConfig['options']>
  run (values: Values): Promise<void>
}

const commands: Record<string, Command> = {
  // server.ts starts the server when imported, and owns its shutdown and exit code from there on.
  serve: { options: {}, run: async () => { await import('./server.js') } },
  migrate: { options: {}, run: runMigrate },
  'create-superuser': { options: { email: { type: 'string' } }, run: createSuperuser },
  openapi: { options: {}, run: printOpenapi }
}

async function readConfig () {
  const { ConfigError, loadConfig } = await import('./config.js')
  try {
    return loadConfig()
  } catch (error) {
    throw error instanceof ConfigError ? new Error(`invalid configuration: ${error.message}`) : error
  }
}

async function runMigrate () {
  const { migrate } = await import('./db/migrate.js')
  console.log(await migrate(await readConfig()))
}

/** Applies the same rules as registration (format, length, no NUL) to one field. */
async function check (field: string, schema: TSchema, value: string, hint = '') {
  const { Type } = await import('@sinclair/typebox')
  const { validatorCompiler } = await import('./plugins/validation.js')
  const validate = validatorCompiler({ schema: Type.Object({ [field]: schema }), method: 'POST', url: '', httpPart: 'body' })
  if (validate({ [field]: value }) === true) return
  throw new UsageError(`invalid ${field}: ${validate.errors?.[0]?.message ?? 'refused'}${hint}`)
}

/** Reads one line from the terminal without echoing it (raw mode: Enter, Ctrl-C and backspace are ours to handle). */
function readHidden (prompt: string): Promise<string> {
  const { stdin, stderr } = process
  // Echo goes off before the prompt shows, so nothing typed after it can appear.
  stdin.setRawMode(true)
  stderr.write(prompt)
  stdin.setEncoding('utf8')
  return new Promise((resolve, reject) => {
    let text = ''
    const finish = (error?: Error) => {
      stdin.off('data', onData).setRawMode(false).pause()
      stderr.write('\n')
      if (error) reject(error)
      else resolve(text)
    }
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004') return finish()
        if (char === '\u0003') return finish(new Interrupted())
        text = char === '\u007f' || char === '\b' ? [...text].slice(0, -1).join('') : text + char
      }
    }
    stdin.on('data', onData).resume()
  })
}

/** Never from argv: the process list and the shell history would show it. */
async function readPassword (): Promise<string> {
  if (process.stdin.isTTY) {
    const password = await readHidden('Password: ')
    if (await readHidden('Password (again): ') !== password) throw new UsageError('the two passwords differ')
    return password
  }
  let text = ''
  for await (const chunk of process.stdin.setEncoding('utf8')) text += chunk
  const password = text.replace(/\r?\n$/, '')
  if (password === '') throw new UsageError('no password on stdin')
  if (/[\r\n]/.test(password)) throw new UsageError('stdin must hold the password alone, on one line')
  return password
}

async function createSuperuser ({ email }: Values) {
  if (typeof email !== 'string') throw new UsageError('create-superuser needs --email EMAIL', true)
  const config = await readConfig()
  const { Email, Password } = await import('./schemas/user.js')
  await check('email', Email(), email)
  const password = await readPassword()
  await check('password', Password(config.PASSWORD_MIN_LENGTH), password, ` (PASSWORD_MIN_LENGTH is ${config.PASSWORD_MIN_LENGTH})`)
  const { hashPassword } = await import('./routes/accounts/passwords.js')
  const hashed = await hashPassword(password)

  const { connect } = await import('./db/client.js')
  const { createUsers } = await import('./db/users.js')
  const { createRefreshTokens } = await import('./db/refresh-tokens.js')

  const client = await connect(config.DATABASE_URL)
  try {
    // Like the server's start: a new database gets its tables unless the operator said never.
    if (config.CREATE_TABLES_ON_STARTUP) await client.migrate()
    const users = createUsers(client.db)
    const { created, user } = await users.createIfAbsent({ email, hashed_password: hashed, is_superuser: true, scopes: 'me' })
    if (created) return console.log(`created superuser ${user.email} (id ${user.id})`)
    await users.update(user.id, { hashed_password: hashed, is_superuser: true, is_active: true })
    // As for a password change through the API: the sessions opened with the old password end.
    const ended = await createRefreshTokens(client.db).revokeAll(user.id)
    const change = !user.is_superuser ? 'promoted to active superuser' : user.is_active ? 'already a superuser' : 'reactivated superuser'
    console.log(`existing account ${user.email} (id ${user.id}) ${change}; password replaced, ${ended} refresh token(s) revoked`)
  } finally {
    await client.close()
  }
}

/**
 * The document depends on the settings (RESOURCES, limits), not on data: the app is built on a
 * Drizzle instance without a driver, and with nothing to create at boot it runs no query. On an
 * in-memory PGlite instead the command took 10 to 11 s and 600 to 750 MB here; this, 2 to 5 s and 110 MB.
 */
async function printOpenapi () {
  const config = await readConfig()
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const schema = await import('./db/schema.js')
  const { buildApp } = await import('./app.js')
  const refuse = async () => { throw new Error('plinth openapi runs without a database') }
  const database: DatabaseClient = { db: drizzle.mock({ schema }), driver: 'postgres', migrate: refuse, ping: refuse, close: async () => {} }
  const app = await buildApp({ ...config, CREATE_TABLES_ON_STARTUP: false, FIRST_SUPERUSER_EMAIL: undefined }, { logger: false, database })
  try {
    await app.ready()
    process.stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
  } finally {
    await app.close()
  }
}

/** The driver's own words: Drizzle's wrapper quotes the query and its parameters, a password hash among them. */
function rootMessage (error: unknown): string {
  let current = error
  while (current instanceof Error && current.cause instanceof Error) current = current.cause
  if (!(current instanceof Error)) return String(current)
  return current.message || String((current as { code?: unknown }).code ?? current.name)
}

/** One line on stderr for every failure; returns the exit code. */
function report (error: unknown): number {
  if (error instanceof UsageError) {
    process.stderr.write(`plinth: ${error.message}\n${error.showUsage ? `\n${USAGE}` : ''}`)
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
    throw new UsageError('--password is refused: a password on the command line shows in the process list and the ' +
      'shell history. Type it at the prompt, or pipe it on stdin: plinth create-superuser --email EMAIL < password-file')
  }
  const [name, ...rest] = args
  if (name === '--help' || name === '-h') {
    process.stdout.write(USAGE)
    return
  }
  if (name === undefined) throw new UsageError('no command given', true)
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined
  if (!command) throw new UsageError(`unknown command "${name}"`, true)
  let values: Values
  try {
    ({ values } = parseArgs({ args: rest, options: { ...command.options, help: { type: 'boolean', short: 'h' } }, strict: true }))
  } catch (error) {
    throw new UsageError(`${name}: ${(error as Error).message}`, true)
  }
  if (values.help) process.stdout.write(USAGE)
  else await command.run(values)
}

// No process.exit on success: stdout may be a pipe still draining the OpenAPI document.
await main(process.argv.slice(2)).catch((error: unknown) => { process.exitCode = report(error) })
