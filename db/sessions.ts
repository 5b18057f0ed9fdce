import { and, count, desc, eq, exists, getTableColumns, gt, inArray, isNull, lt, ne, or, sql, type SQL, type SQLWrapper } from 'drizzle-orm'
import { batched } from '../concurrency/batch.js'
import { systemClock, type Clock } from './clock.js'
import { versionOf, type InTransaction, type Versioned } from './crud.js'
import type { Database } from './client.js'
import { loginFailures, refreshTokens, sessions, users } from './schema.js'
import type { UserRow } from './users.js'

export type RefreshTokenRow = typeof refreshTokens.$inferSelect
export type NewRefreshToken = Pick<RefreshTokenRow, 'jti' | 'user_id' | 'family_id' | 'expires_at'>
export type Successor = Pick<RefreshTokenRow, 'jti' | 'expires_at'>
/** Why a refresh token was refused: unknown, spent or expired; rotated a moment ago (family kept); a replay (family ended). */
export type Refusal = 'invalid' | 'recent' | 'reused'

export interface LoginAttempt {
  count: number
  retryAfter: number
  user: UserRow | null
}

/** Whom an attempt counts against: an email, and a client address as the rate limits group it (an IPv6 client by its /64). */
export interface Attempter { email: string, address: string }

export interface Client { user_agent: string | null, ip: string | null }

export type SessionRow = Pick<typeof sessions.$inferSelect, 'id' | 'created_at' | 'user_agent' | 'ip'> & { last_used_at: Date }

export interface SessionOptions {
  loginWindowSeconds: number
  /** A revoked refresh token presented again revokes its whole family (RFC 9700 4.14.2). */
  reuseDetection: boolean
  /** Within this many seconds of its rotation, a token presented again is refused without ending its family. */
  reuseIntervalSeconds: number
  onEnded: (count: number) => void
  onReuse: () => void
  clock: Clock
}

const ignore = () => {}

/** The channel told, at commit, the id of an account whose sessions ended or whose rights changed: its open streams check their guard. */
export const ACCOUNTS_CHANNEL = 'plinth_account_changes'

const notifyAccounts = async (db: Database, ids: Iterable<number>) => {
  for (const id of new Set(ids)) await db.execute(sql`select pg_notify(${ACCOUNTS_CHANNEL}, ${String(id)})`)
}

/** An instant as a statement's parameter: sent as text, as the driver has no encoder for every place an instant goes. */
const instant = (at: Date | SQLWrapper) => at instanceof Date ? sql`${at.toISOString()}::timestamptz` : sql`${at}::timestamptz`

