import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { Validator } from '@seriousme/openapi-schema-validator'
import { eq, getTableName, is, sql, type SQL } from 'drizzle-orm'
import { PgTable } from 'drizzle-orm/pg-core'
import t, { type Test } from 'tap'
import { buildApp, type App } from '../app.js'
import { type DatabaseClient } from '../db/client.js'
import * as schema from '../db/schema.js'
import { loadSigningKeys, thumbprint } from '../plugins/auth/keys.js'
import { verifyPassword } from '../plugins/auth/passwords.js'
import { DEFAULT_RATE_LIMITS, PASSWORD, build, login, register } from './support/app.js'
import { baseEnv, command, plinth } from './support/cli.js'
import { TEST_DATABASE_URL, freshPostgresUrl, connectTo } from './support/database.js'
import { httpRequest } from './support/http.js'

const UNREACHABLE = 'postgres://plinth@127.0.0.1:1/none'

const exists = (path: string) => stat(path).then(() => true, () => false)

async function rows<T> (client: DatabaseClient, query: SQL): Promise<T[]> {
  // postgres.js answers with the rows, PGlite with { rows }.
  const result = await client.db.execute(query) as unknown
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows)
}

/** The app in this process on the database the CLI wrote, closed (PGlite: one process at a time) before `use` returns. */
async function withApp (url: string, use: (app: App) => Promise<void>) {
  const database = await connectTo(url)
  const app = await buildApp({}, { logger: false, database })
  try {
    await use(app)
  } finally {
    await app.close()
    await database.close()
  }
}

const loginForm = (email: string, password: string) => ({
  method: 'POST' as const,
  url: '/api/v1/auth/login',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  payload: new URLSearchParams({ username: email, password }).toString()
})

