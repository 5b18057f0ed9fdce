import { randomUUID } from 'node:crypto'
import type { EventEmitter } from 'node:events'
import { availableParallelism } from 'node:os'
import { hash, verify, type Algorithm } from '@node-rs/argon2'
import { createGate, type QueueBound, type Reservation, type Share } from '../../concurrency/gate.js'

// OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane); 2 is Argon2id (a const enum tsc cannot inline here).
export const PARAMS = { algorithm: 2 as Algorithm, memoryCost: 19456, timeCost: 2, parallelism: 1 }
const ENCODED = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/

// One hash at a time per CPU: parallel memory-hard work on a core thrashes its caches, and logins must not fill libuv's shared pool.
const inSlot = createGate(availableParallelism())

/** Where a hash or verify waits: within `queue`'s bound and the requester's `share` of it; dropped if `signal` aborts first. */
export interface HashOptions {
  queue?: QueueBound
  share?: Share
  signal?: AbortSignal
}

/** Hashes `password`; with a queue, refused when it is full or the requester holds its `share`, dropped if `signal` aborts first. */
export const hashPassword = (password: string, { queue, signal, share }: HashOptions = {}) =>
  inSlot(() => hash(password, PARAMS), queue, signal, share)

/** A place in the hash queue for a verify to come, taken before work that must not be undone (counting a login attempt). */
export const reserveVerify = ({ queue, share }: Omit<HashOptions, 'signal'> = {}): Reservation => inSlot.reserve(queue, share)

/** False for a wrong password or an unreadable hash, never throws; with a queue it may be refused when it is full. */
export async function verifyPassword (
  hashed: string, password: string, { queue, reservation, signal }: Omit<HashOptions, 'share'> & { reservation?: Reservation } = {}
): Promise<boolean> {
  const check = () => verify(hashed, password).catch(() => false)
  return reservation ? reservation.run(check, signal) : inSlot(check, queue, signal)
}

/** Aborted with the queue's refusal when the connection closes before `release`: work for a client that has gone is dropped. */
export function whileConnected (socket: EventEmitter, bound: QueueBound): { signal: AbortSignal, release: () => void } {
  const controller = new AbortController()
  const gone = () => { controller.abort(bound.refuse()) }
  socket.once('close', gone)
  return { signal: controller.signal, release: () => { socket.off('close', gone) } }
}

/** True when the hash was made with other parameters than today's: rehash it at the next login. */
export function needsRehash (hashed: string): boolean {
  const match = ENCODED.exec(hashed)
  return !match || Number(match[1]) !== PARAMS.memoryCost || Number(match[2]) !== PARAMS.timeCost ||
    Number(match[3]) !== PARAMS.parallelism
}

let dummy: Promise<string> | undefined

/** A hash nobody's password matches: an unknown email costs a login what a known one does (no enumeration). */
export const dummyHash = () => (dummy ??= hashPassword(randomUUID()))
