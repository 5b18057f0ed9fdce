import { and, eq, sql } from 'drizzle-orm'
import type { Database } from './client.js'
import { createRepository, type InTransaction, type Versioned, type WriteOptions } from './crud.js'
import { sqlState } from './errors.js'
import { sessions, users } from './schema.js'

export type UserRow = typeof users.$inferSelect
export type NewUserRow = typeof users.$inferInsert

const UNIQUE_VIOLATION = '23505'
/** Advisory lock key of the bootstrap superuser's creation ('plns'). */
const FIRST_SUPERUSER_LOCK = 0x706c6e73

/** A write that may hit the unique email index: `null` when the email is taken; in a savepoint inside a caller's transaction. */
export async function unlessEmailTaken<T> (write: (on?: Database) => Promise<T>, { tx }: InTransaction = {}): Promise<T | null> {
  try {
    return await (tx ? tx.transaction(write) : write())
  } catch (err) {
    if (sqlState(err) === UNIQUE_VIOLATION) return null
    throw err
  }
}

export function createUserRepository (db: Database) {
  // Unbatched: accounts change one at a time, and a taken email would fail a whole batch before each row was retried alone.
  const repo = createRepository(db, users)
  const byEmail = db.select().from(users).where(eq(users.email, sql.placeholder('email'))).limit(1).prepare('users_by_email')

  return {
    ...repo,
    async findByEmail (email: string): Promise<UserRow | null> {
      const rows = await byEmail.execute({ email: email.toLowerCase() })
      return rows[0] ?? null
    },
    /** `null` when the email is already registered (matched case-insensitively). */
    create (values: NewUserRow, { tx }: InTransaction = {}) {
      return unlessEmailTaken((on) => repo.create({ ...values, email: values.email.toLowerCase() }, { tx: on }), { tx })
    },
    /** `null` when no such user (or, given `ifVersions`, not in one of them); `'email_taken'` when the new email belongs to someone else. */
    async update (id: number, values: Partial<NewUserRow>, { tx, ifVersions }: WriteOptions = {}): Promise<Versioned<UserRow> | null | 'email_taken'> {
      const change = values.email ? { ...values, email: values.email.toLowerCase() } : values
      const result = await unlessEmailTaken(async (on) => ({ row: await repo.update(id, change, { tx: on, ifVersions }) }), { tx })
      return result === null ? 'email_taken' : result.row
    },
    /** Runs `write` in a transaction unless `id` is the only active superuser, every active superuser locked meanwhile. */
    async unlessLastSuperuser<T> (id: number, write: (tx: Database) => Promise<T>, { lockFirst }: { lockFirst?: (tx: Database) => Promise<unknown> } = {}): Promise<T | 'last_superuser'> {
      return db.transaction(async (tx) => {
        await lockFirst?.(tx)
        const superusers = await tx.select({ id: users.id }).from(users)
          .where(and(eq(users.is_superuser, true), eq(users.is_active, true))).orderBy(users.id).for('update')
        if (superusers.length === 1 && superusers[0]!.id === id) return 'last_superuser'
        return write(tx)
      })
    },
    /** Deletes the account unless it is the last active superuser; given `ifVersions`, only in one of them. */
    async deleteAccount (id: number, { ifVersions }: Pick<WriteOptions, 'ifVersions'> = {}): Promise<'deleted' | 'not_found' | 'last_superuser'> {
      // Its sessions before any user row, in id order as a refresh locks them: a refresh racing the deletion waits for it, or it for
      // the refresh, never each for the other (a refresh locks the user's row last, for its new token's foreign key).
      const lockSessions = (tx: Database) => tx.select({ id: sessions.id }).from(sessions).where(eq(sessions.user_id, id)).orderBy(sessions.id).for('update')
      return this.unlessLastSuperuser(id, async (tx) => await repo.delete(id, { tx, ifVersions }) ? 'deleted' : 'not_found', { lockFirst: lockSessions })
    },
    /** The bootstrap superuser, only while no superuser exists at all (an inactive one counts), by one starting instance at most. */
    async createFirstSuperuser (values: NewUserRow): Promise<'created' | 'superuser_exists' | 'email_taken'> {
      return db.transaction(async (tx) => {
        await tx.execute(sql.raw(`select pg_advisory_xact_lock(${FIRST_SUPERUSER_LOCK})`))
        const [superuser] = await tx.select({ id: users.id }).from(users).where(eq(users.is_superuser, true)).limit(1)
        if (superuser) return 'superuser_exists'
        const inserted = await tx.insert(users).values({ ...values, email: values.email.toLowerCase(), is_superuser: true })
          .onConflictDoNothing({ target: users.email }).returning({ id: users.id })
        return inserted.length > 0 ? 'created' : 'email_taken'
      })
    },
    /** Creates the account unless the email exists; an existing account is never changed. */
    async createIfAbsent (values: NewUserRow): Promise<{ created: boolean, user: UserRow }> {
      const email = values.email.toLowerCase()
      const inserted = await db.insert(users).values({ ...values, email }).onConflictDoNothing({ target: users.email }).returning()
      if (inserted[0]) return { created: true, user: inserted[0] }
      const existing = await this.findByEmail(email)
      if (!existing) throw new Error(`user ${email} neither inserted nor found`)
      return { created: false, user: existing }
    }
  }
}

export type UserRepository = ReturnType<typeof createUserRepository>

/** `scopes` is stored comma-separated and read as a list. */
export const scopeList = (scopes: string) => scopes.split(',').map((scope) => scope.trim()).filter(Boolean)
export const scopeText = (scopes: readonly string[]) => [...new Set(scopes)].join(',')