/** A place no process has opened yet: a PGlite folder to be, or a new PostgreSQL database. */
async function newDatabase (t: Test) {
  if (TEST_DATABASE_URL) return freshPostgresUrl(t)
  const dir = await mkdtemp('/tmp/plinth-cli-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return `pglite://${dir}/data`
}

/** A PGlite folder that must still not exist after a refused command: it proves the database was never opened. */
async function untouched (t: Test) {
  const dir = await mkdtemp('/tmp/plinth-cli-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return { env: { DATABASE_URL: `pglite://${dir}/data` }, opened: () => exists(`${dir}/data`) }
}

const commandNames = ['serve', 'migrate', 'create-superuser', 'create-user', 'openapi']

const { repository } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
const DOCS = `${String(repository.url).replace(/^git\+/, '').replace(/\.git$/, '')}/blob/main/docs/`

/** Every docs/*.md a help names must be a URL of the repository's docs: the package ships no docs/ to open. */
function docsByUrl (t: Test, help: string, name: string) {
  const mentions = [...help.matchAll(/(\S*)docs\/[\w-]+\.md/g)]
  for (const [mention, before] of mentions) t.equal(`${before}docs/`, DOCS, `${name}: ${mention} is a URL`)
  return mentions.length
}

t.test('--help is usage on stdout with 0; no command or an unknown one, usage on stderr with 2', async (t) => {
  const [help, short, none, unknown] = await Promise.all([plinth(['--help']), plinth(['-h']), plinth([]), plinth(['frobnicate'])])
  t.equal(help.code, 0)
  t.match(help.stdout, /^Usage: plinth <command>/)
  for (const name of commandNames) t.match(help.stdout, new RegExp(`^  ${name} `, 'm'), `lists ${name}`)
  t.match(help.stdout, /create-superuser --email EMAIL/)
  t.match(help.stdout, /create-user --email EMAIL \[options\]/)
  t.match(help.stdout, /plinth <command> --help/)
  t.match(help.stdout, /plinth --version/)
  t.equal(docsByUrl(t, help.stdout, 'plinth --help'), 1, 'it points at the configuration')
  t.equal(help.stderr, '')
  t.same(short, help, '-h is --help')
  t.same([none.code, none.stdout], [2, ''])
  t.equal(none.stderr, `plinth: no command given\n\n${help.stdout}`)
  t.same([unknown.code, unknown.stdout], [2, ''])
  t.equal(unknown.stderr, `plinth: unknown command "frobnicate"\n\n${help.stdout}`)
})

t.test('--version and -v print the version of package.json and exit 0', async (t) => {
  const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
  const [long, short] = await Promise.all([plinth(['--version']), plinth(['-v'])])
  t.same(long, { code: 0, stdout: `${version}\n`, stderr: '' })
  t.same(short, long)
})

t.test('<command> --help prints that command\'s own usage with 0 and runs nothing', async (t) => {
  const target = await untouched(t)
  // An unreachable database: a command that ran instead of its help would fail on it.
  const env = { ...target.env, DATABASE_URL: UNREACHABLE }
  const runs = await Promise.all(commandNames.flatMap((name) => [
    plinth([name, '--help'], { env, input: `${PASSWORD}\n` }), plinth([name, '-h'], { env, input: `${PASSWORD}\n` })
  ]))
  const helps = new Map(commandNames.map((name, i) => [name, runs[2 * i]!.stdout]))
  commandNames.forEach((name, i) => {
    const [long, short] = [runs[2 * i]!, runs[2 * i + 1]!]
    t.same([long.code, long.stderr], [0, ''], `${name} --help`)
    t.match(long.stdout, new RegExp(`^Usage: plinth ${name}\\b[^\\n]*\\n\\n[A-Z]`), `${name}: its synopsis, then what it does`)
    t.match(long.stdout, /\nOptions:\n/)
    t.match(long.stdout, /\nEnvironment: [^\n]*\b(DATABASE_URL|RESOURCES)\b/, `${name}: the settings it reads`)
    t.notMatch(long.stdout, /Commands:|<command>/, `${name}: not the global usage`)
    t.same(short, long, `${name}: -h is --help`)
  })
  t.equal(new Set(helps.values()).size, commandNames.length, 'a different text for each')
  t.ok(commandNames.reduce((sum, name) => sum + docsByUrl(t, helps.get(name)!, name), 0) >= 4, 'they point at the docs')
  t.match(helps.get('serve'), /\nOptions:\n {2}none \(-h, --help prints this help\)\n/)
  for (const name of ['migrate', 'openapi']) {
    t.match(helps.get(name), new RegExp(`^Usage: plinth ${name} \\[--app MODULE\\]\\n`), `${name} takes --app`)
    t.match(helps.get(name), /\n {2}--app MODULE +a host app: a module whose buildApp export/, `${name}: --app is described`)
  }
  const superuser = helps.get('create-superuser')
  t.match(superuser, /^Usage: plinth create-superuser --email EMAIL\n/)
  t.match(superuser, /\n {2}--email EMAIL +\S/, '--email is described')
  t.match(superuser, /\n {2}-h, --help +\S/)
  t.match(superuser, /hidden prompt/)
  t.match(superuser, /stdin/)
  const user = helps.get('create-user')
  t.match(user, /^Usage: plinth create-user --email EMAIL \[options\]\n\nCreates an active, unverified, regular account/)
  for (const option of ['--email EMAIL', '--superuser', '--inactive', '--verified', '--scopes A,B', '-h, --help']) {
    t.match(user, new RegExp(`\\n {2}${option} +\\S`), `create-user: ${option} is described`)
  }
  t.match(user, /never changed/)
  t.match(user, /hidden prompt/)
  t.match(user, /\n {2}plinth create-user --email \S+ --scopes \S+ < password-file\n/)
  t.notOk(await target.opened(), 'no database opened')
})

t.test('keys generate prints a new private JWK the server signs with; another algorithm or word is a usage error', async (t) => {
  const [ed, es, bad, word, help] = await Promise.all([
    plinth(['keys', 'generate']),
    plinth(['keys', 'generate', '--algorithm', 'ES256']),
    plinth(['keys', 'generate', '--algorithm', 'RS256']),
    plinth(['keys', 'make']),
    plinth(['keys', '--help'])
  ])
  t.same([ed.code, ed.stderr], [0, ''])
  const edKey = JSON.parse(ed.stdout)
  t.match(edKey, { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', d: /^[\w-]{43}$/, kid: thumbprint(edKey) })
  t.equal(loadSigningKeys({ algorithm: 'EdDSA', secret: 'unused', privateKey: ed.stdout }).kid, edKey.kid, 'JWT_PRIVATE_KEY takes it as printed')
  t.match(JSON.parse(es.stdout), { kty: 'EC', crv: 'P-256', alg: 'ES256' })
  t.not(JSON.parse((await plinth(['keys', 'generate'])).stdout).d, edKey.d, 'a new key each time')
  t.same([bad.code, bad.stdout], [2, ''])
  t.match(bad.stderr, /^plinth: keys: --algorithm takes EdDSA or ES256 \(got RS256\)\n\nUsage: plinth keys generate/)
  t.match(word.stderr, /^plinth: keys: expected "keys generate"/)
  t.equal(word.code, 2)
  t.match(help.stdout, /^Usage: plinth keys generate \[--algorithm ALG\]\n/)
  t.equal(docsByUrl(t, help.stdout, 'keys'), 1)
})

t.test('secret generate prints a new SECRET_KEY of 32 random bytes, which the server boots with', async (t) => {
  const [first, second, word, help] = await Promise.all([
    plinth(['secret', 'generate']), plinth(['secret', 'generate']), plinth(['secret', 'make']), plinth(['secret', '--help'])
  ])
  t.same([first.code, first.stderr], [0, ''])
  t.match(first.stdout, /^[\w-]{43}\n$/, 'base64url, one line')
  const key = first.stdout.trim()
  t.equal(Buffer.from(key, 'base64url').length, 32, '32 random bytes')
  t.not(second.stdout, first.stdout, 'a new key each time')
  t.same([word.code, word.stdout], [2, ''])
  t.match(word.stderr, /^plinth: secret: expected "secret generate"/)
  t.match(help.stdout, /^Usage: plinth secret generate\n/)
  t.equal(docsByUrl(t, help.stdout, 'secret'), 1)
  const app = await build(t, { SECRET_KEY: key })
  await register(app, 'secret@example.com')
  const { headers } = await login(app, 'secret@example.com')
  t.equal((await app.inject({ method: 'GET', url: '/api/v1/users/me', headers })).statusCode, 200, 'its tokens are signed and verified with it')
})

t.test('serve with a short SECRET_KEY exits 1 naming SECRET_KEY, and never prints the key', async (t) => {
  const short = await plinth(['serve'], { env: { DATABASE_URL: 'memory://', PORT: '0', SECRET_KEY: 'a' } })
  t.equal(short.code, 1)
  t.match(short.stderr, /^plinth: invalid configuration: SECRET_KEY: must be at least 32 bytes \(got 1\); plinth secret generate prints a new one\n$/)
  const leaked = await plinth(['serve'], { env: { DATABASE_URL: 'memory://', PORT: '0', SECRET_KEY: 'thirty-one-bytes-of-a-weak-key!' } })
  t.equal(leaked.code, 1)
  t.notMatch(leaked.stderr, /weak-key/, 'the refused key is not in the message')
})

t.test('an unknown option or a missing one exits 2 with that command\'s usage on stderr', async (t) => {
  const target = await untouched(t)
  const [migrateHelp, superuserHelp, migrate, superuser, noEmail] = await Promise.all([
    plinth(['migrate', '--help']),
    plinth(['create-superuser', '--help']),
    plinth(['migrate', '--force'], { env: target.env }),
    plinth(['create-superuser', '--email', 'root@example.com', '--superuser'], { env: target.env, input: `${PASSWORD}\n` }),
    plinth(['create-superuser'], { env: target.env })
  ])
  t.same([migrate.code, migrate.stdout], [2, ''])
  t.match(migrate.stderr, /^plinth: migrate: Unknown option '--force'[^\n]*\n\n/)
  t.ok(migrate.stderr.endsWith(`\n\n${migrateHelp.stdout}`), 'then the usage of migrate')
  t.same([superuser.code, superuser.stdout], [2, ''])
  t.match(superuser.stderr, /^plinth: create-superuser: Unknown option '--superuser'[^\n]*\n\n/)
  t.ok(superuser.stderr.endsWith(`\n\n${superuserHelp.stdout}`), 'then the usage of create-superuser')
  t.same(noEmail, { code: 2, stdout: '', stderr: `plinth: create-superuser needs --email EMAIL\n\n${superuserHelp.stdout}` })
  t.notOk(await target.opened(), 'no database opened')
})

t.test('--password is refused in either form, before anything is read or opened', async (t) => {
  const target = await untouched(t)
  const runs = await Promise.all([['--password', 'hunter2-secret'], ['--password=hunter2-secret']].map((flag) =>
    plinth(['create-superuser', '--email', 'root@example.com', ...flag], { env: target.env, input: `${PASSWORD}\n` })))
  for (const run of runs) {
    t.equal(run.code, 2)
    t.equal(run.stdout, '')
    t.match(run.stderr, /^plinth: --password is refused: a password on the command line shows in the process list and the shell history/)
    t.notMatch(run.stderr, /hunter2/, 'the password is not repeated')
  }
  t.notOk(await target.opened(), 'no database opened')
})

t.test('create-superuser refuses a bad email or password with 2, before opening the database', async (t) => {
  const target = await untouched(t)
  const cases: Array<[string, string[], string, Record<string, string>?]> = [
    ['plinth: invalid email: must match format "email"\n', ['--email', 'not-an-email'], `${PASSWORD}\n`],
    ['plinth: invalid password: must NOT have fewer than 12 characters (PASSWORD_MIN_LENGTH is 12)\n', ['--email', 'a@example.com'], 'eleven-char\n', { PASSWORD_MIN_LENGTH: '12' }],
    ['plinth: stdin must hold the password alone, on one line\n', ['--email', 'a@example.com'], `${PASSWORD}\n${PASSWORD}\n`]
  ]
  const runs = await Promise.all(cases.map(([, args, input, env]) =>
    plinth(['create-superuser', ...args], { input, env: { ...target.env, ...env } })))
  runs.forEach((run, i) => t.same(run, { code: 2, stdout: '', stderr: cases[i]![0] }, cases[i]![0]))
  t.notOk(await target.opened(), 'no database opened')
})

t.test('create-user refuses a bad email, scope or password, or --password, with 2, before opening the database', async (t) => {
  const target = await untouched(t)
  const help = (await plinth(['create-user', '--help'])).stdout
  const pattern = '"^[a-z][a-z0-9:_.-]{0,63}$"'
  const many = Array.from({ length: 33 }, (_, i) => `s${i}`).join(',')
  const cases: Array<[string, string[], string, Record<string, string>?]> = [
    [`plinth: create-user needs --email EMAIL\n\n${help}`, ['--superuser'], `${PASSWORD}\n`],
    ['plinth: invalid email: must match format "email"\n', ['--email', 'not-an-email'], `${PASSWORD}\n`],
    [`plinth: invalid scope "Items": must match pattern ${pattern}\n`, ['--email', 'a@example.com', '--scopes', 'me,Items'], `${PASSWORD}\n`],
    [`plinth: invalid scope "": must match pattern ${pattern}\n`, ['--email', 'a@example.com', '--scopes', 'me,,items'], `${PASSWORD}\n`],
    ['plinth: invalid scopes: at most 32 (got 33)\n', ['--email', 'a@example.com', '--scopes', many], `${PASSWORD}\n`],
    ['plinth: invalid password: must NOT have fewer than 12 characters (PASSWORD_MIN_LENGTH is 12)\n', ['--email', 'a@example.com'], 'eleven-char\n', { PASSWORD_MIN_LENGTH: '12' }],
    ['plinth: no password on stdin\n', ['--email', 'a@example.com'], '']
  ]
  const [refused, ...runs] = await Promise.all([
    plinth(['create-user', '--email', 'a@example.com', '--password=hunter2-secret'], { env: target.env, input: `${PASSWORD}\n` }),
    ...cases.map(([, args, input, env]) => plinth(['create-user', ...args], { input, env: { ...target.env, ...env } }))
  ])
  runs.forEach((run, i) => t.same(run, { code: 2, stdout: '', stderr: cases[i]![0] }, cases[i]![0].split('\n')[0]!))
  t.same([refused!.code, refused!.stdout], [2, ''])
  t.match(refused!.stderr, /^plinth: --password is refused: [^\n]* plinth create-user --email EMAIL < password-file\n$/)
  t.notMatch(refused!.stderr, /hunter2/, 'the password is not repeated')
  t.notOk(await target.opened(), 'no database opened')
})

t.test('an unreachable database or a bad setting is one line on stderr and exit 1', async (t) => {
  const [down, badSetting] = await Promise.all([
    plinth(['migrate'], { env: { DATABASE_URL: UNREACHABLE } }),
    plinth(['migrate'], { env: { RESOURCES: 'users' } })
  ])
  t.same(down, { code: 1, stdout: '', stderr: 'plinth: cannot reach the database of DATABASE_URL: connect ECONNREFUSED 127.0.0.1:1\n' })
  t.equal(badSetting.code, 1)
  t.match(badSetting.stderr, /^plinth: invalid configuration: RESOURCES: "users" is a table of the service [^\n]*\n$/)
})

t.test('openapi prints the document the server serves, RESOURCES_FILE\'s resources included, without a database', async (t) => {
  const dir = await mkdtemp('/tmp/plinth-cli-test-')
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const RESOURCES_FILE = `${dir}/resources.json`
  await writeFile(RESOURCES_FILE, JSON.stringify({ tasks: { fields: { type: 'object', required: ['title'], properties: { title: { type: 'string' } } } } }))
  const env = { RESOURCES: 'records,notes', RESOURCES_FILE, DATABASE_URL: UNREACHABLE }
  const [run, app] = await Promise.all([plinth(['openapi'], { env }), build(t, { RESOURCES: ['records', 'notes'], RESOURCES_FILE, ...DEFAULT_RATE_LIMITS })])
  t.equal(run.code, 0, run.stderr)
  t.equal(run.stderr, '')
  const doc = JSON.parse(run.stdout)
  t.match(doc.openapi, /^3\.1\.\d+$/)
  for (const path of ['/api/v1/health', '/api/v1/auth/login', '/api/v1/users/me', '/api/v1/items/{item_id}', '/api/v1/notes/{notes_id}', '/api/v1/tasks/{tasks_id}']) {
    t.ok(doc.paths[path], `has ${path}`)
  }
  const served = await app.inject({ method: 'GET', url: '/docs/json' })
  t.same(doc, served.json(), 'the same document as /docs/json')
  const validation = await new Validator().validate(doc)
  t.ok(validation.valid, JSON.stringify(validation.errors))
})

t.test('openapi into a reader that stops early (| head) still exits 0, with nothing on stderr', async (t) => {
  // Forty resources make a document of about a megabyte, far more than a pipe holds.
  const RESOURCES = Array.from({ length: 40 }, (_, i) => `r${i}`).join(',')
  const child = spawn(command[0]!, [...command.slice(1), 'openapi'], { env: { ...baseEnv, DATABASE_URL: UNREACHABLE, RESOURCES } })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  // The first chunk read, the pipe is closed, as `head -c` does.
  child.stdout.once('data', () => child.stdout.destroy())
  const [code] = await once(child, 'close') as [number | null]
  t.equal(code, 0, stderr)
  t.equal(stderr, '')
})

// From here on, one database that each command leaves to the next, as an operator would use it.
const url = await newDatabase(t)
const declared = Object.values(schema).filter((value) => is(value, PgTable)).map((table) => getTableName(table))

const driver = TEST_DATABASE_URL ? 'postgres' : 'pglite'
const journal = JSON.parse(await readFile(new URL('../db/migrations/meta/_journal.json', import.meta.url), 'utf8'))
const migrations = `${journal.entries.length} migrations`

t.test('migrate on a new database applies every migration and creates the RESOURCES tables, and says so', async (t) => {
  const run = await plinth(['migrate'], { env: { DATABASE_URL: url, RESOURCES: 'records,notes' } })
  t.same(run, { code: 0, stdout: `applied ${migrations}; created the tables records, notes (${driver})\n`, stderr: '' })
  const client = await connectTo(url)
  t.teardown(() => client.close())
  const tables = await rows<{ name: string }>(client, sql`select table_name as name from information_schema.tables where table_schema = 'public'`)
  t.same(tables.map((row) => row.name).sort(), [...declared, 'notes', 'records'].sort())
  const [applied] = await rows<{ n: number }>(client, sql`select count(*)::int as n from drizzle.__drizzle_migrations`)
  t.equal(applied?.n, journal.entries.length)
})

t.test('migrate run again says it had nothing to do; a new resource, that it created its table alone', async (t) => {
  const again = await plinth(['migrate'], { env: { DATABASE_URL: url, RESOURCES: 'records,notes' } })
  t.same(again, { code: 0, stdout: `nothing to do: ${migrations} applied before; records, notes up to date (${driver})\n`, stderr: '' })
  const more = await plinth(['migrate'], { env: { DATABASE_URL: url, RESOURCES: 'records,notes,extra' } })
  t.same(more, { code: 0, stdout: `created the table extra; records, notes up to date (${driver})\n`, stderr: '' })
})

let adaRefreshToken = ''

t.test('create-superuser with the password on stdin makes an active superuser who can log in', async (t) => {
  const run = await plinth(['create-superuser', '--email', 'Root@Example.com'], { env: { DATABASE_URL: url }, input: `${PASSWORD}\n` })
  t.same(run, { code: 0, stdout: 'created superuser root@example.com (id 1)\n', stderr: '' })
  await withApp(url, async (app) => {
    const session = await login(app, 'root@example.com')
    const users = await app.inject({ method: 'GET', url: '/api/v1/users', headers: session.headers })
    t.equal(users.statusCode, 200, 'a superuser-only route')
    t.match(users.json().items, [{ email: 'root@example.com', is_active: true, is_superuser: true, scopes: ['me'] }])
    // An ordinary account, logged in, for the next test to promote.
    await register(app, 'ada@example.com')
    adaRefreshToken = (await login(app, 'ada@example.com')).refresh_token
  })
})

t.test('create-superuser on an existing account promotes it, replaces its password and ends its sessions', async (t) => {
  const password = 'a brand new passphrase'
  const run = await plinth(['create-superuser', '--email', 'ADA@example.com'], { env: { DATABASE_URL: url }, input: `${password}\r\n` })
  t.same(run, {
    code: 0,
    stdout: 'existing account ada@example.com (id 2) promoted to active superuser; password replaced, 1 refresh token(s) revoked\n',
    stderr: ''
  })
  await withApp(url, async (app) => {
    t.equal((await app.inject(loginForm('ada@example.com', PASSWORD))).json().error, 'invalid_grant', 'the old password no longer works')
    const session = await login(app, 'ada@example.com', password)
    t.equal((await app.inject({ method: 'GET', url: '/api/v1/users', headers: session.headers })).statusCode, 200)
    const refresh = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: adaRefreshToken } })
    t.equal(refresh.statusCode, 401, 'the session opened with the old password is over')
  })
})

/** The account's row, on a connection closed before the next command runs (PGlite: one process at a time). */
async function userRow (email: string) {
  const client = await connectTo(url)
  try {
    const [row] = await client.db.select().from(schema.users).where(eq(schema.users.email, email))
    if (!row) throw new Error(`no account ${email}`)
    return row
  } finally {
    await client.close()
  }
}

t.test('create-user makes an active, unverified, regular account with the scope me, which can log in', async (t) => {
  const run = await plinth(['create-user', '--email', 'Bob@Example.com'], { env: { DATABASE_URL: url }, input: `${PASSWORD}\n` })
  const row = await userRow('bob@example.com')
  t.same(run, { code: 0, stdout: `created user bob@example.com (id ${row.id}): active, unverified, scopes me\n`, stderr: '' })
  t.match(row, { is_active: true, is_superuser: false, is_verified: false, scopes: 'me' })
  t.ok(await verifyPassword(row.hashed_password, PASSWORD), 'the password on stdin is the password')
  await withApp(url, async (app) => {
    const session = await login(app, 'bob@example.com')
    const me = await app.inject({ method: 'GET', url: '/api/v1/users/me', headers: session.headers })
    t.match(me.json(), { id: row.id, email: 'bob@example.com', is_active: true, is_superuser: false, scopes: ['me'] })
    t.equal((await app.inject({ method: 'GET', url: '/api/v1/users', headers: session.headers })).statusCode, 403, 'not a superuser')
  })
})

t.test('each create-user option sets what it names, and only that', async (t) => {
  const plain = { is_superuser: false, is_active: true, is_verified: false, scopes: 'me' }
  const cases: Array<[string, string[], string, Partial<typeof plain>]> = [
    ['carl@example.com', ['--superuser'], 'superuser, active, unverified, scopes me', { is_superuser: true }],
    ['dora@example.com', ['--inactive'], 'inactive, unverified, scopes me', { is_active: false }],
    ['erin@example.com', ['--verified'], 'active, verified, scopes me', { is_verified: true }],
    ['finn@example.com', ['--scopes', 'items:read, me,items:read'], 'active, unverified, scopes items:read,me', { scopes: 'items:read,me' }],
    ['gail@example.com', ['--scopes', ''], 'active, unverified, no scopes', { scopes: '' }],
    ['hugo@example.com', ['--superuser', '--inactive', '--verified', '--scopes', 'admin'], 'superuser, inactive, verified, scopes admin',
      { is_superuser: true, is_active: false, is_verified: true, scopes: 'admin' }]
  ]
  // One after another: a PGlite folder is open in one process at a time.
  for (const [email, args, traits, flags] of cases) {
    const run = await plinth(['create-user', '--email', email, ...args], { env: { DATABASE_URL: url }, input: `${PASSWORD}\n` })
    const row = await userRow(email)
    const name = args.map((arg) => arg || "''").join(' ')
    t.same(run, { code: 0, stdout: `created user ${email} (id ${row.id}): ${traits}\n`, stderr: '' }, name)
    const actual = { is_superuser: row.is_superuser, is_active: row.is_active, is_verified: row.is_verified, scopes: row.scopes }
    t.same(actual, { ...plain, ...flags }, `${name}: the row`)
    t.ok(await verifyPassword(row.hashed_password, PASSWORD), `${name}: the password`)
  }
  await withApp(url, async (app) => {
    const carl = await login(app, 'carl@example.com')
    t.equal((await app.inject({ method: 'GET', url: '/api/v1/users', headers: carl.headers })).statusCode, 200, '--superuser: a superuser-only route')
    const dora = await app.inject(loginForm('dora@example.com', PASSWORD))
    t.same([dora.statusCode, dora.json().detail], [400, 'This account is inactive'], '--inactive: cannot log in')
    const finn = await login(app, 'finn@example.com')
    const scopes = await app.inject({ method: 'GET', url: '/api/v1/users/me/scopes', headers: finn.headers })
    t.same(scopes.json(), { scopes: ['items:read', 'me'] }, '--scopes: what the account holds')
  })
})

t.test('create-user on a taken email exits 1 and leaves the account as it was', async (t) => {
  const before = await userRow('bob@example.com')
  const run = await plinth(['create-user', '--email', 'BOB@example.com', '--superuser', '--verified', '--scopes', 'admin'], {
    env: { DATABASE_URL: url }, input: 'another long password\n'
  })
  t.same(run, { code: 1, stdout: '', stderr: 'plinth: the email bob@example.com is already registered\n' })
  t.same(await userRow('bob@example.com'), before)
})

// util-linux `script` gives the CLI a terminal, so the prompt path runs as an operator meets it.
const hasScript = spawnSync('script', ['--version']).status === 0
const shellQuote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`

/** create-superuser on a pseudo-terminal, answering each password prompt in turn; `output` is the whole terminal. */
async function onTerminal (email: string, answers: string[]) {
  const child = spawn('script', ['-qefc', [...command, 'create-superuser', '--email', email].map(shellQuote).join(' '), '/dev/null'], {
    env: { ...baseEnv, DATABASE_URL: url }
  })
  let output = ''
  let answered = 0
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk
    // Answer a prompt only once it shows: the CLI turns echo off before it prompts.
    const prompts = output.match(/Password[^:\n]*: /g)?.length ?? 0
    while (answered < Math.min(prompts, answers.length)) child.stdin.write(`${answers[answered++]}\r`)
  })
  const [code] = await once(child, 'close') as [number | null]
  return { code, output }
}

t.test('on a terminal the password is asked twice without echo', { skip: !hasScript && 'needs util-linux script' }, async (t) => {
  const differ = await onTerminal('tty@example.com', ['first secret 123', 'second secret 456'])
  t.equal(differ.code, 2)
  t.match(differ.output, /Password: \r?\nPassword \(again\): \r?\nplinth: the two passwords differ/)
  t.notMatch(differ.output, /secret/, 'nothing typed is shown')

  const typed = await onTerminal('tty@example.com', ['typed at the prompt', 'typed at the prompt'])
  t.equal(typed.code, 0, typed.output)
  t.match(typed.output, /created superuser tty@example\.com \(id \d+\)/)
  t.notMatch(typed.output, /typed at/)
  await withApp(url, async (app) => {
    t.equal((await app.inject(loginForm('tty@example.com', 'typed at the prompt'))).statusCode, 200, 'the typed password is the password')
  })
})

t.test('serve answers /api/v1/health and exits 0 on SIGTERM', async (t) => {
  const child = spawn(command[0]!, [...command.slice(1), 'serve'], {
    env: { ...baseEnv, DATABASE_URL: url, HOST: '127.0.0.1', PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe']
  })
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  const exited = once(child, 'exit')
  const base = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const address = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(String(JSON.parse(line).msg))?.[1]
      if (address) resolve(address)
    })
    exited.then(([code]) => reject(new Error(`serve exited with ${code}`)), reject)
  })
  const health = await httpRequest(base, '/api/v1/health')
  t.same([health.status, health.json], [200, { status: 'ok' }])
  const loggedIn = await httpRequest(base, '/api/v1/auth/login', { form: { username: 'root@example.com', password: PASSWORD } })
  t.equal(loggedIn.status, 200, 'on the database the other commands prepared')
  const { access_token: token } = loggedIn.json as { access_token: string }
  const me = await httpRequest(base, '/api/v1/users/me', { token })
  t.match(me.json, { email: 'root@example.com', is_superuser: true })
  child.kill('SIGTERM')
  t.same(await exited, [0, null])
})
