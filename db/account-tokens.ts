import { createHash, randomBytes } from 'node:crypto'
import { and, eq, lt, sql, type SQL } from 'drizzle-orm'
import { systemClock, type Clock } from './clock.js'
import type { Database } from './client.js'
import { accountTokens, users } from './schema.js'
import type { SessionRepository } from './sessions.js'
import { unlessEmailTaken, type UserRow } from './users.js'

export type TokenPurpose = typeof accountTokens.$inferSelect['purpose']

/** Why a mailed token was refused: unknown or already used, past its expiry, or issued for a password or email that has changed. */
export type TokenRefusal = 'unknown' | 'expired' | 'stale'

const fingerprint = (what: SQL) => sql`encode(sha256(convert_to(${what}, 'UTF8')), 'hex')`

/** What a token is bound to: password hash and email (reset), email (verification), email and active flag (email change). */
const BINDINGS: Record<TokenPurpose, SQL> = {
  reset: fingerprint(sql`${users.hashed_password} || ' ' || ${users.email}`),
  verify: sql`${users.email}`,
  email_change: fingerprint(sql`${users.hashed_password} || ' ' || ${users.email} || ' ' || ${users.is_active}::text`)
}

interface SpentToken { user_id: number, new_email: string | null }

const digest = (token: string) => createHash('sha256').update(token).digest('hex')

/** A new token to mail: its text, which only the mail carries, and the hash the database keeps. */
export function newAccountToken () {
  const token = randomBytes(32).toString('base64url')
  return { token, hash: digest(token) }
}

/** The single-use tokens of password resets, email verifications and email changes, kept as hashes only. */
export function createAccountTokenRepository (db: Database, sessions: SessionRepository, { clock = systemClock }: { clock?: Clock } = {}) {
  const issue = (on: Database, purpose: TokenPurpose, where: SQL) => on.insert(accountTokens).select(on.select({
    hash: sql`${sql.placeholder('hash')}::text`.as('hash'),
    user_id: users.id,
    purpose: sql`${purpose}::text`.as('purpose'),
    binding: sql`${BINDINGS[purpose]}`.as('binding'),
    expires_at: sql`${sql.placeholder('expires_at')}::timestamptz`.as('expires_at'),
    created_at: sql`${sql.placeholder('now')}::timestamptz`.as('created_at'),
    new_email: (purpose === 'email_change' ? sql`${sql.placeholder('new_email')}::text` : sql`null::text`).as('new_email')
  }).from(users).where(where)).returning({ user_id: accountTokens.user_id })
  const resetByEmail = issue(db, 'reset', and(eq(users.email, sql.placeholder('email')), eq(users.is_active, true))!).prepare('account_tokens_reset')
  const verifyById = issue(db, 'verify', eq(users.id, sql.placeholder('id'))).prepare('account_tokens_verify')

  /** Spends the token and applies `change` in one transaction while its binding holds, so one of two requests wins; sibling tokens go too. */
  async function spend (
    purpose: TokenPurpose, token: string, change: Partial<UserRow> | ((spent: SpentToken) => Partial<UserRow>),
    then?: (tx: Database, user: UserRow) => Promise<unknown>
  ): Promise<UserRow | TokenRefusal> {
    return db.transaction(async (tx) => {
      const [spent] = await tx.delete(accountTokens).where(and(eq(accountTokens.hash, digest(token)), eq(accountTokens.purpose, purpose)))
        .returning({ user_id: accountTokens.user_id, binding: accountTokens.binding, expires_at: accountTokens.expires_at, new_email: accountTokens.new_email })
      if (!spent) return 'unknown'
      if (spent.expires_at <= clock()) return 'expired'
      const [user] = await tx.update(users).set(typeof change === 'function' ? change(spent) : change)
        .where(and(eq(users.id, spent.user_id), sql`${BINDINGS[purpose]} = ${spent.binding}`)).returning()
      if (!user) return 'stale'
      await tx.delete(accountTokens).where(and(eq(accountTokens.user_id, user.id), eq(accountTokens.purpose, purpose)))
      await then?.(tx, user)
      return user
    })
  }

  return {
    /** Stores a reset token for the active account of `email`, if there is one; the same one statement either way. */
    async issueReset (email: string, hash: string, expiresAt: Date): Promise<boolean> {
      const rows = await resetByEmail.execute({ email: email.toLowerCase(), hash, expires_at: expiresAt.toISOString(), now: clock().toISOString() })
      return rows.length > 0
    },

    async issueVerify (userId: number, hash: string, expiresAt: Date): Promise<void> {
      await verifyById.execute({ id: userId, hash, expires_at: expiresAt.toISOString(), now: clock().toISOString() })
    },

    /** Stores a token to move the user to `newEmail`; the user's earlier pending change goes, so only the latest can complete. */
    async issueEmailChange (userId: number, newEmail: string, hash: string, expiresAt: Date): Promise<void> {
      await db.transaction(async (tx) => {
        await tx.delete(accountTokens).where(and(eq(accountTokens.user_id, userId), eq(accountTokens.purpose, 'email_change')))
        await issue(tx, 'email_change', eq(users.id, userId))
          .execute({ hash, expires_at: expiresAt.toISOString(), new_email: newEmail.toLowerCase(), now: clock().toISOString() })
      })
    },

    /** Sets the new password hash and ends every session of the account; a mailed link proves the address, so it is verified too. */
    resetPassword (token: string, hashedPassword: string) {
      return spend('reset', token, { hashed_password: hashedPassword, is_verified: true }, (tx, user) => sessions.revokeAll(user.id, { tx }))
    },

    /** Marks the account verified, if its email is still the one the link was sent to. */
    verify (token: string) {
      return spend('verify', token, { is_verified: true })
    },

    /** Moves the account to the mailed address, verified, ending every session; `taken`, nothing spent, if another account got it. */
    async confirmEmailChange (token: string): Promise<UserRow | TokenRefusal | { taken: string }> {
      let address = ''
      const moveTo = (spent: SpentToken) => {
        address = spent.new_email!
        return { email: address, is_verified: true }
      }
      const moved = await unlessEmailTaken(() => spend('email_change', token, moveTo, (tx, user) => sessions.revokeAll(user.id, { tx })))
      return moved ?? { taken: address }
    },

    async purge (): Promise<number> {
      const rows = await db.delete(accountTokens).where(lt(accountTokens.expires_at, clock())).returning({ hash: accountTokens.hash })
      return rows.length
    }
  }
}

export type AccountTokenRepository = ReturnType<typeof createAccountTokenRepository>
