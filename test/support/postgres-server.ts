import { execFile } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import { freePort } from './server-process.js'

const run = promisify(execFile)
const script = new URL('../../scripts/pg-cluster.sh', import.meta.url).pathname

/** Whether this machine can run a private PostgreSQL (CI installs it; a laptop may not have it). */
export const hasPostgresServer = () => existsSync('/usr/lib/postgresql') &&
  readdirSync('/usr/lib/postgresql').some((version) => existsSync(`/usr/lib/postgresql/${version}/bin/postgres`))

/**
 * A PostgreSQL server of this test's own, which the test may stop and start again
 * (scripts/pg-cluster.sh); removed when the test ends.
 */
export async function privatePostgres (t: Test) {
  const dir = await mkdtemp('/tmp/plinth-test-pg-')
  const port = await freePort()
  const start = async () => (await run('bash', [script, 'start', dir, String(port)])).stdout.trim()
  const stop = async () => { await run('bash', [script, 'stop', dir]) }
  const url = await start()
  t.teardown(async () => {
    await stop()
    await rm(dir, { recursive: true, force: true })
  })
  return { url, start, stop }
}
