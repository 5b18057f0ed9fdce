import { createHmac } from 'node:crypto'
import { inArray } from 'drizzle-orm'
import type { InjectOptions } from 'fastify'
import type { App } from '../../app.js'
import { createAccountTokenRepository, newAccountToken, type AccountTokenRepository } from '../../db/account-tokens.js'
import { users } from '../../db/schema.js'
import { createSessionRepository } from '../../db/sessions.js'
import { PASSWORD, claimsOf, login, register } from '../support/app.js'
import { collectionOf, type Operation } from './fuzz-openapi.js'
import type { Auth, Draft, Payload, Segment } from './fuzz-requests.js'
import { toJson } from './fuzz-values.js'

// Registration creates users: its ids belong to the users collection.
const COLLECTION_ALIASES: Record<string, string> = { '/api/v1/auth/register': '/api/v1/users' }

const base64url = (text: string) => Buffer.from(text).toString('base64url')

/** A JWT of any claims: signed with the server's key, another key, another algorithm, or none. */
function forge (claims: Record<string, unknown>, alg: string, secret: string) {
  const head = base64url(JSON.stringify({ alg: alg === 'wrong-key' ? 'HS256' : alg, typ: 'JWT' }))
  const signed = `${head}.${base64url(toJson(claims))}`
  if (alg === 'none') return `${signed}.`
  const hmac = createHmac(alg === 'HS512' ? 'sha512' : 'sha256', alg === 'wrong-key' ? `not-${secret}` : secret)
  return `${signed}.${hmac.update(signed).digest('base64url')}`
}

interface Settings { FIRST_SUPERUSER_EMAIL: string, FIRST_SUPERUSER_PASSWORD: string, SECRET_KEY: string }

/**
 * What the fuzzer knows about the server's state, so that valid requests can succeed: the
 * superuser's and a user's access tokens, unused refresh tokens, and the ids that exist.
 */
export class FuzzSession {
  private readonly ids = new Map<string, number[]>()
  private readonly refreshTokens: string[] = []
  private readonly accountIds: number[] = []
  private readonly liveBodies: Record<string, () => Promise<Payload>>
  private readonly mailedTokens: AccountTokenRepository
  private accountRows = ''
  private target: { collection: string, id: number } | undefined
  private moves = 0

  private constructor (
    private readonly app: App,
    private readonly secret: string,
    private readonly tokens: { admin: string, user: string, refresh: string },
    private readonly loginEmail: string,
    private readonly credentials: Record<'admin' | 'user', [email: string, password: string]>,
    mailedAccount: { id: number, email: string }
  ) {
    this.mailedTokens = createAccountTokenRepository(app.plinthDb.db, createSessionRepository(app.plinthDb.db))
    const json = (body: object): Payload => ({ contentType: 'application/json', payload: JSON.stringify(body) })
    // The token of a link as if it had been mailed to an account of its own, whose sessions nothing else uses.
    const mailed = async (purpose: 'reset' | 'verify' | 'email_change') => {
      const { token, hash } = newAccountToken()
      const expires = new Date(Date.now() + 60_000)
      if (purpose === 'reset') await this.mailedTokens.issueReset(mailedAccount.email, hash, expires)
      else if (purpose === 'email_change') await this.mailedTokens.issueEmailChange(mailedAccount.id, `moved${++this.moves}@fuzz.example.com`, hash, expires)
      else await this.mailedTokens.issueVerify(mailedAccount.id, hash, expires)
      return token
    }
    // An unused refresh token, from a new login when the routes have spent them all.
    const spend = async (): Promise<Payload> => {
      const token = this.refreshTokens.pop() ?? (await login(app, loginEmail)).refresh_token
      return { contentType: 'application/json', payload: JSON.stringify({ refresh_token: token }) }
    }
    // Keyed by operationId: the routes whose success needs a secret only the session holds.
    this.liveBodies = {
      login: async () => ({ contentType: 'application/x-www-form-urlencoded', payload: new URLSearchParams({ username: loginEmail, password: PASSWORD }).toString() }),
      refresh: spend,
      logout: spend,
      resetPassword: async () => json({ token: await mailed('reset'), new_password: PASSWORD }),
      verifyEmail: async () => json({ token: await mailed('verify') }),
      confirmEmail: async () => json({ token: await mailed('email_change') }),
      // The user's password; the superuser's differs, so its 403 is the other answer.
      deleteMe: async () => json({ current_password: PASSWORD })
    }
  }

  /** Logs in the configured superuser, registers a user and an account whose logins feed the refresh tokens. */
  static async open (app: App, settings: Settings) {
    const admin = await login(app, settings.FIRST_SUPERUSER_EMAIL, settings.FIRST_SUPERUSER_PASSWORD)
    const user = await register(app, 'fuzz-user@fuzz.example.com')
    const loginEmail = 'fuzz-login@fuzz.example.com'
    const loginUser = await register(app, loginEmail)
    const mailedAccount = await register(app, 'fuzz-mailed@fuzz.example.com')
    const session = new FuzzSession(app, settings.SECRET_KEY, {
      admin: admin.access_token,
      user: (await login(app, user.email)).access_token,
      refresh: admin.refresh_token
    }, loginEmail, { admin: [settings.FIRST_SUPERUSER_EMAIL, settings.FIRST_SUPERUSER_PASSWORD], user: [user.email, PASSWORD] }, mailedAccount)
    const me = await app.inject({ url: '/api/v1/users/me', headers: { authorization: `Bearer ${admin.access_token}` } })
    session.accountIds.push(me.json().id, user.id, loginUser.id)
    for (let i = 0; i < 4; i++) session.refreshTokens.push((await login(app, loginEmail)).refresh_token)
    for (let i = 0; i < 4; i++) session.remember('/api/v1/users', (await register(app, `victim${i}@fuzz.example.com`)).id)
    session.accountRows = await session.readAccounts()
    return session
  }

