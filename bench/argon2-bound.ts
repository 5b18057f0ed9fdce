import { performance } from 'node:perf_hooks'
import { hashPassword, verifyPassword } from '../routes/accounts/passwords.js'

/**
 * The login scenario's ceiling: argon2id verifies per second with the app's own parameters
 * (routes/accounts/passwords.ts), pinned to the server's CPU like the server. Run by bench/run.js
 * as `node argon2-bound.js SECONDS`; prints `{ "perSecond": n, "msPerVerify": n }`.
 */
async function measure (seconds: number) {
  const password = 'bench password 1234'
  const hashed = await hashPassword(password)
  await verifyPassword(hashed, password)
  let done = 0
  const started = performance.now()
  const until = started + seconds * 1000
  // As many at once as the server's login route can have: libuv's pool (4 threads by default).
  const lane = async () => {
    while (performance.now() < until) {
      if (!await verifyPassword(hashed, password)) throw new Error('verify failed')
      done++
    }
  }
  const width = Number(process.env.UV_THREADPOOL_SIZE) || 4
  await Promise.all(Array.from({ length: width }, lane))
  const elapsed = (performance.now() - started) / 1000
  return { perSecond: done / elapsed, msPerVerify: (elapsed * 1000 * width) / done }
}

measure(Number(process.argv[2]) || 3).then((result) => {
  process.stdout.write(JSON.stringify(result) + '\n')
}, (err: unknown) => {
  console.error(err)
  process.exit(1)
})
