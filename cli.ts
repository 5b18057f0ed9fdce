#!/usr/bin/env node
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from './config.js'
import type { Database, DatabaseClient } from './db/client.js'
import type { ResourceOptions } from './routes/resources/options.js'
import { isDatabaseUnavailable, sqlState } from './db/errors.js'

// Each command loads what it needs when it runs, so --help and usage errors answer at once.

/** The docs, which the package does not ship: where --help sends a reader. */
const DOCS = 'https://github.com/plinth-dev/plinth/blob/main/docs'

class UsageError extends Error {
  constructor (message: string, readonly usage = '') { super(message) }
}

class Interrupted extends Error {}

type Values = Record<string, string | boolean | undefined>

interface Option {
  type: 'string' | 'boolean'
  value?: string
  description: string
}

interface Command {
  /** The words that must follow the command's name, as in `plinth keys generate`. */
  words?: string[]
  synopsis: string
  summary: string
  description: string
  notes: string
  options: Record<string, Option>
  run (values: Values): Promise<void>
}

const APP: Option = { type: 'string', value: 'MODULE', description: 'a host app: a module whose buildApp export (or default export) builds it' }

const commands: Record<string, Command> = {
  serve: {
    synopsis: '',
    summary: 'run the HTTP server, as npm start does',
    description: 'Runs the HTTP server until SIGINT or SIGTERM, then closes it gracefully, as npm start does\n' +
      `(without its V8 flags: see ${DOCS}/operations.md).`,
    notes: `Environment: HOST, PORT and DATABASE_URL above all, and every setting of\n${DOCS}/configuration.md`,
    options: {},
    run: async () => { await import('./server.js') }
  },
  migrate: {
    synopsis: '[--app MODULE]',
    summary: 'apply the migrations, create or update the resource tables, say what it did',
    description: 'Applies the migrations not yet applied, creates the tables of RESOURCES, creates or adds\n' +
      'the new fields of the RESOURCES_FILE tables, prints what it did and exits. With --app, does\n' +
      'the same for a host app: the database of its dbPlugin, and the table of each of its\n' +
      'resourcePlugins, whatever their migrate and createTable say.',
    notes: 'Environment: DATABASE_URL, RESOURCES, RESOURCES_FILE; with --app, the app\'s own settings.\n' +
      `The module --app takes: ${DOCS}/plugins.md#your-own-app-from-the-command-line`,
    options: { app: APP },
    run: runMigrate
  },
  'create-superuser': {
    synopsis: '--email EMAIL',
    summary: 'create or promote a superuser, password from a prompt or stdin',
    description: 'Creates an active superuser with that email, its address verified. If the account exists,\n' +
      'makes it an active superuser, replaces its password and revokes its refresh tokens.',
    notes: 'The password is never an option (--password is refused). On a terminal it is typed twice\n' +
      'at a hidden prompt; otherwise stdin must hold it alone, on one line:\n' +
      '  plinth create-superuser --email admin@example.com < password-file\n\n' +
      'Environment: DATABASE_URL, PASSWORD_MIN_LENGTH, CREATE_TABLES_ON_STARTUP.',
    options: { email: { type: 'string', value: 'EMAIL', description: 'the account\'s email (required)' } },
    run: createSuperuser
  },
  'create-user': {
    synopsis: '--email EMAIL [options]',
    summary: 'create a new account, password from a prompt or stdin',
    description: 'Creates an active, unverified, regular account with that email and the scope me, unless\n' +
      'the options say otherwise. An existing account is never changed: a taken email fails.',
    notes: 'The password is never an option (--password is refused). On a terminal it is typed twice\n' +
      'at a hidden prompt; otherwise stdin must hold it alone, on one line:\n' +
      '  plinth create-user --email ada@example.com --scopes me,items:read < password-file\n\n' +
      'A scope name is a lower-case letter, then up to 63 of a-z, 0-9 and : _ . - as in the API.\n\n' +
      'Environment: DATABASE_URL, PASSWORD_MIN_LENGTH, CREATE_TABLES_ON_STARTUP.',
    options: {
      email: { type: 'string', value: 'EMAIL', description: 'the account\'s email (required)' },
      superuser: { type: 'boolean', description: 'make it a superuser' },
      inactive: { type: 'boolean', description: 'create it inactive: it cannot log in until activated' },
      verified: { type: 'boolean', description: 'mark its email as verified' },
      scopes: { type: 'string', value: 'A,B', description: 'its scopes, comma-separated (default: me; \'\' for none)' }
    },
    run: createUser
  },
  keys: {
    words: ['generate'],
    synopsis: 'generate [--algorithm ALG]',
    summary: 'print a new token signing key, a private JWK for JWT_PRIVATE_KEY',
    description: 'Prints a new private key as one line of JWK JSON, with its kid (its RFC 7638 thumbprint), for\n' +
      'JWT_PRIVATE_KEY or a JWT_PRIVATE_KEY_FILE. It opens no database.',
    notes: 'Keep the output secret. To rotate: publish the old key in JWT_PREVIOUS_KEYS (its public part is\n' +
      'enough), set the new one, and drop the old one once the tokens it signed have expired\n' +
      `(REFRESH_TOKEN_EXPIRE_DAYS). See ${DOCS}/operations.md#rotating-the-signing-key`,
    options: { algorithm: { type: 'string', value: 'ALG', description: 'EdDSA (the default, Ed25519) or ES256 (P-256)' } },
    run: generateKeys
  },
  secret: {
    words: ['generate'],
    synopsis: 'generate',
    summary: 'print a new SECRET_KEY: 32 random bytes, base64url',
    description: 'Prints 32 random bytes from the system\'s secure source, base64url-encoded on one line, for\n' +
      'SECRET_KEY, which must hold at least 32 bytes. It opens no database.',
    notes: 'Keep the output secret, and give every process of one database the same key: a new key ends\n' +
      `every HS256 token signed with the old one. See ${DOCS}/configuration.md`,
    options: {},
    run: generateSecret
  },
  openapi: {
    synopsis: '[--app MODULE]',
    summary: 'print the OpenAPI 3.1 document as JSON, without a database',
    description: 'Prints the OpenAPI 3.1 document the server serves at /docs/json, as JSON on stdout. With\n' +
      '--app, prints a host app\'s own document instead: its routes and resources beside plinth\'s. It\n' +
      'opens no database: plinth\'s plugins are given none, and create no table.',
    notes: 'Environment: RESOURCES, RESOURCES_FILE, and the limits the document states (DEFAULT_PAGE_LIMIT,\n' +
      'MAX_PAGE_LIMIT, PASSWORD_MIN_LENGTH...); with --app, the app\'s own settings.\n\n' +
      'A typed client: npx openapi-typescript openapi.json -o api.d.ts, then openapi-fetch; see\n' +
      `${DOCS}/plugins.md#the-typed-client`,
    options: { app: APP },
    run: (values) => typeof values.app === 'string' ? printAppOpenapi(values.app) : printOpenapi()
  }
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

/** plinth's own package.json: beside cli.ts when run from source, one folder up from dist/cli.js. */
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

async function readConfig () {
  const { ConfigError, loadConfig } = await import('./config.js')
  try {
    return loadConfig()
  } catch (error) {
    throw error instanceof ConfigError ? new Error(`invalid configuration: ${error.message}`) : error
  }
}

async function runMigrate (values: Values) {
  if (typeof values.app === 'string') return migrateApp(values.app)
  const { migrate } = await import('./db/migrate.js')
  const { fieldTablesOf } = await import('./config.js')
  const config = await readConfig()
  console.log(await migrate(config.DATABASE_URL, { resources: config.RESOURCES, fieldTables: fieldTablesOf(config) }))
}

/** Why `value` fails `schema` as the API's validator words it, or undefined when it passes. */
async function refusal (field: string, schema: TSchema, value: string): Promise<string | undefined> {
  const { Type } = await import('@sinclair/typebox')
  const { validatorCompiler } = await import('./http/validation.js')
  const validate = validatorCompiler({ schema: Type.Object({ [field]: schema }), method: 'POST', url: '', httpPart: 'body' })
  if (validate({ [field]: value }) === true) return undefined
  return validate.errors?.[0]?.message ?? 'refused'
}

async function check (field: string, schema: TSchema, value: string, hint = '') {
  const reason = await refusal(field, schema, value)
  if (reason !== undefined) throw new UsageError(`invalid ${field}: ${reason}${hint}`)
}

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

/** The settings and the checked email of an account command, before its password is read. */
async function accountEmail (name: string, email: Values[string]) {
  if (typeof email !== 'string') throw new UsageError(`${name} needs --email EMAIL`, usage(name))
  const config = await readConfig()
  const { Email } = await import('./schemas/user.js')
  await check('email', Email(), email)
  return { config, email }
}

/** The password read, checked as the API checks it, and hashed: all before any database is opened. */
async function hashedPassword (config: Config) {
  const password = await readPassword()
  const { Password } = await import('./schemas/user.js')
  await check('password', Password(config.PASSWORD_MIN_LENGTH), password, ` (PASSWORD_MIN_LENGTH is ${config.PASSWORD_MIN_LENGTH})`)
  const { hashPassword } = await import('./plugins/auth/passwords.js')
  return hashPassword(password)
}

/** The database of DATABASE_URL, migrated first when CREATE_TABLES_ON_STARTUP, closed once `use` is done. */
async function withDatabase (config: Config, use: (db: Database) => Promise<void>) {
  const { connect } = await import('./db/client.js')
  const client = await connect(config.DATABASE_URL)
  try {
    if (config.CREATE_TABLES_ON_STARTUP) await client.migrate()
    await use(client.db)
  } finally {
    await client.close()
  }
}

async function createSuperuser (values: Values) {
  const { config, email } = await accountEmail('create-superuser', values.email)
  const hashed = await hashedPassword(config)
  const { createUserRepository } = await import('./db/users.js')
  const { createSessionRepository } = await import('./db/sessions.js')
  await withDatabase(config, async (db) => {
    const users = createUserRepository(db)
    const { created, user } = await users.createIfAbsent({ email, hashed_password: hashed, is_superuser: true, is_verified: true, scopes: 'me' })
    if (created) return console.log(`created superuser ${user.email} (id ${user.id})`)
    await users.update(user.id, { hashed_password: hashed, is_superuser: true, is_active: true })
    // As for a password change through the API: the sessions opened with the old password end.
    const ended = await createSessionRepository(db).revokeAll(user.id)
    const change = !user.is_superuser ? 'promoted to active superuser' : user.is_active ? 'already a superuser' : 'reactivated superuser'
    console.log(`existing account ${user.email} (id ${user.id}) ${change}; password replaced, ${ended} refresh token(s) revoked`)
  })
}

/** `--scopes` as the API takes `scopes`: at most 32 names, each a ScopeName; empty for none. */
async function scopeNames (text: string): Promise<string[]> {
  const names = text.trim() === '' ? [] : text.split(',').map((name) => name.trim())
  if (names.length > 32) throw new UsageError(`invalid scopes: at most 32 (got ${names.length})`)
  const { ScopeName } = await import('./schemas/user.js')
  for (const name of names) {
    const reason = await refusal('scope', ScopeName(), name)
    if (reason !== undefined) throw new UsageError(`invalid scope "${name}": ${reason}`)
  }
  return names
}

async function createUser (values: Values) {
  const { config, email } = await accountEmail('create-user', values.email)
  const scopes = typeof values.scopes === 'string' ? await scopeNames(values.scopes) : undefined
  const hashed = await hashedPassword(config)
  const { createUserRepository, scopeText } = await import('./db/users.js')
  await withDatabase(config, async (db) => {
    const user = await createUserRepository(db).create({
      email,
      hashed_password: hashed,
      is_superuser: values.superuser === true,
      is_active: values.inactive !== true,
      is_verified: values.verified === true,
      ...(scopes && { scopes: scopeText(scopes) })
    })
    if (!user) throw new Error(`the email ${email.toLowerCase()} is already registered`)
    const traits = [user.is_superuser && 'superuser', user.is_active ? 'active' : 'inactive', user.is_verified ? 'verified' : 'unverified',
      user.scopes === '' ? 'no scopes' : `scopes ${user.scopes}`]
    console.log(`created user ${user.email} (id ${user.id}): ${traits.filter(Boolean).join(', ')}`)
  })
}

async function generateKeys (values: Values) {
  const algorithm = values.algorithm ?? 'EdDSA'
  if (algorithm !== 'EdDSA' && algorithm !== 'ES256') throw new UsageError(`keys: --algorithm takes EdDSA or ES256 (got ${String(algorithm)})`, usage('keys'))
  const { generateKey } = await import('./plugins/auth/keys.js')
  process.stdout.write(`${JSON.stringify(generateKey(algorithm))}\n`)
}

async function generateSecret () {
  const { randomBytes } = await import('node:crypto')
  process.stdout.write(`${randomBytes(32).toString('base64url')}\n`)
}

/** A driverless Drizzle that refuses every query: the document depends on settings, not data. */
async function noDatabase (): Promise<DatabaseClient> {
  const { drizzle } = await import('drizzle-orm/postgres-js')
  const schema = await import('./db/schema.js')
  const refuse = async () => { throw new Error('plinth openapi runs without a database') }
  return { db: drizzle.mock({ schema }), driver: 'postgres', load: () => ({ size: 0, running: 0, waiting: 0 }), migrate: refuse, ping: refuse, close: async () => {} }
}

/** Built with nothing to create at boot on no database, the server's document opens none. */
async function printOpenapi () {
  const config = await readConfig()
  const { buildApp } = await import('./app.js')
  const app = await buildApp({ ...config, CREATE_TABLES_ON_STARTUP: false, FIRST_SUPERUSER_EMAIL: undefined }, { logger: false, database: await noDatabase() })
  try {
    await app.ready()
    process.stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
  } finally {
    await app.close()
  }
}

// fastify-plugin's mark on a plugin, with the name plinth's plugins are registered under.
const PLUGIN_META = Symbol.for('plugin-meta')

type Plugin = ((app: FastifyInstance, options: never) => unknown) & { [PLUGIN_META]?: { name?: string } }
type Options = Record<string, unknown>

/** How a command changes one of plinth's plugins, known by its fastify-plugin name, as a host app registers it. */
interface Rewrite {
  plugin?: (plugin: Plugin) => Plugin
  options: (options: Options | undefined) => Options
}

/** Makes `app.register` rewrite plinth's plugins; its child contexts, made with Object.create, inherit the wrapper. */
function rewriteRegistrations (app: FastifyInstance, rewrites: Record<string, Rewrite>) {
  const register = app.register
  app.register = function (this: FastifyInstance, plugin: Plugin, options?: Options | ((parent: FastifyInstance) => Options)) {
    const name = plugin[PLUGIN_META]?.name
    const rewrite = name !== undefined && Object.hasOwn(rewrites, name) ? rewrites[name] : undefined
    if (!rewrite) return register.call(this, plugin as never, options as never)
    const rewritten = typeof options === 'function' ? (parent: FastifyInstance) => rewrite.options(options(parent)) : rewrite.options(options)
    return register.call(this, (rewrite.plugin?.(plugin) ?? plugin) as never, rewritten as never)
  } as unknown as typeof register
}

/**
 * The app of `--app MODULE`, readied: the module's buildApp export, or its default export, called
 * with no argument. Every Fastify instance made meanwhile registers plinth's plugins through `rewrites`.
 */
async function hostApp (path: string, rewrites: Record<string, Rewrite>): Promise<FastifyInstance> {
  const { resolve } = await import('node:path')
  const { pathToFileURL } = await import('node:url')
  const { subscribe, unsubscribe } = await import('node:diagnostics_channel')
  const file = resolve(path)
  if (!existsSync(file)) throw new Error(`--app ${path}: no such file`)
  // Fastify announces each instance it makes, before any plugin is registered on it.
  const onInstance = (message: unknown) => rewriteRegistrations((message as { fastify: FastifyInstance }).fastify, rewrites)
  subscribe('fastify.initialization', onInstance)
  try {
    const module = await import(pathToFileURL(file).href) as { buildApp?: unknown, default?: unknown }
    const build = module.buildApp ?? module.default
    if (typeof build !== 'function') throw new Error(`--app ${path}: the module exports no buildApp function, nor a default one, that builds the app`)
    const app = await build() as FastifyInstance | undefined
    if (typeof app?.ready !== 'function') throw new Error(`--app ${path}: buildApp returned ${String(app)}, not a Fastify app`)
    try {
      await app.ready()
    } catch (error) {
      await app.close()
      throw error
    }
    return app
  } finally {
    unsubscribe('fastify.initialization', onInstance)
  }
}

// Run for the document alone, a host app's boot must neither reach a database nor create anything.
const offline = (database: DatabaseClient): Record<string, Rewrite> => ({
  'plinth-db': { options: () => ({ client: database, migrate: false }) },
  'plinth-resource': { options: (options) => ({ ...options, createTable: false }) },
  'plinth-accounts': { options: (options) => ({ ...options, firstSuperuser: undefined }) }
})

async function printAppOpenapi (path: string) {
  const app = await hostApp(path, offline(await noDatabase()))
  try {
    if (typeof app.swagger !== 'function') throw new Error(`--app ${path}: the app has no OpenAPI document: register docsPlugin (or @fastify/swagger) in buildApp`)
    process.stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
  } finally {
    await app.close()
  }
}

/**
 * `migrate --app`: the host app booted with no schema work, then migrated and every resource's table
 * created or updated, whatever the app's own switches say, and what that changed, in one line.
 */
async function migrateApp (path: string) {
  const { changes, schemaState } = await import('./db/migrate.js')
  const { createTables } = await import('./db/resources.js')
  const { resolveResourceOptions } = await import('./routes/resources/options.js')
  const fp = (await import('fastify-plugin')).default
  let opened: { client: DatabaseClient, before: Awaited<ReturnType<typeof schemaState>> } | undefined
  const resources: ResourceOptions[] = []
  // Read before anything changes it; the work itself waits for the boot, which the host's plugin timeout bounds.
  const reading = (plugin: Plugin): Plugin => fp(async (app: FastifyInstance, options: Options) => {
    await (plugin as (app: FastifyInstance, options: Options) => Promise<void>)(app, { ...options, migrate: false })
    opened = { client: app.plinthDb, before: await schemaState(app.plinthDb.db) }
  }, { name: 'plinth-db', fastify: '5.x' })
  const app = await hostApp(path, {
    'plinth-db': { plugin: reading, options: (options) => ({ ...options }) },
    'plinth-resource': {
      options: (options) => {
        resources.push(options as unknown as ResourceOptions)
        return { ...options, createTable: false }
      }
    },
    'plinth-accounts': { options: (options) => ({ ...options, firstSuperuser: undefined }) }
  })
  try {
    if (!opened) throw new Error(`--app ${path}: the app registers no dbPlugin: there is no database to migrate`)
    const tables = resources.map((options) => resolveResourceOptions(options))
    const records = tables.filter((table) => !table.fields).map((table) => table.table)
    await createTables(opened.client, records, tables.filter((table) => table.fields).map(({ table, fields = [], owner, indexes }) => ({ table, fields, owner, indexes })))
    console.log(changes(opened.before, await schemaState(opened.client.db), tables.map((table) => table.table), opened.client.driver))
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
  else await command.run(values)
}

// A reader that stops early (`plinth openapi | head`) closes the pipe: not a failure of ours.
process.stdout.on('error', (error: NodeJS.ErrnoException) => { if (error.code !== 'EPIPE') throw error })
// No process.exit on success: stdout may be a pipe still draining the OpenAPI document.
await main(process.argv.slice(2)).catch((error: unknown) => { process.exitCode = report(error) })