  /** Whether the operation has a body that only the session can write (a live token or password). */
  hasLiveBody (op: Operation) {
    return op.id in this.liveBodies
  }

  /** The request a draft stands for, its live parts filled in from the current state. */
  async request (op: Operation, draft: Draft): Promise<InjectOptions> {
    this.target = undefined
    const values: string[] = []
    for (const [i, [, name]] of [...op.path.matchAll(/\{([^}]+)\}/g)].entries()) {
      values.push(await this.segmentValue(op, name!, draft.segments[i] ?? '', draft.auth))
    }
    let i = 0
    const path = op.path.replace(/\{[^}]+\}/g, () => values[i++]!)
    const headers: Record<string, string> = {}
    const authorization = this.authorization(draft.auth)
    if (authorization !== undefined) headers.authorization = authorization
    const body = 'live' in draft.body ? await this.liveBodies[op.id]?.() ?? {} : draft.body
    if (body.contentType !== undefined) headers['content-type'] = body.contentType
    return { method: draft.method as 'GET', url: `${path}${draft.suffix}${draft.query ? `?${draft.query}` : ''}`, headers, payload: body.payload }
  }

  /** Takes note of what a response created, spent or deleted. */
  async learn (op: Operation, method: string, status: number, payload: string) {
    if (status >= 300 || method !== op.method) return
    const body = payload ? JSON.parse(payload) : undefined
    if (typeof body?.refresh_token === 'string') this.refreshTokens.push(body.refresh_token)
    if (status === 201 && typeof body?.id === 'number') this.remember(COLLECTION_ALIASES[op.path] ?? op.path, body.id)
    if (method === 'DELETE' && this.target) this.forget(this.target.collection, this.target.id)
    if (op.path.startsWith('/api/v1/users/{') || op.id === 'deleteMe') await this.restoreAccounts()
    if (op.path.startsWith('/api/v1/auth/') || op.path.startsWith('/api/v1/users')) await this.revive()
  }

  /** Logs in again whoever's session a request ended (logout-all, a revocation, a deactivation...). */
  private async revive () {
    for (const kind of ['admin', 'user'] as const) {
      const me = await this.app.inject({ url: '/api/v1/users/me', headers: { authorization: `Bearer ${this.tokens[kind]}` } })
      if (me.statusCode === 401) this.tokens[kind] = (await login(this.app, ...this.credentials[kind])).access_token
    }
  }

  /**
   * A live session id is a new login of the account the path names (the caller's for /users/me,
   * the login account for a superuser's /users/{user_id}), so ending it ends no session in use.
   */
  private async segmentValue (op: Operation, name: string, segment: Segment, auth: Auth): Promise<string> {
    if (typeof segment === 'string' || !op.path.includes('{session_id}')) return this.segment(op, segment)
    const forUser = op.path.includes('{user_id}')
    if (name === 'user_id') return String(this.accountIds[2])
    const [email, password] = forUser ? [this.loginEmail, PASSWORD] : this.credentials[auth.kind === 'admin' ? 'admin' : 'user']
    return String(claimsOf((await login(this.app, email, password)).access_token).sid)
  }

  private segment (op: Operation, segment: Segment) {
    if (typeof segment === 'string') return segment
    const collection = collectionOf(op.path)
    const ids = this.ids.get(collection) ?? []
    const id = ids[segment.live % Math.max(1, ids.length)] ?? 1
    this.target = { collection, id }
    return String(id)
  }

  private authorization (auth: Auth): string | undefined {
    switch (auth.kind) {
      case 'none': return undefined
      case 'header': return auth.value
      case 'forged': return `Bearer ${forge(auth.claims, auth.alg, this.secret)}`
      case 'refresh-as-access': return `Bearer ${this.tokens.refresh}`
      default: return `Bearer ${this.tokens[auth.kind]}`
    }
  }

  private remember (collection: string, id: number) {
    const ids = this.ids.get(collection) ?? []
    this.ids.set(collection, [...ids, id])
  }

  private forget (collection: string, id: number) {
    this.ids.set(collection, (this.ids.get(collection) ?? []).filter((known) => known !== id))
  }

  private async readAccounts () {
    const rows = await this.app.plinthDb.db.select().from(users).where(inArray(users.id, this.accountIds)).orderBy(users.id)
    return JSON.stringify(rows)
  }

  /**
   * The superuser may demote, deactivate, re-password or delete any account, the fuzzer's own
   * included, and the user may delete itself: those are put back as they were, or every later
   * request would be refused.
   */
  private async restoreAccounts () {
    if (await this.readAccounts() === this.accountRows) return
    for (const row of JSON.parse(this.accountRows)) {
      const { id, ...values } = { ...row, created_at: new Date(row.created_at) }
      await this.app.plinthDb.db.insert(users).overridingSystemValue().values({ id, ...values }).onConflictDoUpdate({ target: users.id, set: values })
    }
    for (let i = 0; i < 2; i++) this.refreshTokens.push((await login(this.app, this.loginEmail)).refresh_token)
  }
}
