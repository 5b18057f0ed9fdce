import type { FastifyRequest } from 'fastify'
import { clientAddress } from './rate-limits.js'

/** What an open stream does when told: `check` runs its read guard again (ending it if refused), `end` ends it. */
export interface StreamHandlers {
  end (): void
  check (): void
}

/** One stream's place in the count, from its claim until its release. */
export interface StreamSlot {
  /** The stream is open: from now on a notice about its account runs its check. */
  attach (handlers: StreamHandlers): void
  release (): void
}

/** Why a stream was refused: the cap it would pass, and that cap's value. */
export interface StreamRefusal { cap: 'account' | 'address', max: number }

export interface StreamCaps {
  /** Streams one account may hold open at once on this process; 0: no cap. */
  maxPerAccount: number
  /** Streams one client address (an IPv6 client's /64) may hold open at once on this process; 0: no cap. */
  maxPerAddress: number
}

/** Where the notices stand when a request starts, so that its stream knows whether one came while its guard ran. */
export interface NoticeMark { notices: number, listening: boolean }

function count (counts: Map<string | number, number>, key: string | number, by: 1 | -1) {
  const next = (counts.get(key) ?? 0) + by
  if (next === 0) counts.delete(key)
  else counts.set(key, next)
}

/**
 * The open event streams of one process, counted per account and per client address, and told when
 * an account changed (a session ended, the account deactivated, demoted or deleted) so that its
 * streams check their guard at once instead of at their next heartbeat.
 */
export function createOpenStreams ({ maxPerAccount, maxPerAddress }: StreamCaps) {
  const byAccount = new Map<number, Set<StreamHandlers>>()
  const perAccount = new Map<string | number, number>()
  const perAddress = new Map<string | number, number>()
  const attached = new Set<StreamHandlers>()
  let notices = 0
  let listening = false

  return {
    /** A place for the request's stream, or the cap it would pass. */
    claim (request: FastifyRequest): StreamSlot | StreamRefusal {
      const account = request.account?.id
      const address = clientAddress(request)
      if (account !== undefined && maxPerAccount > 0 && (perAccount.get(account) ?? 0) >= maxPerAccount) return { cap: 'account', max: maxPerAccount }
      if (maxPerAddress > 0 && (perAddress.get(address) ?? 0) >= maxPerAddress) return { cap: 'address', max: maxPerAddress }
      if (account !== undefined) count(perAccount, account, 1)
      count(perAddress, address, 1)
      let handlers: StreamHandlers | undefined
      let released = false
      return {
        attach (given) {
          if (released) return given.end()
          handlers = given
          attached.add(given)
          if (account === undefined) return
          let set = byAccount.get(account)
          if (set === undefined) byAccount.set(account, set = new Set())
          set.add(given)
        },
        release () {
          if (released) return
          released = true
          if (account !== undefined) count(perAccount, account, -1)
          count(perAddress, address, -1)
          if (handlers === undefined) return
          attached.delete(handlers)
          const set = byAccount.get(account!)
          set?.delete(handlers)
          if (set?.size === 0) byAccount.delete(account!)
        }
      }
    },

    /** A notice about an account: its streams check their guard now. */
    accountChanged (account: number) {
      notices++
      for (const stream of byAccount.get(account) ?? []) stream.check()
    },

    /** Notices may have been missed (a listener reconnecting, or none that can listen): every stream of an account checks now. */
    checkAll () {
      notices++
      for (const set of byAccount.values()) for (const stream of set) stream.check()
    },

    /** Whether notices are heard: before, a stream checks once it is open, as one may have been missed. */
    listening (on: boolean) {
      listening = on
      notices++
    },

    mark: (): NoticeMark => ({ notices, listening }),

    /** Whether a notice may have come since `mark`, which the stream's guard (run after it) could not have seen. */
    missed: (mark: NoticeMark) => !mark.listening || mark.notices !== notices,

    /** Streams open now, for tests and metrics. */
    get size () { return attached.size }
  }
}

export type OpenStreams = ReturnType<typeof createOpenStreams>
