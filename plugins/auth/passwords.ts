import { randomUUID } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { hash, verify, type Algorithm } from '@node-rs/argon2'
import { createGate } from '../../db/gate.js'

// OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane): about 8 ms per hash on this machine.
// Algorithm is a const enum the compiler cannot inline here; 2 is Argon2id.
export const PARAMS = { algorithm: 2 as Algorithm, memoryCost: 19456, timeCost: 2, parallelism: 1 }
const ENCODED = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/

/**
 * At most one hash or verify per CPU this process may run on; the rest wait in line. argon2 is
 * built to be memory-hard: on one core, 4 verifies at once (libuv's pool) did 73 a second with
 * 76 MiB in flight, one at a time 112 with 19 MiB. A line of logins also no longer fills libuv's
 * pool, which file and DNS work share.
 */
const inSlot = createGate(availableParallelism())

export const hashPassword = (password: string) => inSlot(() => hash(password, PARAMS))

/** False for a wrong password and for a hash that cannot be read: never throws on bad input. */
export async function verifyPassword (hashed: string, password: string): Promise<boolean> {
  try {
    return await inSlot(() => verify(hashed, password))
  } catch {
    return false
  }
}

/** True when the hash was made with other parameters than today's: rehash it at the next login. */
export function needsRehash (hashed: string): boolean {
  const match = ENCODED.exec(hashed)
  return !match || Number(match[1]) !== PARAMS.memoryCost || Number(match[2]) !== PARAMS.timeCost ||
    Number(match[3]) !== PARAMS.parallelism
}

let dummy: Promise<string> | undefined

/**
 * A hash of a password nobody knows. Checking an unknown email against it costs what checking a
 * real account costs, so response times do not reveal which emails are registered.
 */
export const dummyHash = () => (dummy ??= hashPassword(randomUUID()))