/** Logins and their sessions (families of single-use refresh tokens); attempts counted in the database, shared by every process. */
export function createSessionRepository (db: Database, { loginWindowSeconds = 900, reuseDetection = false, reuseIntervalSeconds = 10, onEnded = ignore, onReuse = ignore, clock = systemClock }: Partial<SessionOptions> = {}) {
  const window = sql.raw(`interval '${Math.trunc(loginWindowSeconds)} seconds'`)
  const grace = sql.raw(`interval '${Math.trunc(reuseIntervalSeconds)} seconds'`)
  const now = instant(sql.placeholder('now'))
  const inWindow = sql`${loginFailures.window_start} > ${now} - ${window}`
  const attempter = { email: sql.placeholder('email'), address: sql.placeholder('address') }
  const ofAttempter = and(eq(loginFailures.email, attempter.email), eq(loginFailures.address, attempter.address))
  const token = {
    jti: sql.placeholder('jti'),
    user_id: sql.placeholder('user_id'),
    family_id: sql.placeholder('family_id'),
    expires_at: sql.placeholder('expires_at')
  }

  const counted = db.$with('counted').as(db.insert(loginFailures).values({ ...attempter, failures: 1, window_start: now })
    .onConflictDoUpdate({
      target: [loginFailures.email, loginFailures.address],
      set: {
        failures: sql`case when ${inWindow} then ${loginFailures.failures} + 1 else 1 end`,
        window_start: sql`case when ${inWindow} then ${loginFailures.window_start} else ${now} end`
      }
    })
    .returning({
      count: loginFailures.failures,
      retryAfter: sql<number>`greatest(1, ceil(extract(epoch from ${loginFailures.window_start} + ${window} - ${now})))::int`.as('retry_after')
    }))
  const countAndRead = db.with(counted).select({ count: counted.count, retryAfter: counted.retryAfter, user: users })
    .from(counted).leftJoin(users, eq(users.email, attempter.email))
    .prepare('sessions_begin_login')
  const clearAttempts = db.delete(loginFailures).where(ofAttempter).prepare('sessions_clear_attempts')
  const cleared = db.$with('cleared').as(db.delete(loginFailures).where(ofAttempter))
  // The session and its first refresh token in one statement; the foreign key is checked at its end.
  const opened = db.$with('opened').as(db.insert(sessions).values({
    id: token.family_id, user_id: token.user_id, user_agent: sql.placeholder('user_agent'), ip: sql.placeholder('ip'), created_at: now
  }).returning({ id: sessions.id }))
  const clearAndOpen = db.with(cleared, opened).insert(refreshTokens).values({ ...token, created_at: now }).prepare('sessions_open_counted')
  const open = db.with(opened).insert(refreshTokens).values({ ...token, created_at: now }).prepare('sessions_open')

  const usable = (jti: string | SQLWrapper, userId: number | SQLWrapper, at: SQL) => and(
    eq(refreshTokens.jti, jti),
    eq(refreshTokens.user_id, userId),
    eq(refreshTokens.revoked, false),
    gt(refreshTokens.expires_at, at)
  )

  // A turn's rotations are one statement: its UPDATE (user active, session live) is the lock, so one concurrent rotation of a token wins.
  const presented = sql`unnest(${sql.placeholder('jtis')}::uuid[], ${sql.placeholder('user_ids')}::int[],
    ${sql.placeholder('next_jtis')}::uuid[], ${sql.placeholder('next_expiries')}::text[]) as k(jti, user_id, next_jti, next_expires_at)`
  // Sessions are share-locked in id order, as endSessions locks them, so an end and a rotation of one session take turns.
  const live = db.$with('live').as(db.select({ id: sessions.id }).from(sessions)
    .innerJoin(refreshTokens, eq(refreshTokens.family_id, sessions.id))
    .where(and(sql`${refreshTokens.jti} = any(${sql.placeholder('jtis')}::uuid[])`, isNull(sessions.ended_at)))
    .orderBy(sessions.id).for('share', { of: sessions }))
  const revoked = db.$with('revoked').as(db.update(refreshTokens).set({ revoked: true }).from(sql`${users}, ${presented}, ${live}`)
    .where(and(usable(sql`k.jti`, sql`k.user_id`, now), eq(users.id, refreshTokens.user_id), eq(users.is_active, true), eq(live.id, refreshTokens.family_id)))
    .returning({
      jti: refreshTokens.jti,
      user_id: refreshTokens.user_id,
      family_id: refreshTokens.family_id,
      scopes: users.scopes,
      next_jti: sql<string>`k.next_jti`.as('next_jti'),
      next_expires_at: sql<string>`k.next_expires_at::timestamptz`.as('next_expires_at')
    }))
  const successors = db.$with('successors').as(db.insert(refreshTokens).select(db.select({
    jti: revoked.next_jti,
    user_id: revoked.user_id,
    family_id: revoked.family_id,
    expires_at: revoked.next_expires_at,
    revoked: sql`false`.as('revoked'),
    created_at: now.as('created_at')
  }).from(revoked)))
  const rotation = db.with(live, revoked, successors).select({ jti: revoked.jti, scopes: revoked.scopes, sid: revoked.family_id }).from(revoked)
    .prepare('sessions_rotate')

  interface Rotation { jti: string, userId: number, next: Successor }
  const rotations = batched<Rotation, { scopes: string, sid: string } | null>(async (batch) => {
    // A token presented twice in one turn is spent by its first request; the second is refused.
    const first = new Map<string, Rotation>()
    for (const one of batch) if (!first.has(one.jti)) first.set(one.jti, one)
    const unique = [...first.values()]
    const rows = await rotation.execute({
      jtis: unique.map((one) => one.jti),
      user_ids: unique.map((one) => one.userId),
      next_jtis: unique.map((one) => one.next.jti),
      next_expiries: unique.map((one) => one.next.expires_at.toISOString()),
      now: clock().toISOString()
    })
    const rotated = new Map(rows.map((row) => [row.jti, { scopes: row.scopes, sid: row.sid }]))
    return batch.map((one) => first.get(one.jti) === one ? rotated.get(one.jti) ?? null : null)
  })

  const listed = (userId: number, at: Date) => and(eq(sessions.user_id, userId), isNull(sessions.ended_at), exists(db.select({ one: sql`1` })
    .from(refreshTokens)
    .where(and(eq(refreshTokens.family_id, sessions.id), eq(refreshTokens.revoked, false), gt(refreshTokens.expires_at, instant(at))))))

  // A session was last used when its newest refresh token was issued: a refresh writes no session row.
  const lastUsed = sql<Date>`(select max(${refreshTokens.created_at}) from ${refreshTokens} where ${refreshTokens.family_id} = ${sessions.id})`
    .mapWith(refreshTokens.created_at)

  /** Ends the sessions `where` picks, locked in id order as a rotation locks them, so a rotation that came first has its successor revoked too. */
  async function endIn (tx: Database, where: SQL): Promise<number> {
    const picked = tx.select({ id: sessions.id }).from(sessions).where(and(where, isNull(sessions.ended_at)))
      .orderBy(sessions.id).for('no key update')
    const ended = await tx.update(sessions).set({ ended_at: clock() }).where(inArray(sessions.id, picked)).returning({ id: sessions.id, user_id: sessions.user_id })
    if (ended.length > 0) {
      await tx.update(refreshTokens).set({ revoked: true })
        .where(and(inArray(refreshTokens.family_id, ended.map((row) => row.id)), eq(refreshTokens.revoked, false)))
      await notifyAccounts(tx, ended.map((row) => row.user_id))
    }
    return ended.length
  }

  async function endSessions (where: SQL, tx?: Database): Promise<number> {
    const ended = tx ? await endIn(tx, where) : await db.transaction((on) => endIn(on, where))
    if (ended > 0) onEnded(ended)
    return ended
  }

  /** A revoked token presented again ends its whole family, with reuse detection on, unless it was rotated just now. */
  async function revokeFamilyIfReplayed (jti: string, userId: number): Promise<Refusal> {
    if (!reuseDetection) return 'invalid'
    const successor = sql`(select min(next.created_at) from ${refreshTokens} next
      where next.family_id = ${refreshTokens.family_id} and next.created_at > ${refreshTokens.created_at})`
    const [replayed] = await db.select({ family: refreshTokens.family_id, recent: sql<boolean>`coalesce(${successor} > ${instant(clock())} - ${grace}, false)` })
      .from(refreshTokens)
      .where(and(eq(refreshTokens.jti, jti), eq(refreshTokens.user_id, userId), eq(refreshTokens.revoked, true)))
    if (!replayed) return 'invalid'
    if (replayed.recent) return 'recent'
    await endSessions(eq(sessions.id, replayed.family))
    onReuse()
    return 'reused'
  }

  return {
    async beginLogin (email: string, address: string): Promise<LoginAttempt> {
      const [row] = await countAndRead.execute({ email, address, now: clock().toISOString() })
      return row!
    },

    async clearAttempts ({ email, address }: Attempter) {
      await clearAttempts.execute({ email, address })
    },

    /** Opens a session (its id is the family's) with its first refresh token; given the counted attempter, also forgets its attempts, in one statement. */
    async openSession (first: NewRefreshToken, client: Client, counted?: Attempter) {
      const now = clock().toISOString()
      await (counted ? clearAndOpen.execute({ ...counted, ...first, ...client, now }) : open.execute({ ...first, ...client, now }))
    },

    /** Spends `jti` for `next` while the user is active: current scopes and session, or null (revokeFamilyIfReplayed says why). */
    rotate (jti: string, userId: number, next: Successor): Promise<{ scopes: string, sid: string } | null> {
      return rotations.load({ jti, userId, next })
    },

    /** The account's scopes while `jti` could be rotated (usable, its session live, its user active), else null: a narrowing is checked against them first. */
    async scopesIfRotatable (jti: string, userId: number): Promise<string | null> {
      const [row] = await db.select({ scopes: users.scopes }).from(refreshTokens)
        .innerJoin(users, eq(users.id, refreshTokens.user_id))
        .innerJoin(sessions, eq(sessions.id, refreshTokens.family_id))
        .where(and(usable(jti, userId, instant(clock())), eq(users.is_active, true), isNull(sessions.ended_at)))
      return row?.scopes ?? null
    },

    revokeFamilyIfReplayed,

    async revoke (jti: string, userId: number): Promise<'ok' | Refusal> {
      const [token] = await db.select({ family: refreshTokens.family_id }).from(refreshTokens).where(usable(jti, userId, instant(clock())))
      if (token && await endSessions(eq(sessions.id, token.family)) > 0) return 'ok'
      return revokeFamilyIfReplayed(jti, userId)
    },

    async list (userId: number, { offset, limit }: { offset: number, limit: number }): Promise<{ rows: SessionRow[], total: number }> {
      const at = clock()
      const [rows, [counted]] = await Promise.all([
        db.select({ id: sessions.id, created_at: sessions.created_at, last_used_at: lastUsed, user_agent: sessions.user_agent, ip: sessions.ip })
          .from(sessions).where(listed(userId, at)).orderBy(desc(sessions.created_at), desc(sessions.id)).offset(offset).limit(limit),
        db.select({ total: count() }).from(sessions).where(listed(userId, at))
      ])
      return { rows, total: counted?.total ?? 0 }
    },

    async end (sid: string, userId: number): Promise<boolean> {
      return await endSessions(and(eq(sessions.id, sid), eq(sessions.user_id, userId))!) > 0
    },

    /** Tells every process that the account changed (deactivated, demoted, its scopes or its existence): its streams check their guard. */
    async accountChanged (userId: number, { tx }: InTransaction = {}): Promise<void> {
      await notifyAccounts(tx ?? db, [userId])
    },

    async revokeAll (userId: number, { keep, tx }: InTransaction & { keep?: string } = {}): Promise<number> {
      return endSessions(and(eq(sessions.user_id, userId), keep === undefined ? undefined : ne(sessions.id, keep))!, tx)
    },

    /** Deletes what can never be used again: expired refresh tokens, revoked ones unless reuse detection keeps them as evidence, and login counters past their window. */
    async purge (): Promise<{ tokens: number, counters: number }> {
      const now = clock()
      const expired = lt(refreshTokens.expires_at, now)
      const [tokens, counters] = await Promise.all([
        db.delete(refreshTokens).where(reuseDetection ? expired : or(expired, eq(refreshTokens.revoked, true)))
          .returning({ jti: refreshTokens.jti }),
        db.delete(loginFailures).where(lt(loginFailures.window_start, sql`${instant(now)} - ${window}`))
          .returning({ email: loginFailures.email })
      ])
      // A session goes with its last refresh record: no token of it can be used, nor kept as evidence.
      await db.delete(sessions).where(sql`not exists (select 1 from ${refreshTokens} where ${refreshTokens.family_id} = ${sessions.id})`)
      return { tokens: tokens.length, counters: counters.length }
    }
  }
}

