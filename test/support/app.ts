import { eq } from 'drizzle-orm'
import type { Test } from 'tap'
import { buildApp, type App, type BuildOptions } from '../../app.js'
import { ConfigSchema, loadConfig, type Config } from '../../config.js'
import type { Clock } from '../../db/clock.js'
import { users } from '../../db/schema.js'
import { enforceContract } from './contract.js'
import { freshDatabase } from './database.js'

const LIMITS = Object.keys(ConfigSchema.properties).filter((name) => name.startsWith('RATE_LIMIT_') && !name.endsWith('_SECONDS')) as Array<keyof Config>
/** Tests send every request from one address; the tests of the limits turn them on. */
export const NO_RATE_LIMITS: Partial<Config> = Object.fromEntries(LIMITS.map((name) => [name, 0]))
/** Tests share CPUs with each other: a slow event loop there is no overload to shed; the overload tests turn the check on. */
export const NO_EVENT_LOOP_SHEDDING: Partial<Config> = { OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: 0 }
/** The server's default limits, for the tests that compare documents with `plinth openapi`'s. */
export const DEFAULT_RATE_LIMITS: Partial<Config> = (({ ...config }) => Object.fromEntries(LIMITS.map((name) => [name, config[name]])))(loadConfig({}))

/**
 * The real app on a database no other test sees: in-memory PGlite by default, a new
 * PostgreSQL database when TEST_DATABASE_URL is set. Closed when the test ends; not yet
 * ready, so a test can still add routes (inject readies it). Every answer of its inject is
 * checked against its OpenAPI document. With `clock`, the app's time is that clock's.
 */
export async function build (t: Test, settings: Partial<Config> = {}, options: BuildOptions & { clock?: Clock } = {}): Promise<App> {
  const app = await buildApp({ ...NO_RATE_LIMITS, ...NO_EVENT_LOOP_SHEDDING, ...settings }, { logger: false, database: await freshDatabase(t), ...options })
  t.teardown(() => app.close())
  if (options.clock !== undefined && app.plinthClock !== options.clock) throw new Error('buildApp does not pass BuildOptions.clock to the db plugin')
  enforceContract(app)
  return app
}

/** A logger that keeps its JSON lines, for tests that read what was logged. */
export function captureLogs () {
  const lines: Array<Record<string, unknown>> = []
  const stream = { write: (line: string) => { lines.push(JSON.parse(line)) } }
  return { lines, logger: { level: 'info', stream } }
}

/** A clock that runs with the system's and jumps ahead when the test moves it: `clock` is what the app is given. */
export function movableClock () {
  let ahead = 0
  return {
    clock: (): Date => new Date(Date.now() + ahead),
    advance (ms: number) { ahead += ms }
  }
}

export const PASSWORD = 'correct horse battery'

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

export interface Session {
  access_token: string
  refresh_token: string
  headers: { authorization: string }
}

/** Registers an account through the API and returns its public shape. */
export async function register (app: App, email: string, password = PASSWORD) {
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/register', payload: { email, password } })
  if (res.statusCode !== 201) throw new Error(`register ${email}: ${res.statusCode} ${res.payload}`)
  return res.json() as { id: number, email: string, is_active: boolean, is_superuser: boolean, scopes: string[], is_verified: boolean }
}

/** Logs in with the password form, as Swagger UI and OAuth2 clients do. */
export async function login (app: App, email: string, password = PASSWORD): Promise<Session> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'password', username: email, password }).toString()
  })
  if (res.statusCode !== 200) throw new Error(`login ${email}: ${res.statusCode} ${res.payload}`)
  const pair = res.json()
  return { ...pair, headers: bearer(pair.access_token) }
}

/** A registered account that has been made a superuser, logged in. */
export async function superuser (app: App, email = 'root@example.com') {
  const user = await register(app, email)
  await app.plinthDb.db.update(users).set({ is_superuser: true }).where(eq(users.id, user.id))
  return { user: { ...user, is_superuser: true }, session: await login(app, email) }
}

/** The claims of a JWT, read without verifying it. */
export const claimsOf = (token: string) =>
  JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>

let accounts = 0

/** A new account, registered and logged in, with an email no other call of this process uses. */
export async function newAccount (app: App) {
  const email = `user${++accounts}@example.com`
  const user = await register(app, email)
  return { user, email, session: await login(app, email) }
}
