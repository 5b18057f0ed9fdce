import { performance } from 'node:perf_hooks'
import { hash, verify } from '@node-rs/argon2'
import { PARAMS } from '../plugins/auth/passwords.js'

/**
 * The login scenario's ceiling: argon2id verifies per second with the app's own parameters
 * (plugins/auth/passwords.ts), pinned to the server's CPU like the server. It calls the
 * library directly, 1, 2 and 4 at a time (4 is libuv's pool), and keeps the best, so the bound
 * does not depend on how the app schedules its verifies. Run by bench/run.js as
 * `node argon2-bound.js SECONDS` (per width); prints `{ "perSecond": n, "msPerVerify": n, "width": n }`.
 */
async function measure (hashed: string, password: string, width: number, seconds: number) {
  let done = 0
  const started = performance.now()
  const until = started + seconds * 1000
  const lane = async () => {
    while (performance.now() < until) {
      if (!await verify(hashed, password)) throw new Error('verify failed')
      done++
    }
  }
  await Promise.all(Array.from({ length: width }, lane))
  const elapsed = (performance.now() - started) / 1000
  return { perSecond: done / elapsed, msPerVerify: (elapsed * 1000 * width) / done, width }
}

async function best (seconds: number) {
  const password = 'bench password 1234'
  const hashed = await hash(password, PARAMS)
  await verify(hashed, password)
  const runs = []
  for (const width of [1, 2, 4]) runs.push(await measure(hashed, password, width, seconds))
  return runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a))
}

best(Number(process.argv[2]) || 3).then((result) => {
  process.stdout.write(JSON.stringify(result) + '\n')
}, (err: unknown) => {
  console.error(err)
  process.exit(1)
})
