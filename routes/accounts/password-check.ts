import type { FastifyRequest } from 'fastify'
import type { Share } from '../../concurrency/gate.js'
import type { Attempter } from '../../db/sessions.js'
import type { UserRow } from '../../db/users.js'
import { dummyHash, reserveVerify, verifyPassword, whileConnected } from '../../plugins/auth/passwords.js'
import type { AccountsContext } from './context.js'
import { WrongCurrentPassword, tooManyFailures, tooManyHashes } from './errors.js'
import { clientAddress } from '../../http/rate-limits.js'

// A requester's own hashes go by at argon2 speed: a second is long enough for one of them to finish.
const SHARE_RETRY_AFTER_SECONDS = 1

/** The hash-queue claim of the client address and, given `email`, of its account: from half the queue on, one at its share gets 429. */
export function hashShare (ctx: AccountsContext, request: FastifyRequest, email?: string): Share | undefined {
  if (ctx.maxHashWaitingPerClient === 0) return undefined
  const address = `address ${clientAddress(request)}`
  return {
    keys: email === undefined ? [address] : [address, `account ${email}`],
    max: ctx.maxHashWaitingPerClient,
    refuse: () => tooManyHashes(SHARE_RETRY_AFTER_SECONDS)
  }
}

/** `work` with a signal that aborts if the client goes first, when the hash queue is bounded (under overload it is full of such work). */
export async function untilGone<T> (ctx: AccountsContext, request: FastifyRequest, work: (signal?: AbortSignal) => Promise<T>): Promise<T> {
  if (ctx.passwordQueue === undefined) return await work()
  const connection = whileConnected(request.raw.socket, ctx.passwordQueue)
  try {
    return await work(connection.signal)
  } finally {
    connection.release()
  }
}

export interface PasswordCheck {
  /** The account checked: `account` when given, else the one of the email, if any. */
  user: UserRow | null
  valid: boolean
  /** Whom the attempt was counted against, with the failure limit on: a right password forgets their failures. */
  counted?: Attempter
}

/** Every password route's check; with the failure limit on, counted per email and client first (429 past it), the verify within their share. */
export async function checkPassword (ctx: AccountsContext, request: FastifyRequest, email: string, password: string, account?: UserRow): Promise<PasswordCheck> {
  const counted = ctx.loginMaxFailures > 0 ? { email, address: clientAddress(request) } : undefined
  // The verify's place is taken before the attempt is counted: a counted attempt is never shed for a full queue.
  const slot = reserveVerify({ queue: ctx.passwordQueue, share: hashShare(ctx, request, email) })
  return await untilGone(ctx, request, async (signal) => {
    const attempt = counted ? await ctx.sessions.beginLogin(counted.email, counted.address) : undefined
    if (attempt && attempt.count > ctx.loginMaxFailures) throw tooManyFailures(attempt.retryAfter)
    const user = account ?? (attempt ? attempt.user : await ctx.users.findByEmail(email))
    const valid = await verifyPassword(user?.hashed_password ?? await dummyHash(), password, { reservation: slot, signal })
    return { user, valid, counted }
  }).finally(slot.cancel)
}

/** A route's `current_password`: wrong, 403 and counted as a failed login; right, the failures are forgotten, as at login. */
export async function checkCurrentPassword (ctx: AccountsContext, request: FastifyRequest, account: UserRow, password: string) {
  const { valid, counted } = await checkPassword(ctx, request, account.email, password, account)
  if (!valid) throw new WrongCurrentPassword()
  if (counted) await ctx.sessions.clearAttempts(counted)
}