export type SessionRepository = ReturnType<typeof createSessionRepository>

/** `writeLsn`: where the primary's WAL stood after the session's last write (null: none), for reads on replicas. */
export interface SessionUser { user: Versioned<UserRow>, live: boolean, writeLsn: bigint | null }

/** The guard's lookup, batched per event-loop turn; a lone session takes the by-id statement, cheaper than the unnest join. */
export function createSessionLookup (db: Database) {
  const live = sql<boolean>`${sessions.id} is not null`.as('live')
  const user = { ...getTableColumns(users), version: versionOf(users) }
  const keys = sql`unnest(${sql.placeholder('ids')}::int[], ${sql.placeholder('sids')}::uuid[]) as k(id, sid)`
  const writeLsn = sessions.write_lsn
  const many = db.select({ sid: sql<string>`k.sid`.as('sid'), live, writeLsn, user })
    .from(keys)
    .innerJoin(users, sql`${users.id} = k.id`)
    .leftJoin(sessions, sql`${sessions.id} = k.sid and ${sessions.user_id} = k.id and ${sessions.ended_at} is null`)
    .prepare('sessions_lookup')
  const one = db.select({ live, writeLsn, user })
    .from(users)
    .leftJoin(sessions, sql`${sessions.id} = ${sql.placeholder('sid')}::uuid and ${sessions.user_id} = ${users.id} and ${sessions.ended_at} is null`)
    .where(eq(users.id, sql.placeholder('id')))
    .prepare('session_lookup')
  const loader = batched<string, SessionUser | null>(async (pairs) => {
    // Concurrent requests of one session share its row, as `= any(ids)` shares a user's.
    const split = [...new Set(pairs)].map((pair) => pair.split(' '))
    if (split.length === 1) {
      const [id, sid] = split[0]!
      const [row] = await one.execute({ id: Number(id), sid })
      return pairs.map(() => row ?? null)
    }
    const rows = await many.execute({ ids: split.map(([id]) => Number(id)), sids: split.map(([, sid]) => sid) })
    const found = new Map(rows.map((row) => [`${row.user.id} ${row.sid}`, { user: row.user, live: row.live, writeLsn: row.writeLsn }]))
    return pairs.map((pair) => found.get(pair) ?? null)
  })
  return (userId: number, sid: string) => loader.load(`${userId} ${sid}`)
}

/** Records where the primary's WAL stands now, after the session's write committed: its reads then wait for a replica that far. */
export async function recordSessionWrite (db: Database, sid: string): Promise<void> {
  await db.update(sessions).set({ write_lsn: sql`(pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint` }).where(eq(sessions.id, sid))
}
