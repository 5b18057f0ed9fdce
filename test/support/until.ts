import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Polls `find` until it returns something other than undefined; throws `what` after `ms`. The
 * default allows for a server process's start: 15 to 60 s here, TypeScript compiled on 2 busy cores.
 */
export async function until<T> (what: string, find: () => T | undefined, ms = 120_000): Promise<T> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(20)) {
    const found = find()
    if (found !== undefined) return found
  }
  throw new Error(`gave up after ${ms} ms waiting for ${what}`)
}

/** `until` for a `find` that asks a server: each poll awaits the answer before the next. */
export async function untilAnswered<T> (what: string, find: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(100)) {
    const found = await find()
    if (found !== undefined) return found
  }
  throw new Error(`gave up after ${ms} ms waiting for ${what}`)
}
